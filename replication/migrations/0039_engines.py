from django.db import migrations, models

from replication.models.clusters import ENGINE_VALIDATOR


class Migration(migrations.Migration):
    dependencies = [
        ("replication", "0038_gateway_moves"),
    ]

    operations = [
        migrations.AddField(
            model_name="clusterlink",
            name="engine",
            field=models.CharField(
                blank=True, default="", max_length=40, validators=[ENGINE_VALIDATOR]
            ),
        ),
        migrations.AddField(
            model_name="kafkacluster",
            name="engine",
            field=models.CharField(
                blank=True, default="", max_length=40, validators=[ENGINE_VALIDATOR]
            ),
        ),
    ]
