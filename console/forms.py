from __future__ import annotations

import json
import re
from dataclasses import dataclass

from django import forms

from replication import filters, link_configs
from replication.clusters import parse_properties
from replication.models import NAME_VALIDATOR, KafkaCluster
from replication.policy import ROLES


class ClusterForm(forms.Form):
    name = forms.CharField(max_length=200, validators=[NAME_VALIDATOR])
    bootstrap_servers = forms.CharField(
        label="bootstrap.servers",
        max_length=1000,
        widget=forms.TextInput(attrs={"placeholder": "broker1:9092,broker2:9092"}),
    )
    client_config = forms.CharField(
        label="Client config",
        required=False,
        widget=forms.Textarea(
            attrs={"rows": 5, "placeholder": "security.protocol=SASL_SSL\nsasl.mechanism=PLAIN"}
        ),
        help_text="One key=value per line, confluent-kafka property names. "
        "Passwords and keys are encrypted at rest and never shown again.",
    )
    link_config = forms.CharField(
        label="Link credentials",
        required=False,
        widget=forms.Textarea(
            attrs={
                "rows": 4,
                "placeholder": "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"
                "sasl.username=replicator\nsasl.password=…",
            }
        ),
        help_text="Who links from this cluster connect as: a principal that may only read "
        "(not the console's, often a super-user, which passes every ACL). Used at this "
        "cluster's address only. Empty: a link from it gives its own credentials.",
    )


class PropertiesField(forms.CharField):
    """`key=value` lines, parsed into a dict; the error names the line, never its content."""

    def __init__(self, **kwargs):
        kwargs.setdefault("required", False)
        kwargs.setdefault("widget", forms.Textarea(attrs={"rows": 5}))
        super().__init__(**kwargs)

    def clean(self, value):
        try:
            return parse_properties(super().clean(value) or "")
        except ValueError as exc:
            raise forms.ValidationError(f"{exc} is not 'key=value'.") from exc


class LinkForm(forms.Form):
    name = forms.CharField(label="Link name", max_length=200, validators=[NAME_VALIDATOR])
    destination = forms.ModelChoiceField(
        KafkaCluster.objects.all(), empty_label=None, help_text="The cluster that holds mirrors."
    )
    source = forms.ModelChoiceField(
        KafkaCluster.objects.all(),
        required=False,
        empty_label="(given by bootstrap.servers below)",
        label="Source cluster",
        help_text="A registered cluster: the link connects to its registered address as the "
        "principal registered for links from it.",
    )
    configs = PropertiesField(
        label="Link configs",
        widget=forms.Textarea(
            attrs={
                "rows": 6,
                "placeholder": "bootstrap.servers=localhost:9092\nmetadata.max.age.ms=5000",
            }
        ),
        help_text="One key=value per line. Secrets are encrypted at rest and never shown again.",
    )


class LinkConfigForm(forms.Form):
    """Set and reset link configs in one change (so e.g. SASL can be swapped for SSL)."""

    set = PropertiesField(
        label="Set", widget=forms.Textarea(attrs={"rows": 2, "placeholder": "key=value"})
    )
    reset = forms.CharField(
        required=False,
        max_length=2000,  # config names, comma-separated: far more than all of them
        label="Reset to default",
        widget=forms.TextInput(attrs={"placeholder": "key,key"}),
    )

    def names_to_reset(self) -> list[str]:
        return [n.strip() for n in self.cleaned_data["reset"].split(",") if n.strip()]


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


class ConfirmForm(forms.Form):
    """Yes to a change; for what cannot be undone (`name` given), the name of what changes,
    typed."""

    def __init__(self, data, *, name: str = ""):
        super().__init__(data)
        self.name = name
        if not name:
            del self.fields["confirm_name"]

    confirm_name = forms.CharField(
        required=False,  # said by clean_confirm_name, with the name to type
        max_length=300,
        label="Name, typed to confirm",
        widget=forms.TextInput(
            attrs={"required": True, "autocomplete": "off", "spellcheck": "false"}
        ),
    )

    def clean_confirm_name(self) -> str:
        typed = self.cleaned_data["confirm_name"].strip()
        if typed != self.name:
            raise forms.ValidationError(
                f"Type {self.name} to confirm; nothing was changed."
                if typed
                else f"Type {self.name} to confirm: this cannot be undone."
            )
        return typed


class TokenForm(forms.Form):
    name = forms.CharField(
        max_length=100,
        widget=forms.TextInput(attrs={"placeholder": "laptop CLI"}),
        help_text="What the token is for, so you know which one to revoke.",
    )


class StopForm(ConfirmForm):
    """Promote, fail over or delete a link (none can be undone: `name` is required): why,
    (an admin's failover) whether to break glass, and (a link with mirrors) whether to force."""

    def __init__(self, data, *, name: str):
        super().__init__(data, name=name)

    reason = forms.CharField(
        required=False,
        max_length=2000,
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text="Approvers and the audit trail read it.",
    )
    break_glass = forms.BooleanField(
        required=False,
        label="Break glass: fail over at once, without approval (flagged everywhere)",
    )
    force = forms.BooleanField(required=False, label="Force: fail its mirror topics over first")


class RejectForm(forms.Form):
    reason = forms.CharField(max_length=2000, widget=forms.Textarea(attrs={"rows": 2}))


class ApprovalPolicyForm(forms.Form):
    approvals_required = forms.TypedChoiceField(
        choices=[(n, str(n)) for n in range(4)], coerce=int, label="Approvals required"
    )
    admin_may_override = forms.BooleanField(required=False, label="An admin may act at once")


# Plain text behind a select: `replication.users` checks usernames, emails and roles, says
# what is wrong (naming the roles) and audits the refusal.
ROLE_SELECT = forms.Select(choices=[(role, role) for role in ROLES])


class UserForm(forms.Form):
    username = forms.CharField(widget=forms.TextInput(attrs={"autocomplete": "off"}))
    email = forms.CharField(required=False, label="Email (optional)")
    role = forms.CharField(widget=ROLE_SELECT, initial="viewer")


class RoleForm(forms.Form):
    role = forms.CharField(widget=ROLE_SELECT)


# Link filters. -------------------------------------------------------------------------------


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
FILTER_CHOICES = {
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
            if self.mode != ROWS:
                self.error = "Rows are added in the rows view."
            elif len(self.rows) >= MAX_ROWS:
                self.error = f"The rows view holds at most {MAX_ROWS} filters; edit as JSON."
            else:
                self.rows.append(FilterRow(self.kind, dict(BLANK_ROWS[self.kind.slug])))
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
            parsed = self.clean()
            if parsed is not None:
                count = len(parsed)
                self.note = f"The list is valid: {count} filter{'s' * (count != 1)}. Not saved."
        else:
            self.error = f"There is no editor action {op[:50]!r}."

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
