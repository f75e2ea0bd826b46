"""The console's page of each object an approval request's plan names (plan_words.Ref): the
request page links them, and the API and the command-line tools give their addresses."""

from __future__ import annotations

from collections.abc import Callable

from django.urls import reverse

from replication.actions.plan_words import Ref


def url_of(ref: Ref) -> str:
    """The path of `ref`'s page."""
    if ref["kind"] == "cluster":
        return reverse("cluster-detail", args=[ref["name"]])
    if ref["kind"] == "link":
        return reverse("link-detail", args=[ref["cluster"], ref["name"]])
    if ref["kind"] == "mirror":
        return reverse("mirror-detail", args=[ref["cluster"], ref["name"]])
    return reverse("flow-detail", args=[ref["cluster"], ref["link"], ref["name"]])


def with_urls(plan: dict, absolute: Callable[[str], str] | None = None) -> dict:
    """`plan` with each named object's page (`absolute` makes the path a full URL)."""
    make = absolute or (lambda path: path)
    objects = [{**ref, "url": make(url_of(ref))} for ref in plan.get("objects", [])]
    return {**plan, "objects": objects}
