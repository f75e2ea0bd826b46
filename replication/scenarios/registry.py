"""The scenarios the console and `manage.py run_scenario` offer, by name."""

from __future__ import annotations

from replication.core.errors import not_found
from replication.scenarios.active_active import ACTIVE_ACTIVE
from replication.scenarios.moves import DISASTER_RECOVERY, MIGRATION
from replication.scenarios.round_trip import DR_ROUND_TRIP
from replication.scenarios.runner import Scenario
from replication.scenarios.schemas import SCHEMA_LINKING
from replication.scenarios.share_data import SHARE_DATA
from replication.scenarios.swap import SWAP
from replication.scenarios.switchover import CLIENT_SWITCHOVER

SCENARIOS: dict[str, Scenario] = {
    s.name: s
    for s in [
        SHARE_DATA,
        DISASTER_RECOVERY,
        MIGRATION,
        SWAP,
        DR_ROUND_TRIP,
        ACTIVE_ACTIVE,
        SCHEMA_LINKING,
        CLIENT_SWITCHOVER,
    ]
}


def get(name: str) -> Scenario:
    found = SCENARIOS.get(name)
    if found is None:
        raise not_found(f"There is no scenario {name!r}: run one of {', '.join(SCENARIOS)}.")
    return found
