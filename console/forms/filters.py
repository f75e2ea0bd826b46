"""The link filter editors: the three filter lists of a link as tables of rows, read back into
Confluent's filter JSON."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from replication.core import filters, link_configs


@dataclass(frozen=True)
class FilterList:
    """One of a link's three filter lists: its config key, its JSON's top key, its switch."""

    slug: str  # as the forms and URLs name it
    top: str
    config: str
    enable: str
    title: str
    purpose: str
    columns: tuple[tuple[str, str], ...]  # (field, label) of a row


NAME_COLUMNS = (("name", "Name"), ("pattern_type", "Pattern type"), ("filter_type", "Filter type"))
ACL_COLUMNS = (
    ("resource_type", "Resource type"),
    ("name", "Name"),
    ("pattern_type", "Pattern type"),
    ("principal", "Principal"),
    ("host", "Host"),
    ("operation", "Operation"),
    ("permission_type", "Permission type"),
)
FILTER_LISTS = {
    f.slug: f
    for f in [
        FilterList(
            "groups",
            filters.GROUPS,
            "consumer.offset.group.filters",
            "consumer.offset.sync.enable",
            "Consumer group filters",
            "Which source consumer groups have their committed offsets synced.",
            NAME_COLUMNS,
        ),
        FilterList(
            "topics",
            filters.TOPICS,
            "auto.create.mirror.topics.filters",
            "auto.create.mirror.topics.enable",
            "Auto-create topic filters",
            "Which source topics get mirror topics automatically (internal topics never do).",
            NAME_COLUMNS,
        ),
        FilterList(
            "acls",
            filters.ACLS,
            "acl.filters",
            "acl.sync.enable",
            "ACL filters",
            "Which source ACLs are synced; the source matches each filter as kafka-acls --list "
            "does. Destination ACLs they select are made equal to the source's.",
            ACL_COLUMNS,
        ),
    ]
}
# The words a row's select offers: what the parser takes (its own spelling), the ACL ones as
# Kafka's enums name them.
FILTER_CHOICES: dict[str, dict[str, tuple[str, ...]]] = {
    "groups": {
        "pattern_type": (filters.LITERAL, filters.PREFIXED),
        "filter_type": (filters.INCLUDE, filters.EXCLUDE),
    },
    "acls": filters.ACL_WORDS,
}
FILTER_CHOICES["topics"] = FILTER_CHOICES["groups"]
BLANK_ROWS = {
    "groups": {"name": "", "pattern_type": filters.LITERAL, "filter_type": filters.INCLUDE},
    "acls": {
        "resource_type": "topic",
        "name": "",
        "pattern_type": "literal",
        "principal": "",
        "host": "",
        "operation": "any",
        "permission_type": "any",
    },
}
BLANK_ROWS["topics"] = BLANK_ROWS["groups"]
PLACEHOLDERS = {
    "groups": {"name": "app- or * for all"},
    "topics": {"name": "orders or * for all"},
    "acls": {"name": "(any)", "principal": "User:alice (any)", "host": "* (any)"},
}
ROWS, JSON = "rows", "json"
# As rows, a list sends a field per column and row: 700 for 100 ACL filters, within the 1000
# fields Django reads. Longer lists are edited as JSON.
MAX_ROWS = 100
_FIRST_ENTRY = re.compile(r"\Aentry 1 of ")


class FilterFormError(ValueError):
    """A filter form no page sends (an unknown list or view, rows cut short)."""


@dataclass
class FilterCell:
    name: str
    label: str
    value: str
    options: tuple[str, ...]  # a select's; empty for a text input
    placeholder: str = ""


@dataclass
class FilterRow:
    kind: FilterList
    values: dict[str, str]
    error: str = ""

    @classmethod
    def of(cls, kind: FilterList, f: filters.NameFilter | filters.AclFilter) -> FilterRow:
        if isinstance(f, filters.AclFilter):
            values = {
                "resource_type": f.resource_type,
                "name": f.name or "",
                "pattern_type": f.pattern_type,
                "principal": f.principal or "",
                "host": f.host or "",
                "operation": f.operation,
                "permission_type": f.permission_type,
            }
        else:
            values = {"name": f.name, "pattern_type": f.pattern_type, "filter_type": f.filter_type}
        return cls(kind, values)

    def entry(self) -> dict:
        """The row as an entry of Confluent's JSON, as typed: the parser checks it."""
        v = self.values
        if self.kind.top != filters.ACLS:
            return {
                "name": v["name"],
                "patternType": v["pattern_type"],
                "filterType": v["filter_type"],
            }
        resource = {"resourceType": v["resource_type"], "patternType": v["pattern_type"]}
        if v["name"].strip():
            resource["name"] = v["name"]
        access = {k: v[k] for k in ("principal", "host") if v[k].strip()}
        access |= {"operation": v["operation"], "permissionType": v["permission_type"]}
        return {"resourceFilter": resource, "accessFilter": access}

    @property
    def cells(self) -> list[FilterCell]:
        choices = FILTER_CHOICES[self.kind.slug]
        cells = []
        for name, label in self.kind.columns:
            value = self.values[name]
            options = choices.get(name, ())
            if options and value not in options:
                options = (*options, value)  # shown as sent, beside the error that names it
            placeholder = PLACEHOLDERS[self.kind.slug].get(name, "")
            cells.append(FilterCell(name, label, value, options, placeholder))
        return cells


