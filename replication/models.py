from __future__ import annotations

import uuid
from typing import Any, TypedDict

from django.conf import settings
from django.core.validators import MaxValueValidator, MinValueValidator, RegexValidator
from django.db import models
from django.utils import timezone

from infra.client_config import librdkafka_config, principal
from infra.schema_registry import SchemaRegistry
from spark_jobs import control

from . import crypto, link_configs

NAME_VALIDATOR = RegexValidator(
    r"\A(?!\.{1,2}\Z)[a-zA-Z0-9._-]{1,200}\Z",
    "Use 1-200 letters, digits, '.', '_' or '-' (and not '.' or '..').",
)


class KafkaCluster(models.Model):
    """A Kafka cluster the console talks to, with the client config used to reach it.

    Secret values of the client config are kept in `secret_config`, each encrypted on its own
    (so their names can be listed without the key) and never rendered back; `client_config`
    holds only the non-secret keys.
    """

    name = models.CharField(max_length=200, unique=True, validators=[NAME_VALIDATOR])
    bootstrap_servers = models.CharField(max_length=1000)
    client_config = models.JSONField(default=dict, blank=True)
    secret_config = models.JSONField(default=dict, blank=True, help_text="key -> Fernet token")
    # The principal a link whose source is this cluster connects as (its client config, without
    # bootstrap.servers, secrets apart as above): one with only what copying needs, never the
    # console's own (often a super-user, which Kafka lets past every ACL).
    link_config = models.JSONField(default=dict, blank=True)
    link_secret_config = models.JSONField(default=dict, blank=True)
    cluster_id = models.CharField(
        max_length=64, blank=True, help_text="The Kafka cluster id found when it was registered."
    )
    # The cluster's schema registry (Confluent's REST API), if it has one: where the schemas
    # of its records' ids are. The password is a Fernet token, used at this URL only.
    schema_registry_url = models.CharField(max_length=1000, blank=True)
    schema_registry_username = models.CharField(max_length=200, blank=True)
    schema_registry_password = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]
        constraints = [
            # One registration a cluster: two names for one cluster id would let a path by id
            # resolve to either, and a link's half land on the wrong registration.
            models.UniqueConstraint(
                fields=["cluster_id"],
                condition=~models.Q(cluster_id=""),
                name="one_registration_per_cluster_id",
            )
        ]

    def __str__(self) -> str:
        return self.name

    def set_client_config(self, config: dict[str, str]) -> None:
        """Store `config` (without bootstrap.servers), encrypting its sensitive values."""
        self.client_config, self.secret_config = crypto.split_secrets(config)

    def connection_config(self) -> dict[str, str]:
        """The full client config to connect with, secrets decrypted."""
        return {
            "bootstrap.servers": self.bootstrap_servers,
            **crypto.join_secrets(self.client_config, self.secret_config),
        }

    def display_config(self) -> list[tuple[str, str]]:
        """The client config as shown to people: sensitive values masked."""
        return sorted(crypto.masked(self.client_config, self.secret_config).items())

    def set_link_config(self, config: dict[str, str]) -> None:
        """Store the links' principal (without bootstrap.servers), encrypting its secrets."""
        self.link_config, self.link_secret_config = crypto.split_secrets(config)

    def link_connection_config(self) -> dict[str, str]:
        """The links' principal at the registered address, secrets decrypted."""
        return {
            "bootstrap.servers": self.bootstrap_servers,
            **crypto.join_secrets(self.link_config, self.link_secret_config),
        }

    def schema_registry(self, context: str = "") -> SchemaRegistry | None:
        """A client of the cluster's schema registry at its registered URL (in a schema
        `context` of it, if given), or None."""
        spec = self.schema_registry_spec(context)
        if spec is None:
            return None
        # The syncers share a worker: a registry gone quiet must not hold it long.
        return SchemaRegistry(spec["url"], spec["username"], spec["password"], timeout=5)

    def schema_registry_spec(self, context: str = "") -> control.RegistrySpec | None:
        """Where the cluster's schema registry is and its credentials (decrypted), or None.
        A context is a prefix of the URL's paths, as Confluent's clients address one."""
        if not self.schema_registry_url:
            return None
        password = self.schema_registry_password
        url = self.schema_registry_url.rstrip("/")
        return {
            "url": f"{url}/contexts/.{context}" if context else url,
            "username": self.schema_registry_username or None,
            "password": crypto.decrypt(password) if password else None,
        }

    @property
    def link_principal(self) -> str:
        """Who links from this cluster connect as ("" for none registered)."""
        if not (self.link_config or self.link_secret_config):
            return ""
        return principal(self.link_connection_config())


