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


# A unit after a value that reads "1": in the singular.
_SINGULAR = {"records": "record", "records/s": "record/s"}


@register.filter
def unit_of(value: float | int | None, unit: str) -> str:
    """The unit to write after `value` as `reading` writes it: "record/s" after a 1."""
    return _SINGULAR.get(unit, unit) if reading(value) == "1" else unit


@register.filter
def amount(value: float | int | None, unit: str) -> str:
    """A measured value with its unit: "1 record/s", "2.5 records/s", "–" when there is none."""
    shown = reading(value)
    return shown if shown == "–" else f"{shown} {unit_of(value, unit)}"


@register.filter
def by_partition(offsets: dict | None) -> list[tuple[str, object]]:
    """A {partition: value} of a stored report (its keys strings, in no set order) as pairs
    in partition order: 0, 1, 2, …, 10, not 0, 1, 10, 2."""
    return sorted((offsets or {}).items(), key=lambda item: (len(str(item[0])), str(item[0])))
