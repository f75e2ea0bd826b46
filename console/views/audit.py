"""The audit trail: every mutating action, newest first, filtered, paged and exported as CSV.

Pages are keyset-paged on (at, id), so no page counts the whole table and events recorded while
someone reads do not shift the pages under them.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json

from django import forms
from django.db.models import QuerySet
from django.http import HttpResponse
from django.shortcuts import render
from django.utils import timezone

from console.access import require
from console.csv_cells import csv_download
from replication.governance import audit
from replication.models import AuditEvent

PAGE_SIZE = 100
CSV_HEADER = [
    "at",
    "actor",
    "address",
    "user_agent",
    "action",
    "target",
    "result",
    "message",
    "before",
    "after",
    "topics",
    "break_glass",
]


class UtcDateTimeField(forms.CharField):
    """A `datetime-local` value (or any ISO 8601 date and time), read as UTC when it names no
    zone. Cleans to (datetime, how much time the value spans: a day, a minute or a second)."""

    widget = forms.DateTimeInput(attrs={"type": "datetime-local", "step": "1"})

    def __init__(self, **kwargs):
        super().__init__(required=False, **kwargs)

    def clean(self, value):
        value = (super().clean(value) or "").strip()
        if not value:
            return None
        try:
            moment = dt.datetime.fromisoformat(value)
        except ValueError:
            raise forms.ValidationError(
                "Enter a date and time like 2026-05-01T14:30 (UTC).", code="invalid"
            ) from None
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=dt.UTC)
        try:
            in_utc = moment.astimezone(dt.UTC)
        except OverflowError:  # 9999-12-31T23:59-05:00 is past the year 9999 in UTC
            raise forms.ValidationError(
                "Enter a date and time from 0001-01-01 to 9999-12-31 in UTC.", code="invalid"
            ) from None
        time_part = value[10:]
        if not time_part:
            span = dt.timedelta(days=1)
        elif time_part.count(":") == 1:
            span = dt.timedelta(minutes=1)
        else:
            span = dt.timedelta(seconds=1)
        return in_utc, span


class AuditFilterForm(forms.Form):
    actor = forms.CharField(required=False, max_length=150)
    target = forms.CharField(required=False, max_length=400)
    topic = forms.CharField(required=False, max_length=255)
    action = forms.CharField(required=False, max_length=100, widget=forms.Select)
    result = forms.ChoiceField(
        required=False, choices=[("", "any")] + list(AuditEvent.Result.choices)
    )

    def __init__(self, *args, actions: list[str] | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        self.actions = actions
        # "from" is a Python keyword, so these two are added here.
        self.fields["from"] = UtcDateTimeField(label="From (UTC)")
        self.fields["to"] = UtcDateTimeField(label="To (UTC)")
        self.fields["break_glass"] = forms.BooleanField(required=False, label="Break glass only")
        if actions is not None:
            self.fields["action"].widget.choices = [("", "any")] + [(a, a) for a in actions]

    def clean_action(self) -> str:
        # The page offers the actions the trail holds; another is a typo or a stale link.
        action = self.cleaned_data["action"]
        if action and self.actions is not None and action not in self.actions:
            raise forms.ValidationError(
                f"No event has the action {action!r}; pick one from the list."
            )
        return action

    def events(self) -> QuerySet[AuditEvent]:
        """The events these (valid) filters select, newest first."""
        data = self.cleaned_data
        until = None
        if data.get("to"):
            moment, span = data["to"]
            # The whole minute (or second, or day) the value names; at the end of time, no bound.
            with contextlib.suppress(OverflowError):
                until = moment + span
        return audit.search(
            actor=data.get("actor", ""),
            target=data.get("target", ""),
            action=data.get("action", ""),
            result=data.get("result", ""),
            since=data["from"][0] if data.get("from") else None,
            until=until,
            topic=data.get("topic", ""),
            break_glass=bool(data.get("break_glass")),
        )


def compact_json(value) -> str:
    if value is None:
        return ""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _query_with(request, **cursor: str) -> str:
    params = request.GET.copy()
    for key in ("before", "after"):
        params.pop(key, None)
    params.update(cursor)
    return params.urlencode()


@require("audit.view")
def audit_list(request):
    form = AuditFilterForm(request.GET, actions=audit.actions())
    context = {"form": form, "events": [], "older": None, "newer": None}
    if form.is_valid():
        events, has_older, has_newer = audit.page(
            form.events(),
            before=request.GET.get("before"),
            after=request.GET.get("after"),
            size=PAGE_SIZE,
        )
        for event in events:
            event.before_json = compact_json(event.before)
            event.after_json = compact_json(event.after)
            # The topics it concerns, where its target does not name them already.
            named = event.target.split(" ")[1] if event.target.startswith("mirror ") else None
            event.topics_shown = [t for t in event.topics.splitlines() if t != named]
        context["events"] = events
        if events and has_older:
            context["older"] = "?" + _query_with(request, before=str(events[-1].pk))
        if events and has_newer:
            context["newer"] = "?" + _query_with(request, after=str(events[0].pk))
        context["paged"] = bool(request.GET.get("before") or request.GET.get("after"))
        context["export_query"] = _query_with(request)
    context["filters_set"] = sum(1 for name in form.fields if request.GET.get(name))
    return render(request, "audit/list.html", context)


def csv_row(event: AuditEvent) -> list[str | None]:
    return [
        event.at.astimezone(dt.UTC).isoformat(),
        event.actor_name,
        event.address,
        event.user_agent,
        event.action,
        event.target,
        event.result,
        event.message,
        compact_json(event.before),
        compact_json(event.after),
        " ".join(event.topics.splitlines()),
        "yes" if event.break_glass else "",
    ]


@require("audit.view")
def audit_export(request):
    form = AuditFilterForm(request.GET)
    if not form.is_valid():
        errors = "; ".join(f"{name}: {' '.join(e)}" for name, e in form.errors.items())
        return HttpResponse(
            f"Invalid filter: {errors}\n", status=400, content_type="text/plain; charset=utf-8"
        )
    rows = (csv_row(event) for event in form.events().iterator(chunk_size=2000))
    return csv_download(f"isthmus-audit-{timezone.now():%Y%m%dT%H%M%SZ}.csv", CSV_HEADER, rows)
