"""Every state the console shows as a badge has one colour, chosen for what it means."""

from console.templatetags.badges import _TONES, STEP_TONE, TONE, tone
from replication.models import (
    ApprovalRequest,
    ClusterLink,
    GroupOffsetSync,
    MirrorTopic,
    ScenarioRun,
    ScenarioStep,
)


def test_every_state_has_exactly_one_colour():
    assert sum(len(states) for states in _TONES.values()) == len(TONE)  # none in two tones
    for kind in (ClusterLink, MirrorTopic, ApprovalRequest, GroupOffsetSync):
        assert set(kind.State.values) <= TONE.keys(), kind
    assert set(ScenarioRun.Status.values) <= TONE.keys()
    assert set(ScenarioStep.Status.values) <= STEP_TONE.keys()


def test_the_colour_says_what_the_state_means():
    assert {tone(s) for s in ("ACTIVE", "EXECUTED", "PASSED")} == {"ok"}
    assert {tone(s) for s in ("FAILED", "UNAVAILABLE", "SOURCE_UNAVAILABLE")} == {"bad"}
    assert {tone(s) for s in ("PAUSED", "PENDING", "PENDING_STOPPED")} == {"warn"}
    assert {tone(s) for s in ("STOPPED", "WITHDRAWN", "ENDED")} == {"plain"}
    # A step not run yet is inert; a request waiting for an approver is not.
    assert tone("PENDING", "step") == "plain" and tone("PENDING") == "warn"


def test_every_mirror_state_falls_in_one_of_the_apis_link_categories():
    from console.api.links import _CATEGORIES
    from replication.models import MirrorTopic

    assert set(MirrorTopic.State.values) == set(_CATEGORIES)