class AuditEventQuerySet(models.QuerySet):
    """Audit events are only ever added: bulk updates and deletes are refused too."""

    def update(self, **kwargs):
        raise ValueError("Audit events are append-only.")

    def delete(self):
        raise ValueError("Audit events are append-only.")


class AuditEvent(models.Model):
    """An append-only record of one mutating action.

    `objects` refuses update() and delete(). Django's own bookkeeping goes through the plain
    base manager: deleting a user sets `actor` to NULL with an UPDATE through it (actor_name
    keeps who it was).
    """

    class Result(models.TextChoices):
        OK = "ok"
        REFUSED = "refused"
        FAILED = "failed"

    at = models.DateTimeField(auto_now_add=True, db_index=True)
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    actor_name = models.CharField(max_length=150, blank=True)
    address = models.GenericIPAddressField(null=True, blank=True)
    user_agent = models.CharField(max_length=400, blank=True)
    action = models.CharField(max_length=100)
    target = models.CharField(max_length=400, blank=True)
    before = models.JSONField(null=True, blank=True)
    after = models.JSONField(null=True, blank=True)
    result = models.CharField(max_length=10, choices=Result.choices)
    message = models.TextField(blank=True)
    # The mirror topics it concerns, one per line (a request's, an approval's, a mirror's own),
    # so the trail is searched by topic whatever the event's target.
    topics = models.TextField(blank=True)
    # An admin acting at once in a disaster, without approval.
    break_glass = models.BooleanField(default=False, db_index=True)

    objects = AuditEventQuerySet.as_manager()
    plain = models.Manager()  # noqa: DJ012 (a manager; ruff only knows `objects` as one)

    class Meta:
        ordering = ["-at", "-id"]
        base_manager_name = "plain"
        indexes = [
            # The audit page pages newest first, optionally filtered by action or result.
            models.Index(fields=["-at", "-id"], name="audit_newest_first"),
            models.Index(fields=["action", "-at", "-id"], name="audit_action_newest"),
            models.Index(fields=["result", "-at", "-id"], name="audit_result_newest"),
        ]

    def __str__(self) -> str:
        return f"{self.at:%Y-%m-%d %H:%M:%S} {self.actor_name or '-'} {self.action} {self.target}"

    def save(self, *args, **kwargs):
        if self.pk is not None:
            raise ValueError("Audit events are append-only.")
        super().save(*args, **kwargs)

    def delete(self, *args, **kwargs):
        raise ValueError("Audit events are append-only.")


