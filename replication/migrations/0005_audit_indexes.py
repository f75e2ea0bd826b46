# Audit events: indexes for the audit page (newest first, by action, by result), and a plain
# base manager so Django's own updates (SET_NULL when a user is deleted) bypass the
# append-only QuerySet of `AuditEvent.objects`.

import django.db.models.manager
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("replication", "0004_api_tokens"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AlterModelOptions(
            name="auditevent",
            options={"base_manager_name": "plain", "ordering": ["-at", "-id"]},
        ),
        migrations.AlterModelManagers(
            name="auditevent",
            managers=[
                ("objects", django.db.models.manager.Manager()),
                ("plain", django.db.models.manager.Manager()),
            ],
        ),
        migrations.AddIndex(
            model_name="auditevent",
            index=models.Index(fields=["-at", "-id"], name="audit_newest_first"),
        ),
        migrations.AddIndex(
            model_name="auditevent",
            index=models.Index(fields=["action", "-at", "-id"], name="audit_action_newest"),
        ),
        migrations.AddIndex(
            model_name="auditevent",
            index=models.Index(fields=["result", "-at", "-id"], name="audit_result_newest"),
        ),
    ]
