"""The port a scenario stops and starts a cluster through (the disaster-recovery scenario's
outage). The domain says what it needs; the stack that runs the clusters provides it, named by
settings.ISTHMUS_CLUSTER_CONTROL (the embedded stack's, `devstack.control.EmbeddedClusters`, by
default), so the domain never imports the stack."""

from __future__ import annotations

from typing import Protocol

from django.conf import settings
from django.utils.module_loading import import_string


class ClusterControl(Protocol):
    def stop(self, name: str) -> None:
        """Stop the cluster registered as `name`; raise with words an operator understands."""

    def start(self, name: str) -> None:
        """Start it again and return once it is up."""


def cluster_control() -> ClusterControl:
    return import_string(settings.ISTHMUS_CLUSTER_CONTROL)()
