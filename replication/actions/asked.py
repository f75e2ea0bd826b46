"""An action as asked for, or as an approval request keeps it: what operations.OPERATIONS'
functions and the words of its plan (plan_words.py) act on."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from replication.models import ClusterLink

Params = dict[str, Any]


@dataclass(frozen=True)
class Asked:
    """An action as asked for (or as an approval request keeps it): what the table's
    functions act on. `topics` and `params` as `Operation.params` and submit left them."""

    link: ClusterLink
    action: str
    topics: list[str] = field(default_factory=list)
    params: Params = field(default_factory=dict)
    force: bool = False
