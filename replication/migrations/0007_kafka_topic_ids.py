"""Source topic ids in Kafka's own form (URL-safe base64), as Kafka's tools print them and as
the console now reads them: ids stored in librdkafka's form are converted, so no mirror sees
its source's id as changed."""

from django.db import migrations


def to_kafka_form(apps, schema_editor):
    MirrorTopic = apps.get_model("replication", "MirrorTopic")
    for mirror in MirrorTopic.objects.exclude(source_topic_id=""):
        converted = mirror.source_topic_id.replace("+", "-").replace("/", "_").rstrip("=")
        if converted != mirror.source_topic_id:
            MirrorTopic.objects.filter(pk=mirror.pk).update(source_topic_id=converted)


class Migration(migrations.Migration):
    dependencies = [("replication", "0006_promote_and_approvals")]

    operations = [migrations.RunPython(to_kafka_form, migrations.RunPython.noop)]
