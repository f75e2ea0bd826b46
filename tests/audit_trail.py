"""The database refusing new audit events, as a full disk or a revoked grant would: a trigger,
on SQLite and on PostgreSQL alike."""

from __future__ import annotations

from django.db import connection

from replication.models import AuditEvent


def refuse_writes(message: str) -> None:
    """From now on, an insert into the audit trail fails with `message`."""
    table = AuditEvent._meta.db_table
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            cursor.execute(
                f"CREATE TRIGGER audit_down BEFORE INSERT ON {table} "
                f"BEGIN SELECT RAISE(ABORT, '{message}'); END"
            )
        elif connection.vendor == "postgresql":
            cursor.execute(
                "CREATE FUNCTION audit_down() RETURNS trigger LANGUAGE plpgsql AS "
                f"$$ BEGIN RAISE EXCEPTION '{message}'; END $$"
            )
            cursor.execute(
                f"CREATE TRIGGER audit_down BEFORE INSERT ON {table} "
                "FOR EACH ROW EXECUTE FUNCTION audit_down()"
            )
        else:
            raise NotImplementedError(f"no audit trigger for {connection.vendor}")


def take_writes() -> None:
    """The audit trail takes inserts again."""
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(f"DROP TRIGGER IF EXISTS audit_down ON {AuditEvent._meta.db_table}")
            cursor.execute("DROP FUNCTION IF EXISTS audit_down()")
        else:
            cursor.execute("DROP TRIGGER IF EXISTS audit_down")
