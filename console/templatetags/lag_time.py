"""A mirror's lag in time (the recovery point) as the pages write it."""

from django import template

from replication.observe import rpo

register = template.Library()


@register.filter
def lag_time(ms: int | None) -> str:
    """Milliseconds behind as words ("4 min 10 s"); "–" when unknown."""
    return "–" if ms is None or ms < 0 else rpo.seconds(ms)


@register.filter
def over_rpo(ms: int | None, target_s: int | None) -> bool:
    """Whether a lag in time is over an RPO target (none: never)."""
    return ms is not None and rpo.is_over(ms, target_s)
