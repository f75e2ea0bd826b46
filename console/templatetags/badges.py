"""One colour per meaning, for every state badge of the console: green works or worked, amber
is under way or waits for someone, red is broken, grey has ended or is inert. A state is
coloured here and nowhere else."""

from django import template

register = template.Library()

_TONES = {
    "ok": {"ACTIVE", "EXECUTED", "PASSED", "IN_STEP", "QUIET"},
    "warn": {
        "PAUSED",
        "LINK_PAUSED",
        "PENDING_MIRROR",
        "PENDING_SYNCHRONIZE",
        "PENDING_SETUP_FOR_RESTORE",
        "PENDING_RESTORE",
        "PENDING_STOPPED",
        "PENDING",
        "APPROVED",
        "RUNNING",
        "BEHIND_MIRROR",
        "BEHIND_FLOW",
        "SKIPPED",
        "WRITING",  # producers still write a topic an approval request would stop mirroring
        "REFUSED",  # a scheduled drill the link's state did not allow: someone must see to it
    },
    "bad": {"FAILED", "UNAVAILABLE", "SOURCE_UNAVAILABLE", "CONFLICT"},
    "plain": {
        "STOPPED",
        "REJECTED",
        "WITHDRAWN",
        "EXPIRED",
        "SUPERSEDED",
        "ENDED",
        "WAITING",
        "PROMOTED",
    },
}
TONE = {state: tone for tone, states in _TONES.items() for state in states}
# A scenario step that is PENDING or SKIPPED has not run (inert), unlike a pending request or
# a skipped group, which wait for someone.
STEP_TONE = {**TONE, "PENDING": "plain", "SKIPPED": "plain"}


@register.filter
def tone(state: str, kind: str = "") -> str:
    """The badge class of `state` (of a link, mirror, request, scenario run or group; of a
    scenario step with kind "step")."""
    return (STEP_TONE if kind == "step" else TONE).get(state, "plain")
