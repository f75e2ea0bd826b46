"""The domain's Django models, one module per entity; imported from here."""

from replication.models.approvals import Approval, ApprovalRequest, Notification
from replication.models.audit import AuditEvent, AuditEventQuerySet
from replication.models.clusters import NAME_VALIDATOR, KafkaCluster
from replication.models.drills import (
    CANARY_PREFIX,
    DrillRun,
    DrillSchedule,
    DrillStep,
    MadeTopic,
    canary_topic,
    is_canary,
)
from replication.models.flows import FlowCheckpoint, MergeFlow
from replication.models.gateways import Gateway, GatewayMove
from replication.models.identity import ApiToken, ExternalIdentity, OneTimePassword
from replication.models.links import ClusterLink
from replication.models.mirrors import (
    DifferenceJson,
    MirrorTopic,
    PartitionValues,
    PendingStop,
    RecordsLost,
    StopReport,
    VerificationState,
    VerifiedPartition,
)
from replication.models.scenarios import ScenarioRun, ScenarioStep
from replication.models.syncs import GroupOffsetSync, SchemaSubjectSync
from replication.models.verification import Verification

__all__ = [
    "NAME_VALIDATOR",
    "KafkaCluster",
    "Gateway",
    "GatewayMove",
    "AuditEventQuerySet",
    "AuditEvent",
    "ClusterLink",
    "PartitionValues",
    "RecordsLost",
    "PendingStop",
    "StopReport",
    "VerifiedPartition",
    "VerificationState",
    "DifferenceJson",
    "MirrorTopic",
    "MergeFlow",
    "FlowCheckpoint",
    "Verification",
    "GroupOffsetSync",
    "SchemaSubjectSync",
    "ExternalIdentity",
    "OneTimePassword",
    "ApiToken",
    "ApprovalRequest",
    "Notification",
    "Approval",
    "ScenarioRun",
    "ScenarioStep",
    "CANARY_PREFIX",
    "DrillRun",
    "DrillSchedule",
    "DrillStep",
    "MadeTopic",
    "canary_topic",
    "is_canary",
]
