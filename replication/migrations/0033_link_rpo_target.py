import django.core.validators
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("replication", "0032_one_registration_per_cluster_id"),
    ]

    operations = [
        migrations.AddField(
            model_name="clusterlink",
            name="rpo_target_seconds",
            field=models.PositiveIntegerField(
                blank=True,
                null=True,
                validators=[
                    django.core.validators.MinValueValidator(1),
                    django.core.validators.MaxValueValidator(31536000),
                ],
            ),
        ),
        migrations.AddField(
            model_name="clusterlink",
            name="rpo_breached_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
    ]
