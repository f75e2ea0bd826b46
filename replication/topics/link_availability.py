"""A link's state changes made by the availability check (the syncers' look at the source,
`syncers.sync_link`): a source that failed too many checks makes the link UNAVAILABLE and its
mirrors SOURCE_UNAVAILABLE, one that answers again makes them run as before; and the link error
code that names why a check failed, as Cluster Linking's do.
"""

from __future__ import annotations

from replication.models import ClusterLink, MirrorTopic
from replication.states import link_states
from replication.states.mirror_states import move_all
from replication.topics.links import restore_running

State = ClusterLink.State

_LINK_ERRORS = {
    "_AUTHENTICATION": "AUTHENTICATION_ERROR",
    "_RESOLVE": "UNRESOLVABLE_BOOTSTRAP_ERROR",
    "_TRANSPORT": "BOOTSTRAP_TCP_CONNECTION_FAILED_ERROR",
    "_ALL_BROKERS_DOWN": "BOOTSTRAP_TCP_CONNECTION_FAILED_ERROR",
    "_TIMED_OUT": "TIMEOUT_ERROR",
}


def link_error_code(exc: Exception) -> str:
    from confluent_kafka import KafkaError

    code = getattr(exc, "code", None)
    for name, link_error in _LINK_ERRORS.items():
        if code == getattr(KafkaError, name):
            return link_error
    return "UNKNOWN"


def mark_unavailable(link: ClusterLink, error_code: str, message: str) -> bool:
    """The source failed too many checks: the link is UNAVAILABLE, its mirrors
    SOURCE_UNAVAILABLE. Only an ACTIVE link changes; returns whether it did."""
    return link_states.system_change(
        link,
        "source-lost",
        State.UNAVAILABLE,
        by="availability check",
        action="link.unavailable",
        message=message,
        failed=True,
        then=lambda found: move_all(
            found.mirrors.all(), "source-lost", MirrorTopic.State.SOURCE_UNAVAILABLE
        ),
        error_code=error_code,
        error_message=message,
    )


def mark_available(link: ClusterLink) -> bool:
    """The source answers again: the link is ACTIVE and its mirrors run as before."""
    return link_states.system_change(
        link,
        "source-back",
        State.ACTIVE,
        by="availability check",
        action="link.available",
        then=lambda found: restore_running(found, "source-back"),
        error_code="NO_ERROR",
        error_message="",
    )