class ClusterLink(models.Model):
    """A named link that mirrors topics from a source cluster into `destination`.

    `configs` holds the link configs set explicitly (not defaults); secret values live encrypted
    in `secret_configs`, one Fernet token per key, exactly like a cluster's client config.
    """

    class State(models.TextChoices):
        ACTIVE = "ACTIVE"
        PAUSED = "PAUSED"
        UNAVAILABLE = "UNAVAILABLE"
        FAILED = "FAILED"

    name = models.CharField(max_length=200, validators=[NAME_VALIDATOR])
    link_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    destination = models.ForeignKey(KafkaCluster, on_delete=models.PROTECT, related_name="links")
    source_cluster_id = models.CharField(max_length=64)
    configs = models.JSONField(default=dict, blank=True)
    secret_configs = models.JSONField(default=dict, blank=True, help_text="key -> Fernet token")
    state = models.CharField(max_length=20, choices=State.choices, default=State.ACTIVE)
    state_time = models.DateTimeField(default=timezone.now)
    error_code = models.CharField(max_length=60, default="NO_ERROR")
    error_message = models.TextField(blank=True)
    # Bookkeeping of the syncers: when each last ran, and the availability probe's failure run.
    availability_failures = models.PositiveIntegerField(default=0)
    availability_checked_at = models.DateTimeField(null=True, blank=True)
    metadata_refreshed_at = models.DateTimeField(null=True, blank=True)
    configs_synced_at = models.DateTimeField(null=True, blank=True)
    offsets_synced_at = models.DateTimeField(null=True, blank=True)
    acls_synced_at = models.DateTimeField(null=True, blank=True)
    schemas_synced_at = models.DateTimeField(null=True, blank=True)
    # What each syncer that could not do its work says about it, to be shown on the link:
    # {"consumer offsets" | "ACLs" | "auto-create" | "schemas": message}; a syncer's entry goes
    # when it works.
    sync_problems = models.JSONField(default=dict, blank=True)
    # Source topics whose mirrors a user deleted: not mirrored again automatically unless a
    # LITERAL INCLUDE names them (DESIGN: auto-create), or a user creates the mirror by hand.
    declined_topics = models.JSONField(default=list, blank=True)
    # The approval policy for promote, failover and deleting the link (see approvals.py).
    approvals_required = models.PositiveSmallIntegerField(
        default=1, validators=[MinValueValidator(0), MaxValueValidator(3)]
    )
    admin_may_override = models.BooleanField(
        default=True, help_text="An admin may act without approval (recorded as an override)."
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["destination__name", "name"]
        constraints = [
            models.UniqueConstraint(
                fields=["destination", "name"], name="link_name_per_destination"
            )
        ]

    def __str__(self) -> str:
        return self.name

    def set_configs(self, configs: dict[str, str]) -> None:
        """Store the explicitly set configs, encrypting their sensitive values."""
        self.configs, self.secret_configs = crypto.split_secrets(configs)

    def all_configs(self) -> dict[str, str]:
        """The explicitly set configs, secrets decrypted: for clients, never for display."""
        return crypto.join_secrets(self.configs, self.secret_configs)

    def config(self, name: str) -> str | None:
        """The effective value of a non-secret config: as set, else its default."""
        return link_configs.effective(self.configs, name)

    def int_config(self, name: str) -> int:
        value = self.config(name)
        if value is None:
            raise ValueError(f"link config {name} has no value")
        return int(value)

    def source_client_config(self) -> dict[str, str]:
        """librdkafka settings for the link's connection to its source."""
        return librdkafka_config(self.all_configs())

    @property
    def source_principal(self) -> str:
        """Who the link connects to its source as (a user name is no secret)."""
        try:
            return principal(self.all_configs())
        except (RuntimeError, ValueError):  # secrets that no longer decrypt, or a bad JAAS line
            return "unknown"

    @property
    def prefix(self) -> str:
        return self.configs.get("cluster.link.prefix", "")


# --- the shapes of MirrorTopic's JSON fields ----------------------------------------------------

PartitionValues = dict[str, int]  # partition (a JSON key: text) -> an offset or a count
RecordsLost = dict[str, list[int]]  # partition -> [first, end) in source offsets


class PendingStop(TypedDict, total=False):
    """A cutover under way, while its steps run: what the next one needs. Every kind has
    `kind`, `actor`, `note`, `requested_at`. A promote or failover (promote.py) and a reverse
    (reverse.py) add `prior_state`, and `generation` once the mirror left its link's mirror set;
    a reverse, `fence`. A truncate-and-restore (restore.py): `point`, `quarantine`,
    `failed_over`, then what its set-up step found and its copy back did."""

    kind: str
    actor: str
    note: str
    requested_at: str  # ISO 8601
    prior_state: str  # where it goes back to if the stop cannot finish
    generation: int  # the link's mirror set without it
    fence: PartitionValues  # a reverse: where each source partition was fenced
    point: PartitionValues  # a restore: the offset each partition is truncated to
    quarantine: str  # the topic the divergent records are set aside in
    failed_over: int  # the promoted copy's mirror (pk)
    quarantined: PartitionValues  # records set aside
    heads: PartitionValues
    restored_end: PartitionValues
    configs: dict[str, str]  # the topic's, to make it anew with
    bytes_within: int
    to_copy: PartitionValues


class StopReport(TypedDict, total=False):
    """How a STOPPED (or restored) mirror stopped: who asked, when, why, what was left."""

    kind: str
    actor: str
    note: str
    requested_at: str | None
    lag: PartitionValues  # records left behind
    consumer_offsets: str  # a promote's last offset sync
    reversed: str  # a reverse: what mirrors it now
    # A truncate-and-restore (restore.py):
    offset_truncated_to: PartitionValues
    messages_truncated: PartitionValues
    quarantine: str
    records_kept: PartitionValues
    bytes_copied_within_cluster: int
    records_to_copy: PartitionValues
    quarantine_deleted_at: str  # ISO 8601
    quarantine_deleted_by: str


# A partition the background verification compared: its records from source offset "from" to
# "source" (identical, or in `differences`); the next compared are at "source" and "mirror".
VerifiedPartition = TypedDict("VerifiedPartition", {"from": int, "source": int, "mirror": int})


class VerificationState(TypedDict, total=False):
    """How far the background verification (verification.py) got ({} before its first round)."""

    at: float  # time.time() of its last round
    partitions: dict[str, VerifiedPartition]


# A difference found, as `verification.Difference.as_json` writes it (and `of_json` reads):
# [partition, kind, source offset, mirror offset, fields, count].
DifferenceJson = list[Any]


class MirrorTopic(models.Model):
    """A read-only topic on the link's destination that copies one source topic."""

    class State(models.TextChoices):
        PENDING_MIRROR = "PENDING_MIRROR"
        ACTIVE = "ACTIVE"
        PAUSED = "PAUSED"
        LINK_PAUSED = "LINK_PAUSED"
        # a reverse: its source is fenced; it copies up to the fence, then stops and swaps
        PENDING_SYNCHRONIZE = "PENDING_SYNCHRONIZE"
        PENDING_STOPPED = "PENDING_STOPPED"
        # truncate-and-restore: its divergent records and the prefix it keeps are being copied
        # aside on its cluster, then the topic is made anew with the prefix (restore.py)
        PENDING_SETUP_FOR_RESTORE = "PENDING_SETUP_FOR_RESTORE"
        PENDING_RESTORE = "PENDING_RESTORE"
        STOPPED = "STOPPED"
        FAILED = "FAILED"
        SOURCE_UNAVAILABLE = "SOURCE_UNAVAILABLE"

    class Error(models.TextChoices):
        NO_ERROR = "NO_ERROR"
        SOURCE_TOPIC_MAY_BE_DELETED = "SOURCE_TOPIC_MAY_BE_DELETED"
        SOURCE_TOPIC_ID_CHANGED = "SOURCE_TOPIC_ID_CHANGED"
        SOURCE_PARTITIONS_DECREASED = "SOURCE_PARTITIONS_DECREASED"

    link = models.ForeignKey(ClusterLink, on_delete=models.CASCADE, related_name="mirrors")
    # The link's destination, kept here so a topic name is unique per destination cluster.
    destination = models.ForeignKey(KafkaCluster, on_delete=models.PROTECT, related_name="+")
    source_topic = models.CharField(max_length=249)
    mirror_topic = models.CharField(max_length=249)
    source_topic_id = models.CharField(max_length=64, blank=True)
    num_partitions = models.PositiveIntegerField(default=0)
    replication_factor = models.PositiveIntegerField(default=0)
    state = models.CharField(max_length=30, choices=State.choices, default=State.PENDING_MIRROR)
    state_time = models.DateTimeField(default=timezone.now)
    mirror_error = models.CharField(max_length=60, choices=Error.choices, default=Error.NO_ERROR)
    error_message = models.TextField(blank=True)
    paused = models.BooleanField(default=False, help_text="Paused by a user (survives link pause).")
    # Topic configs set on the mirror, beside those synced from its source.
    config_overrides: models.JSONField[dict[str, str], dict[str, str]] = models.JSONField(
        default=dict, blank=True
    )
    stop_offsets: models.JSONField[PartitionValues | None, PartitionValues | None] = (
        models.JSONField(
            null=True, blank=True, help_text="partition -> destination log end offset when stopped"
        )
    )
    # While a cutover's steps run (PENDING_STOPPED, PENDING_SYNCHRONIZE, a restore's states).
    pending_stop: models.JSONField[PendingStop | None, PendingStop | None] = models.JSONField(
        null=True, blank=True
    )
    # Once STOPPED (or restored): how it stopped.
    stop_report: models.JSONField[StopReport | None, StopReport | None] = models.JSONField(
        null=True, blank=True
    )
    # Why the last promote or failover could not finish; cleared by the next one.
    action_error = models.TextField(blank=True)
    read_only_enforced = models.BooleanField(default=True)
    source_missing_since = models.DateTimeField(null=True, blank=True)
    # Source records deleted (by retention) before the mirror copied them, found by the lag
    # readings: {partition: [first, end)} in source offsets. Kept: the mirror is no longer the
    # source's exact copy, whatever happens next.
    records_lost: models.JSONField[RecordsLost, RecordsLost] = models.JSONField(
        default=dict, blank=True
    )
    # The background verification (verification.py).
    verification: models.JSONField[VerificationState, VerificationState] = models.JSONField(
        default=dict, blank=True
    )
    # What any verification found differing from the source (folded), and how many records
    # that is; kept like records_lost.
    differences: models.JSONField[list[DifferenceJson], list[DifferenceJson]] = models.JSONField(
        default=list, blank=True
    )
    differing_records = models.BigIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)
    # Not a column: what the overview says is wrong with it (set by dashboard.py).
    trouble: str

    class Meta:
        ordering = ["mirror_topic"]
        constraints = [
            models.UniqueConstraint(
                fields=["destination", "mirror_topic"], name="mirror_topic_per_destination"
            )
        ]

    def __str__(self) -> str:
        return self.mirror_topic

    def pending(self) -> PendingStop:
        """What the cutover under way needs next (a mirror in one of its states has it)."""
        if self.pending_stop is None:
            raise ValueError(f"Mirror topic {self.mirror_topic} has no cutover under way.")
        return self.pending_stop


