from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("replication", "0033_link_rpo_target")]

    operations = [
        migrations.AddField(
            model_name="approvalrequest",
            name="plan_at_request",
            field=models.JSONField(blank=True, default=dict),
        ),
    ]
