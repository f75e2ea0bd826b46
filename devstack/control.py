"""The embedded stack's side of the scenarios' cluster port
(`replication.scenarios.clusters.ClusterControl`): stop and start one of its clusters."""

from __future__ import annotations

from django.conf import settings

from devstack.stack import Stack


class EmbeddedClusters:
    def _stack(self) -> Stack:
        return Stack(settings.VAR_DIR, postgres=settings.DEVSTACK_POSTGRES)

    def stop(self, name: str) -> None:
        self._stack().down([name], echo=lambda _: None)

    def start(self, name: str) -> None:
        self._stack().up([name], echo=lambda _: None)