class MergeFlow(models.Model):
    """A source topic copied over `link` into an ordinary, writable topic of the destination,
    of any name: the same (active-active), another (a rename), or one that other flows feed
    too (an aggregate). Offsets are not kept; each record carries its origin instead
    (spark_jobs/merging.py)."""

    class State(models.TextChoices):
        ACTIVE = "ACTIVE"
        PAUSED = "PAUSED"

    class Mapping(models.TextChoices):
        ONE_TO_ONE = "one-to-one"  # source partition p into destination partition p
        BY_KEY = "by-key"  # as Java's default partitioner would place the record's key

    flow_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    name = models.CharField(max_length=200, validators=[NAME_VALIDATOR])
    link = models.ForeignKey(ClusterLink, on_delete=models.CASCADE, related_name="flows")
    # The link's destination, kept here so a flow's name is unique per destination cluster.
    destination = models.ForeignKey(KafkaCluster, on_delete=models.PROTECT, related_name="+")
    source_topic = models.CharField(max_length=249)
    destination_topic = models.CharField(max_length=249)
    mapping = models.CharField(max_length=12, choices=Mapping.choices)
    state = models.CharField(max_length=12, choices=State.choices, default=State.ACTIVE)
    state_time = models.DateTimeField(default=timezone.now)
    created_topic = models.BooleanField(default=False, help_text="Isthmus made the topic.")
    created_at = models.DateTimeField(auto_now_add=True)
    # Copied in this many parts, each by a slot (spark_jobs/merging.py, PARTS); never changes.
    parts = models.PositiveSmallIntegerField(default=1)
    # The engine saw records of others between the flow's own in the destination topic
    # (flow_offsets.py: a place in the source then stands for no place there). Never unset.
    others_write = models.BooleanField(default=False)
    # The newest checkpoint kept per source partition: {"partition": [next, dest]}.
    checkpointed = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["name"]
        constraints = [
            models.UniqueConstraint(fields=["destination", "name"], name="flow_name_per_cluster"),
            models.UniqueConstraint(
                fields=["link", "source_topic", "destination_topic"], name="flow_once_per_pair"
            ),
        ]

    def __str__(self) -> str:
        return self.name


