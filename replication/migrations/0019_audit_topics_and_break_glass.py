from django.db import migrations, models


def fill_in(apps, schema_editor):
    """The events recorded before: the topics they name (a mirror target, a request's topics)
    and whether they broke glass (their note says so)."""
    event_model = apps.get_model("replication", "AuditEvent")
    changed = []
    for event in event_model.objects.all().iterator(chunk_size=2000):
        topics = []
        if event.target.startswith("mirror "):
            topics.append(event.target.split(" ")[1])
        for side in (event.before, event.after):
            if isinstance(side, dict) and isinstance(side.get("topics"), list):
                topics += [t for t in side["topics"] if isinstance(t, str)]
        event.topics = "\n".join(dict.fromkeys(topics))
        event.break_glass = event.message.startswith("BREAK GLASS: ")
        if event.topics or event.break_glass:
            changed.append(event)
    event_model.objects.bulk_update(changed, ["topics", "break_glass"], batch_size=2000)


class Migration(migrations.Migration):
    dependencies = [
        ("replication", "0018_notifications"),
    ]

    operations = [
        migrations.AddField(
            model_name="auditevent",
            name="break_glass",
            field=models.BooleanField(db_index=True, default=False),
        ),
        migrations.AddField(
            model_name="auditevent",
            name="topics",
            field=models.TextField(blank=True),
        ),
        migrations.RunPython(fill_in, migrations.RunPython.noop),
    ]
