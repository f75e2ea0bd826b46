"""The mirror form: one or more mirror topics at once."""

from __future__ import annotations

import re

from django import forms

from console.forms.common import PropertiesField
from replication.observe.verification_requests import MAX_OFFSET

MAX_MIRRORS_AT_ONCE = 100


class MirrorForm(forms.Form):
    source_topic = forms.CharField(
        label="Source topics",
        max_length=MAX_MIRRORS_AT_ONCE * 250,
        help_text="One or more, separated by commas or spaces: a mirror topic each, with the "
        "settings below.",
    )
    replication_factor = forms.IntegerField(
        required=False, min_value=1, max_value=32767, help_text="Empty: the destination's default."
    )
    configs = PropertiesField(
        label="Config overrides",
        help_text="One key=value per line, e.g. retention.ms=7776000000. Strictly mirrored "
        "configs (cleanup.policy, max.message.bytes, message.timestamp.type) come from the source.",
    )

    def clean_source_topic(self) -> list[str]:
        """The names, each once, in the order given (Kafka's topic names hold neither commas
        nor spaces)."""
        names = list(dict.fromkeys(re.split(r"[\s,]+", self.cleaned_data["source_topic"].strip())))
        names = [n for n in names if n]
        if not names:
            raise forms.ValidationError("Name at least one source topic.")
        if len(names) > MAX_MIRRORS_AT_ONCE:
            raise forms.ValidationError(
                f"{len(names)} topics: create at most {MAX_MIRRORS_AT_ONCE} mirrors at once."
            )
        if long := [n for n in names if len(n) > 249]:
            raise forms.ValidationError(
                f"A topic name has at most 249 characters; {long[0][:40]}… has {len(long[0])}."
            )
        return names


# A larger offset than Kafka's (and the database's columns) take is refused here in words.
_OFFSET_ERRORS = {
    "invalid": f"Enter an offset: a whole number from 0 to {MAX_OFFSET}.",
    "max_value": f"An offset is at most {MAX_OFFSET} (2^63 - 1, Kafka's largest).",
}


class VerifyForm(forms.Form):
    """The range of source offsets to compare (the same in every partition)."""

    from_offset = forms.IntegerField(
        label="From offset",
        required=False,
        min_value=0,
        max_value=MAX_OFFSET,
        error_messages=_OFFSET_ERRORS,
        help_text="Empty: each partition's log start on the source.",
    )
    to_offset = forms.IntegerField(
        label="To offset",
        required=False,
        min_value=1,
        max_value=MAX_OFFSET,
        error_messages=_OFFSET_ERRORS,
        help_text="Up to, not including. Empty: as far as the mirror has copied.",
    )
