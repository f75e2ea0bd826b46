import django.core.validators
import django.db.models.deletion
import django.utils.timezone
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("replication", "0034_approval_plan_at_request"),
    ]

    operations = [
        migrations.CreateModel(
            name="DrillSchedule",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                (
                    "every_hours",
                    models.PositiveIntegerField(
                        default=24,
                        validators=[
                            django.core.validators.MinValueValidator(1),
                            django.core.validators.MaxValueValidator(8760),
                        ],
                    ),
                ),
                ("enabled", models.BooleanField(default=False)),
                ("next_due", models.DateTimeField(blank=True, null=True)),
                (
                    "link",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="drill_schedule",
                        to="replication.clusterlink",
                    ),
                ),
            ],
        ),
        migrations.CreateModel(
            name="DrillRun",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                (
                    "outcome",
                    models.CharField(
                        choices=[
                            ("RUNNING", "Running"),
                            ("PASSED", "Passed"),
                            ("FAILED", "Failed"),
                            ("REFUSED", "Refused"),
                        ],
                        default="RUNNING",
                        max_length=10,
                    ),
                ),
                ("started_by", models.CharField(max_length=150)),
                (
                    "canary",
                    models.CharField(
                        help_text="The drill's own topic on the source.", max_length=249
                    ),
                ),
                ("way_back", models.CharField(blank=True, max_length=10)),
                ("steps", models.JSONField(blank=True, default=list)),
                ("failover_seconds", models.FloatField(blank=True, null=True)),
                ("failback_seconds", models.FloatField(blank=True, null=True)),
                (
                    "words",
                    models.TextField(
                        blank=True, help_text="What stopped it, or a refusal's reason."
                    ),
                ),
                (
                    "cleanup",
                    models.TextField(blank=True, help_text="What cleaning up after it left."),
                ),
                ("started_at", models.DateTimeField(default=django.utils.timezone.now)),
                ("finished_at", models.DateTimeField(blank=True, null=True)),
                (
                    "link",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="drills",
                        to="replication.clusterlink",
                    ),
                ),
            ],
            options={
                "ordering": ["-started_at", "-id"],
                "constraints": [
                    models.UniqueConstraint(
                        condition=models.Q(("outcome", "RUNNING")),
                        fields=("link",),
                        name="one_running_drill_per_link",
                    )
                ],
            },
        ),
    ]
