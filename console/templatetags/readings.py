"""How the console writes states and measured values in running text."""

from django import template

from replication.core.text import escaped

register = template.Library()


@register.filter
def state_words(state: str) -> str:
    """A state as words in a sentence: LINK_PAUSED → "link paused"."""
    return str(state).replace("_", " ").lower()


@register.filter
def reading(value: float | int | None) -> str:
    """A measured value read at a glance: from 100 up whole and grouped (13,787), below one
    decimal at most (12.5, 3); "–" when there is none."""
    if value is None:
        return "–"
    if abs(value) >= 100:
        return f"{round(value):,}"
    return f"{value:.1f}".removesuffix(".0")


@register.filter
def inert(value) -> str:
    """Stored text shown with its control and bidirectional characters as escapes (`\\x1b`,
    `\\u202e`): older data, or a refused request's own words, may hold them, and they would
    reorder or hide what a row says."""
    return escaped("" if value is None else str(value))
