from django.apps import AppConfig


class ReplicationConfig(AppConfig):
    name = "replication"
    default_auto_field = "django.db.models.BigAutoField"