def _capitalised(message: str) -> str:
    return message[:1].upper() + message[1:]


def _list_error(exc: filters.FilterError) -> str:
    """A parse error of a whole list: one naming an entry as it is, else about the list."""
    message = str(exc)
    return _capitalised(message) if message.startswith("entry ") else f"The list {message}"


class FilterEditor:
    """One filter list of a link as its editor shows it: as rows or as Confluent's JSON, with
    what is wrong and where (a row's own error, or the list's), and what the preview found."""

    def __init__(self, link, kind: FilterList, mode: str = ROWS):
        self.link, self.kind, self.mode = link, kind, mode
        self.rows: list[FilterRow] = []
        self.text = ""  # the JSON, in the JSON view
        self.saved = link.configs.get(kind.config, "")
        self.enabled = link_configs.effective(link.configs, kind.enable) == "true"
        self.error = ""  # about the whole list, or its JSON
        self.note = ""  # what was done: imported, checked
        self.value: str | None = None  # after clean(): the config value, "" for no filters
        self.preview = None
        self.preview_error = ""

    # Reading. ---------------------------------------------------------------------------------

    @classmethod
    def from_saved(cls, link, kind: FilterList) -> FilterEditor:
        editor = cls(link, kind)
        if not editor._load(editor.saved):
            editor.note, editor.error = editor.error, ""  # as saved: no mistake of the user's
        return editor

    @classmethod
    def from_post(cls, link, data) -> FilterEditor:
        """The editor as the page sent it; FilterFormError when no page would send that."""
        slug = data.get("list", "")
        kind = FILTER_LISTS.get(slug)
        if kind is None:
            raise FilterFormError(
                f"There is no filter list {slug[:50]!r}: it is one of {', '.join(FILTER_LISTS)}. "
                "Send the link page's own form."
            )
        mode = data.get("mode", "")
        if mode not in (ROWS, JSON):
            raise FilterFormError(
                f"There is no filter view {mode[:50]!r}: it is {ROWS} or {JSON}. "
                "Send the link page's own form."
            )
        editor = cls(link, kind, mode)
        if mode == JSON:
            editor.text = data.get("json", "")
            return editor
        columns = {name: data.getlist(name) for name, _ in kind.columns}
        counts = {len(values) for values in columns.values()}
        if len(counts) > 1:
            raise FilterFormError(
                "The rows came incomplete (not every row has all its fields). "
                "Send the link page's own form."
            )
        rows = [
            FilterRow(kind, {name: values[i] for name, values in columns.items()})
            for i in range(counts.pop())
        ]
        if len(rows) > MAX_ROWS:
            editor.mode, editor.text = JSON, _dumped(kind, [row.entry() for row in rows])
            editor.error = (
                f"{len(rows)} rows are too many: the rows view holds at most {MAX_ROWS}. "
                "The list is shown as JSON; edit it there."
            )
        else:
            editor.rows = rows
        return editor

    def _parse(self, text: str) -> list:
        """The filters of `text`, or FilterError; an empty text or list is no filters."""
        if not text.strip():
            return []
        try:
            if self.kind.top == filters.ACLS:
                return filters.parse_acls(text)
            return filters.parse_names(text, self.kind.top)
        except filters.FilterError:
            if _empty_document(text, self.kind.top):
                return []  # parse_acls wants one filter at least; no filters unsets the key
            raise

    def _load(self, text: str) -> bool:
        """Show `text` as rows; as JSON, saying why, when it cannot be."""
        try:
            parsed = self._parse(text)
        except filters.FilterError as exc:
            self.mode, self.text = JSON, text
            self.error = f"{_list_error(exc)} Fix it in the JSON."
            return False
        if len(parsed) > MAX_ROWS:
            self.mode, self.text = JSON, text
            self.error = (
                f"The list has {len(parsed)} filters; the rows view holds at most {MAX_ROWS}, so "
                "it is shown as JSON."
            )
            return False
        self.mode, self.text = ROWS, ""
        self.rows = [FilterRow.of(self.kind, f) for f in parsed]
        return True

    # Editing. ---------------------------------------------------------------------------------

    def apply(self, data) -> None:
        """Do what the button pressed asks: add or remove a row, switch the view, take an
        imported file; with none, check the list."""
        if "remove_row" in data:  # not "remove": a control of that name hides form.remove()
            self._remove(data.get("remove_row", ""))
            return
        op = data.get("op", "check")
        if op == "add":
            self._add()
        elif op == JSON:
            if self.mode == ROWS:
                self.mode = JSON
                self.text = _dumped(self.kind, [row.entry() for row in self.rows])
        elif op == ROWS:
            if self.mode == JSON:
                self._load(self.text)
        elif op == "import":
            self._import(data.get("imported", ""), data.get("imported_name", ""))
        elif op == "check":
            self._check()
        else:
            self.error = f"There is no editor action {op[:50]!r}."

    def _add(self) -> None:
        if self.mode != ROWS:
            self.error = "Rows are added in the rows view."
        elif len(self.rows) >= MAX_ROWS:
            self.error = f"The rows view holds at most {MAX_ROWS} filters; edit as JSON."
        else:
            self.rows.append(FilterRow(self.kind, dict(BLANK_ROWS[self.kind.slug])))

    def _check(self) -> None:
        parsed = self.clean()
        if parsed is not None:
            count = len(parsed)
            self.note = f"The list is valid: {count} filter{'s' * (count != 1)}. Not saved."

    def _remove(self, which: str) -> None:
        index = int(which) if which.isascii() and which.isdigit() and len(which) < 4 else None
        if self.mode != ROWS or index is None or index >= len(self.rows):
            self.error = f"There is no row {which[:20]!r} to remove."
            return
        del self.rows[index]

    def _import(self, text: str, filename: str) -> None:
        name = " ".join(filename.split())[:100] or "the file"
        if not text.strip():
            self.error = f"{name} is empty: nothing was imported."
        elif self._load(text):
            count = len(self.rows)
            self.note = (
                f"Imported {name}: {count} filter{'s' * (count != 1)}, shown below. Not saved yet."
            )
        else:
            self.error = f"Imported {name}, but: {self.error}"

    # Checking. --------------------------------------------------------------------------------

    def clean(self) -> list | None:
        """The filters as edited, checked; None when something is wrong (the marked rows or
        the list's error say what). Sets `value`, the config value ("" for no filters)."""
        self.value = None
        if self.error:
            return None
        if self.mode == ROWS:
            for i, row in enumerate(self.rows):
                row.error = ""
                try:
                    self._parse(_dumped(self.kind, [row.entry()]))
                except filters.FilterError as exc:
                    row.error = _capitalised(_FIRST_ENTRY.sub(f"entry {i + 1} of ", str(exc)))
            wrong = sum(1 for row in self.rows if row.error)
            if wrong:
                self.error = (
                    f"{wrong} filters need fixing: see the marked rows."
                    if wrong > 1
                    else "A filter needs fixing: see the marked row."
                )
                return None
            text = _dumped(self.kind, [row.entry() for row in self.rows])
        else:
            text = self.text
        try:
            parsed = self._parse(text)
        except filters.FilterError as exc:
            self.error = _list_error(exc)
            return None
        if not parsed:
            self.value = ""
        elif self.kind.top == filters.ACLS:
            self.value = filters.dump_acls(parsed)
        else:
            self.value = filters.dump_names(parsed, self.kind.top)
        return parsed

    @property
    def unchanged(self) -> bool:
        return self.value is not None and self.value == self.saved


def _dumped(kind: FilterList, entries: list[dict]) -> str:
    return json.dumps({kind.top: entries}, indent=2)


def _empty_document(text: str, top: str) -> bool:
    if len(text) > filters.MAX_JSON:
        return False
    try:
        return json.loads(text) == {top: []}
    except (ValueError, RecursionError):
        return False


def filter_editors(link) -> list[FilterEditor]:
    """The editors of a link's three filter lists, as saved."""
    return [FilterEditor.from_saved(link, kind) for kind in FILTER_LISTS.values()]


def exported_filters(link, kind: FilterList) -> str:
    """The saved list in Confluent's format, for a .json file (no filters: an empty list)."""
    saved = link.configs.get(kind.config, "")
    try:
        document = json.loads(saved) if saved else {kind.top: []}
    except ValueError:
        return saved  # as stored: the file shows what the link has
    return json.dumps(document, indent=2) + "\n"
