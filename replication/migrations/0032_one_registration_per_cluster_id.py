from django.db import migrations, models


def refuse_duplicates(apps, schema_editor):
    """A database holding one cluster under two names cannot take the constraint: say which,
    so an admin deletes one registration (its links first) and migrates again."""
    KafkaCluster = apps.get_model("replication", "KafkaCluster")
    names: dict[str, list[str]] = {}
    for name, cluster_id in KafkaCluster.objects.exclude(cluster_id="").values_list(
        "name", "cluster_id"
    ):
        names.setdefault(cluster_id, []).append(name)
    twice = {cid: found for cid, found in names.items() if len(found) > 1}
    if twice:
        said = "; ".join(f"{cid}: {', '.join(sorted(found))}" for cid, found in twice.items())
        raise RuntimeError(
            f"These clusters are registered under more than one name ({said}). Keep one "
            "registration of each (delete the others and their links in the console), then "
            "run the migration again."
        )


class Migration(migrations.Migration):
    dependencies = [
        ("replication", "0031_schema_subject_compatibility"),
    ]

    operations = [
        migrations.RunPython(refuse_duplicates, migrations.RunPython.noop),
        migrations.AddConstraint(
            model_name="kafkacluster",
            constraint=models.UniqueConstraint(
                condition=models.Q(("cluster_id", ""), _negated=True),
                fields=("cluster_id",),
                name="one_registration_per_cluster_id",
            ),
        ),
    ]