class FlowCheckpoint(models.Model):
    """A one-to-one flow's committed progress in one source partition, as the engine reported
    it: records of the source below `source_next` lie below `destination_next` in the same
    destination partition, those from it on at or above. Consumer offset sync translates a
    group's place through them (flow_offsets.py); sparse, thinned with age."""

    flow = models.ForeignKey(MergeFlow, on_delete=models.CASCADE, related_name="checkpoints")
    partition = models.IntegerField()
    source_next = models.BigIntegerField()
    destination_next = models.BigIntegerField()
    taken_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["flow", "partition", "source_next"]
        indexes = [models.Index(fields=["flow", "partition", "source_next"])]

    def __str__(self) -> str:
        return f"{self.flow_id}[{self.partition}] {self.source_next}->{self.destination_next}"


class Verification(models.Model):
    """A verification asked for (`kafka-mirrors --verify`, the API, the mirror page): every
    record of a range of source offsets compared with the mirror's, with its progress."""

    class State(models.TextChoices):
        RUNNING = "RUNNING"
        IDENTICAL = "IDENTICAL"
        DIFFERENT = "DIFFERENT"
        FAILED = "FAILED"

    mirror = models.ForeignKey(MirrorTopic, on_delete=models.CASCADE, related_name="verifications")
    requested_by = models.CharField(max_length=150)
    state = models.CharField(max_length=12, choices=State.choices, default=State.RUNNING)
    # {partition: [first, end)} in source offsets, as asked (None: from the log start, to the
    # end the mirror has copied when it starts).
    from_offset = models.BigIntegerField(null=True, blank=True)
    to_offset = models.BigIntegerField(null=True, blank=True)
    # Once started: {partition: {"first", "end", "at"}}: the source range compared and how far.
    ranges = models.JSONField(default=dict, blank=True)
    total = models.BigIntegerField(default=0)  # source offsets in the ranges
    checked = models.BigIntegerField(default=0)  # source offsets done
    identical = models.BigIntegerField(default=0)  # records found identical
    differences = models.JSONField(default=list, blank=True)
    differing_records = models.BigIntegerField(default=0)
    notes = models.JSONField(default=list, blank=True)  # what could not be compared, and why
    error = models.TextField(blank=True)
    started_at = models.DateTimeField(default=timezone.now)
    beat_at = models.DateTimeField(default=timezone.now)  # the worker running it is alive
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-started_at", "-id"]

    def __str__(self) -> str:
        return f"verification {self.pk} of {self.mirror}"


