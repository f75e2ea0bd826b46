"""A link's filter lists on its page (consumer groups, auto-created topics, ACLs): edited as rows
or as Confluent's JSON (HTMX re-renders the editor), imported from a file the browser reads,
exported as a .json file, previewed against the source, saved as link configs."""

from django.contrib import messages
from django.http import HttpResponse, HttpResponseNotAllowed
from django.shortcuts import redirect, render
from django_htmx.http import HttpResponseClientRedirect

from console.access import require
from console.forms.filters import (
    FILTER_LISTS,
    FilterEditor,
    FilterFormError,
    exported_filters,
    filter_editors,
)
from console.views.links import find_link, link_url
from replication.core.errors import ReplicationError
from replication.governance import audit
from replication.sync import filter_preview
from replication.topics import links

PREVIEWS = {
    "groups": filter_preview.preview_groups,
    "topics": filter_preview.preview_topics,
    "acls": filter_preview.preview_acls,
}


def _refused(request, message: str, status: int = 400):
    return render(
        request, "refused.html", {"title": "Bad request", "message": message}, status=status
    )


def _show(request, link, editor: FilterEditor):
    """The editor again: the fragment for HTMX, else a page of its own."""
    context = {"link": link, "editor": editor, "filter_editors": [editor]}
    if request.htmx:
        return render(request, "links/_filters.html#editor", context)
    return render(request, "links/filters.html", context)


def _posted(request, link):
    """The editor as posted, or the page that says why the form is no editor's."""
    try:
        return FilterEditor.from_post(link, request.POST), None
    except FilterFormError as exc:
        return None, _refused(request, str(exc))


@require("console.view")
def link_filters(request, destination, name):
    """GET: the three editors as saved, on a page of their own. POST: one editor after a
    button of it (add or remove a row, switch the view, import, check)."""
    link = find_link(destination, name)
    if request.method != "POST":
        return render(
            request, "links/filters.html", {"link": link, "filter_editors": filter_editors(link)}
        )
    editor, refused = _posted(request, link)
    if refused:
        return refused
    editor.apply(request.POST)
    return _show(request, link, editor)


@require("console.view")
def link_filters_preview(request, destination, name):
    """What the filters as edited would select on the source now; nothing is saved."""
    link = find_link(destination, name)
    if request.method != "POST":  # the editor is on the link's page
        return redirect(link_url(link))
    editor, refused = _posted(request, link)
    if refused:
        return refused
    parsed = editor.clean()
    if parsed is not None:
        try:
            editor.preview = PREVIEWS[editor.kind.slug](link, parsed)
        except ReplicationError as exc:
            editor.preview_error = str(exc)
    return _show(request, link, editor)


@require("link.manage")
def link_filters_save(request, destination, name):
    """Save the list as edited through links.alter_link_configs (audited, policy-checked);
    no filters unsets the key."""
    link = find_link(destination, name)
    if request.method != "POST":
        return redirect(link_url(link))
    editor, refused = _posted(request, link)
    if refused:
        return refused
    if editor.clean() is not None:
        key, value = editor.kind.config, editor.value
        if editor.unchanged:
            editor.note = "Nothing to save: the list is as saved."
            return _show(request, link, editor)
        try:
            links.alter_link_configs(
                audit.Actor.from_request(request),
                link,
                {key: value} if value else {},
                [] if value else [key],
            )
        except ReplicationError as exc:
            editor.error = f"Not saved: {exc}"
        else:
            messages.success(
                request,
                f"Saved the {editor.kind.title.lower()} of link {link.name}."
                if value
                else f"Removed the {editor.kind.title.lower()} of link {link.name} ({key}).",
            )
            if request.htmx:
                return HttpResponseClientRedirect(link_url(link))
            return redirect(link_url(link))
    return _show(request, link, editor)


@require("console.view")
def link_filters_export(request, destination, name):
    """The saved list as a .json file in Confluent's format (?list=groups, topics or acls)."""
    link = find_link(destination, name)
    if request.method != "GET":
        return HttpResponseNotAllowed(["GET"], "Export is a download: GET it.")
    slug = request.GET.get("list", "")
    kind = FILTER_LISTS.get(slug)
    if kind is None:
        return _refused(
            request,
            f"There is no filter list {slug[:50]!r} to export: give ?list= one of "
            f"{', '.join(FILTER_LISTS)}.",
        )
    response = HttpResponse(exported_filters(link, kind), content_type="application/json")
    response["Content-Disposition"] = f'attachment; filename="{link.name}-{kind.top}.json"'
    return response
