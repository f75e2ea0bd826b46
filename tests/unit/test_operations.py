"""The table of actions that may need approval (replication/actions/operations.py)
covers them all."""

from replication.actions.operations import OPERATIONS
from replication.governance.policy import POLICY
from replication.models import ApprovalRequest


def test_every_action_has_an_operation():
    assert sorted(OPERATIONS) == sorted(ApprovalRequest.Action.values)


def test_each_operation_asks_for_an_action_of_the_access_policy():
    unknown = {a: op.requested_as for a, op in OPERATIONS.items() if op.requested_as not in POLICY}
    assert unknown == {}


def test_break_glass_is_for_a_failover_only():
    assert [a for a, op in OPERATIONS.items() if op.break_glass] == ["failover"]