class GroupOffsetSync(models.Model):
    """How a source consumer group's offsets stand on the destination, by the offset syncer."""

    class State(models.TextChoices):
        IN_STEP = "IN_STEP"  # the destination holds the source's offsets, translated
        BEHIND_MIRROR = "BEHIND_MIRROR"  # the group is past what the mirror has copied so far
        BEHIND_FLOW = "BEHIND_FLOW"  # past a merge flow's newest checkpoint
        SKIPPED = "SKIPPED"  # not written: `reason` says why (active members, say)
        FAILED = "FAILED"

    link = models.ForeignKey(ClusterLink, on_delete=models.CASCADE, related_name="group_syncs")
    group = models.CharField(max_length=255)
    destination_group = models.CharField(max_length=255)
    state = models.CharField(max_length=20, choices=State.choices)
    reason = models.TextField(blank=True)
    # What the destination holds for the group, as last written or read:
    # {"mirror topic/partition": offset}.
    offsets = models.JSONField(default=dict, blank=True)
    # On merge flows' topics: how many records the group may read again there, at most, after
    # it moves (flow_offsets.py): {"destination topic/partition": records}.
    may_repeat = models.JSONField(default=dict, blank=True)
    written_at = models.DateTimeField(null=True, blank=True)
    changed_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["group"]
        constraints = [
            models.UniqueConstraint(fields=["link", "group"], name="one_sync_per_link_group")
        ]

    def __str__(self) -> str:
        return f"{self.group} on link {self.link_id}: {self.state}"

    @property
    def topics(self) -> set[str]:
        """The mirror topics it has offsets on."""
        return {key.rsplit("/", 1)[0] for key in self.offsets}


class SchemaSubjectSync(models.Model):
    """How a schema subject stands on the destination's registry, by the schema syncer
    (schema_links.py): its versions under the source's ids, or what stopped it."""

    class State(models.TextChoices):
        IN_STEP = "IN_STEP"  # every version of the source's is there, same id and version
        CONFLICT = "CONFLICT"  # the destination holds another schema where one must go
        FAILED = "FAILED"  # a registry refused or did not answer: `message` says
        PROMOTED = "PROMOTED"  # its topic was promoted: writable there, no longer synced

    link = models.ForeignKey(ClusterLink, on_delete=models.CASCADE, related_name="schema_syncs")
    subject = models.CharField(max_length=255)
    state = models.CharField(max_length=20, choices=State.choices)
    versions = models.JSONField(default=list, blank=True)  # in step on both sides
    # The level its new versions are checked against on the source, given to it on the
    # destination ("" until a run reads it).
    compatibility = models.CharField(max_length=40, blank=True)
    message = models.TextField(blank=True)
    synced_at = models.DateTimeField(default=timezone.now)
    changed_at = models.DateTimeField(default=timezone.now)  # when the sync last changed it there

    class Meta:
        ordering = ["subject"]
        constraints = [
            models.UniqueConstraint(fields=["link", "subject"], name="one_sync_per_link_subject")
        ]

    def __str__(self) -> str:
        return f"{self.subject} on link {self.link_id}: {self.state}"


