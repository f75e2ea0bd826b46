"""*Isthmus*'s gateways (Confluent has none): a Kafka proxy its clients reach instead of a
cluster, and the bodies that define, change and switch one."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from console.api.schemas.bodies import Body
from console.api.schemas.common import ResourceCollectionMetadata, ResourceMetadata, Shape


class GatewayData(Shape):
    """*Isthmus*: a gateway, a Kafka proxy (Kroxylicious) its clients connect to instead of a
    cluster; a switch moves them all to another of its clusters."""

    kind: Literal["GatewayData"] = "GatewayData"
    metadata: ResourceMetadata
    gateway_name: str
    address: str = Field(description="HOST:PORT, its clients' bootstrap.servers.")
    cluster_names: list[str] = Field(description="The registered clusters it may route to.")
    route_cluster_name: str = Field(
        description="The cluster its clients reach now: every topic (Kroxylicious 0.12.0 routes "
        "a whole virtual cluster to one cluster)."
    )
    running: bool = Field(description="Its proxy runs on this console's host.")
    connections_total: int | None = Field(
        description="Client connections its proxy accepted since it started; null while it "
        "does not answer."
    )
    switches: int
    switched_at: str | None = Field(description="The last switch's time (ISO 8601), if any.")


class GatewayDataList(Shape):
    """*Isthmus*: the gateways."""

    kind: Literal["GatewayDataList"] = "GatewayDataList"
    metadata: ResourceCollectionMetadata
    data: list[GatewayData]


class CreateGatewayRequest(Body):
    """*Isthmus*: a new gateway; its proxy starts and must answer with `route_cluster_name`."""

    gateway_name: str
    address: str = Field(description="HOST:PORT on loopback (unless the console allows any).")
    cluster_names: list[str] = Field(description="Registered clusters it may route to.")
    route_cluster_name: str = Field(description="One of them: where its clients go now.")


class UpdateGatewayRequest(Body):
    """*Isthmus*: a gateway's new address (its proxy restarts there) or clusters."""

    address: str | None = None
    cluster_names: list[str] | None = None


class SwitchGatewayRequest(Body):
    """*Isthmus*: the cluster a gateway's clients move to (every client, at once)."""

    cluster_name: str