class ExternalIdentity(models.Model):
    """A user who signs in through the identity provider (single_sign_on.py): who the provider
    says they are. Such a user has no password here; their role follows the provider's groups
    at each sign-in."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        primary_key=True,
        related_name="external_identity",
    )
    issuer = models.CharField(max_length=400)
    subject = models.CharField(max_length=255)
    groups = models.JSONField(default=list, blank=True)  # as the provider last sent them
    signed_in_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["issuer", "subject"], name="one_user_per_identity")
        ]

    def __str__(self) -> str:
        return f"{self.subject} at {self.issuer}"


class OneTimePassword(models.Model):
    """A user whose password an admin handed them (made with the user, or reset): whoever signs
    in with it must choose their own before doing anything else."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        primary_key=True,
        related_name="one_time_password",
    )
    issued_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"one-time password of user {self.user_id}"


class ApiToken(models.Model):
    """A personal API token: the user's roles, for the JSON API and the CLI.

    Only a SHA-256 digest of the secret is kept; the secret is shown once, when made.
    """

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens"
    )
    name = models.CharField(max_length=100)
    # The first characters of the token, to tell tokens apart on the user's page.
    prefix = models.CharField(max_length=20)
    digest = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["user", "name"], name="one_token_name_per_user")
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"


class ApprovalRequest(models.Model):
    """A promote, failover or link deletion asked for by one person, to be approved by others
    before it runs (see approvals.py)."""

    class Action(models.TextChoices):
        PROMOTE = "promote"
        FAILOVER = "failover"
        DELETE_LINK = "delete-link"
        REVERSE_AND_START = "reverse-and-start-mirror"
        REVERSE_AND_PAUSE = "reverse-and-pause-mirror"
        TRUNCATE_AND_RESTORE = "truncate-and-restore"
        CREATE_FLOW = "create-flow"
        DELETE_FLOW = "delete-flow"
        PROMOTE_SUBJECTS = "promote-subjects"

    class State(models.TextChoices):
        PENDING = "PENDING"  # waiting for approvals
        APPROVED = "APPROVED"  # approved; running
        EXECUTED = "EXECUTED"
        FAILED = "FAILED"  # approved, but running it failed (see result)
        REJECTED = "REJECTED"
        WITHDRAWN = "WITHDRAWN"
        EXPIRED = "EXPIRED"
        # its target changed before it ran (decision_reason says by what)
        SUPERSEDED = "SUPERSEDED"

    link = models.ForeignKey(
        ClusterLink, null=True, on_delete=models.SET_NULL, related_name="approval_requests"
    )
    # Kept for the record after the link is gone (a link deletion, say).
    link_name = models.CharField(max_length=200)
    destination = models.ForeignKey(KafkaCluster, on_delete=models.PROTECT, related_name="+")
    action = models.CharField(max_length=30, choices=Action.choices)
    topics = models.JSONField(default=list, blank=True)
    # A link deletion that fails the link's mirrors over first.
    force = models.BooleanField(default=False)
    # A merge flow's request: {"flow": name} and, to create it, "source_topic",
    # "destination_topic" and "mapping" as asked (merge_flows.create_flow's arguments).
    params = models.JSONField(default=dict, blank=True)
    reason = models.TextField()
    requester = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    requester_name = models.CharField(max_length=150)
    approvals_required = models.PositiveSmallIntegerField()
    state = models.CharField(max_length=10, choices=State.choices, default=State.PENDING)
    state_time = models.DateTimeField(default=timezone.now)
    created_at = models.DateTimeField(default=timezone.now, db_index=True)
    expires_at = models.DateTimeField()
    # The dry run at request time (per topic: what would happen, the lag per partition).
    plan = models.JSONField(default=list, blank=True)
    # Per topic outcome once run; `progress` says what it is doing while it runs.
    result = models.JSONField(default=list, blank=True)
    progress = models.CharField(max_length=400, blank=True)
    decided_by = models.CharField(max_length=150, blank=True)
    decision_reason = models.TextField(blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"request {self.pk}: {self.get_action_display()} on link {self.link_name}"

    @property
    def is_open(self) -> bool:
        return self.state in (self.State.PENDING, self.State.APPROVED)

    @property
    def params_summary(self) -> str:
        """What a merge flow or schema subjects request acts on, in words ("" for the other
        actions)."""
        p = self.params
        if self.action == self.Action.CREATE_FLOW:
            into = f"{p['source_topic']} into {p['destination_topic']}"
            return f"merge flow {p['flow']}: {into}" + (f", {p['mapping']}" if p["mapping"] else "")
        if self.action == self.Action.DELETE_FLOW:
            return f"merge flow {p['flow']}"
        if self.action == self.Action.PROMOTE_SUBJECTS:
            named = ", ".join(p["subjects"][:5])
            more = len(p["subjects"]) - 5
            return f"schema subjects {named}" + (f" and {more} more" if more > 0 else "")
        return ""


class Notification(models.Model):
    """What a requester is told when their request is decided or has run (notifications.py):
    shown in the console, and sent by webhook and e-mail where those are configured."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="notifications"
    )
    request = models.ForeignKey(
        ApprovalRequest, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    event = models.CharField(max_length=40)  # request.approved, request.rejected, ...
    text = models.TextField()
    created_at = models.DateTimeField(default=timezone.now)
    read_at = models.DateTimeField(null=True, blank=True)
    # How it went out: {"webhook": "sent" | "failed: …", "email": …}; empty: console only.
    delivery = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["user", "read_at"])]

    def __str__(self) -> str:
        return self.text


class Approval(models.Model):
    """One approver's yes to a request."""

    request = models.ForeignKey(ApprovalRequest, on_delete=models.CASCADE, related_name="approvals")
    approver = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    approver_name = models.CharField(max_length=150)
    at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["at"]
        constraints = [
            models.UniqueConstraint(fields=["request", "approver"], name="one_approval_per_person")
        ]

    def __str__(self) -> str:
        return f"{self.approver_name} approved request {self.request_id}"


class ScenarioRun(models.Model):
    """One run of a scenario (`replication/scenarios/`): its steps' results, kept."""

    class Status(models.TextChoices):
        WAITING = "WAITING"  # for the user to run its next step (or the rest)
        RUNNING = "RUNNING"
        PASSED = "PASSED"
        FAILED = "FAILED"  # a step failed; until it ended (`finished_at`), it can be retried
        ENDED = "ENDED"  # ended by the user before its last step

    scenario = models.CharField(max_length=60)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.WAITING)
    actor_name = models.CharField(max_length=150)
    # The run's own names (topic, link), so it never touches a user's and can run again.
    names = models.JSONField(default=dict, blank=True)
    started_at = models.DateTimeField(default=timezone.now)
    finished_at = models.DateTimeField(null=True, blank=True)
    claimed_at = models.DateTimeField(null=True, blank=True)  # when it last went on
    cleanup = models.TextField(blank=True, help_text="What cleaning up after the run left.")
    # What steps keep for later ones (offsets read, records seen), so the next step can run
    # in another task.
    kept = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["-started_at", "-id"]

    def __str__(self) -> str:
        return f"{self.scenario} run {self.pk}: {self.status}"


class ScenarioStep(models.Model):
    """A step of a run: what it did, what it checked on the clusters and what it saw."""

    class Status(models.TextChoices):
        PENDING = "PENDING"
        RUNNING = "RUNNING"
        PASSED = "PASSED"
        FAILED = "FAILED"
        SKIPPED = "SKIPPED"  # not run: an earlier step failed, or the run was ended

    run = models.ForeignKey(ScenarioRun, on_delete=models.CASCADE, related_name="steps")
    index = models.PositiveSmallIntegerField()
    title = models.CharField(max_length=200)
    explanation = models.TextField(blank=True)
    cli = models.TextField(blank=True, help_text="The equivalent command line.")
    expected = models.TextField(blank=True)
    seen = models.TextField(blank=True)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    started_at = models.DateTimeField(null=True, blank=True)
    seconds = models.FloatField(null=True, blank=True)

    class Meta:
        ordering = ["run", "index"]
        constraints = [models.UniqueConstraint(fields=["run", "index"], name="one_step_per_index")]

    def __str__(self) -> str:
        return f"step {self.index + 1} of run {self.run_id}: {self.title}"
