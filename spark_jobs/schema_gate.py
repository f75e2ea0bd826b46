"""No record before its schema: for a link that syncs schemas, a copier writes a record that
names a schema (Confluent's wire format: a zero byte, then the schema id in four bytes, in its
key or value) only once the destination's registry holds that id as the source's does. Until
then the record's partition holds at that record, and the copier says which ids it waits for;
the console's schema syncer brings them across within about a second (see
`replication.schemas.link_schema_sync`) and the partition goes on from the record it held at.

Bytes that only look framed (a zero byte that is not the wire format) name an id the source's
registry does not have: those pass, as does every id once checked.

The lookups use the standard library: executors have confluent-kafka and redis, nothing more.
"""

from __future__ import annotations

import base64
import json
import urllib.error
import urllib.request
from http.client import HTTPMessage
from typing import IO, Any, NoReturn

from infra.schema_text import same_schema

from . import payloads

TIMEOUT_S = 2.0  # a lookup holds the copier's thread: a registry gone quiet must not hold it long
MAX_ANSWER = 8 * 1024 * 1024  # far beyond any schema


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    """A registry answers at its own URL: a redirect elsewhere is refused, never followed."""

    def redirect_request(
        self,
        req: urllib.request.Request,
        fp: IO[bytes],
        code: int,
        msg: str,
        headers: HTTPMessage,
        newurl: str,
    ) -> NoReturn:
        raise urllib.error.HTTPError(req.full_url, code, "a redirect, not followed", headers, fp)


_OPENER = urllib.request.build_opener(_NoRedirects)


def schema_ids(key: bytes | None, value: bytes | None) -> set[int]:
    """The schema ids a record's key and value name in Confluent's wire format."""
    return {
        int.from_bytes(part[1:5], "big")
        for part in (key, value)
        if part is not None and len(part) >= 5 and part[0] == 0
    }


class Unanswered(Exception):
    """The registry did not say (unreachable, refused, not a registry's answer)."""


class Registry:
    """The one call the gate makes of a registry: the schema an id names."""

    def __init__(self, spec: payloads.RegistrySpec):
        self.url = spec["url"].rstrip("/")
        self.headers = {"Accept": "application/vnd.schemaregistry.v1+json"}
        if spec.get("username"):
            pair = f"{spec['username']}:{spec.get('password') or ''}".encode()
            self.headers["Authorization"] = "Basic " + base64.b64encode(pair).decode()

    def schema(self, schema_id: int) -> dict[str, Any] | None:
        """{"schema", "schemaType", …} of the id, or None if the registry has no such id."""
        # http(s) only: the console keeps no other registry URL (schema_registries.checked).
        url = f"{self.url}/schemas/ids/{schema_id}"
        request = urllib.request.Request(url, headers=self.headers)  # noqa: S310
        try:
            with _OPENER.open(request, timeout=TIMEOUT_S) as resp:
                body = resp.read(MAX_ANSWER + 1)
            if len(body) > MAX_ANSWER:
                raise Unanswered(f"{self.url} answered more than {MAX_ANSWER} bytes")
            found: dict[str, Any] = json.loads(body)
            return found
        except urllib.error.HTTPError as exc:
            if exc.code == 404:
                return None
            raise Unanswered(f"{self.url} answered HTTP {exc.code}") from exc
        except (OSError, ValueError, RecursionError) as exc:
            raise Unanswered(f"{self.url} cannot be reached or did not answer: {exc}") from exc


class Gate:
    """The ids a copier may write: checked once each against both registries."""

    def __init__(self, spec: payloads.SchemaSpec):
        self.source = Registry(spec["source"])
        self.destination = Registry(spec["destination"])
        self.passed: set[int] = set()

    def waiting(self, ids: set[int]) -> dict[int, str]:
        """Of `ids`, those the destination cannot decode yet, each with why."""
        found = {}
        for schema_id in ids - self.passed:
            why = self.check(schema_id)
            if why:
                found[schema_id] = why
            else:
                self.passed.add(schema_id)
        return found

    def check(self, schema_id: int) -> str:
        try:
            wanted = self.source.schema(schema_id)
        except Unanswered as exc:
            return f"the source's registry cannot say what it is: {exc}"
        if wanted is None:
            return ""  # no schema of the source's: not the wire format after all
        try:
            there = self.destination.schema(schema_id)
        except Unanswered as exc:
            return f"the destination's registry cannot say whether it has it: {exc}"
        if there is None:
            return "not in the destination's registry yet"
        same_type = (there.get("schemaType") or "AVRO") == (wanted.get("schemaType") or "AVRO")
        if same_type and same_schema(there.get("schema", ""), wanted.get("schema", "")):
            return ""
        return (
            "the destination's registry gives this id to a different schema (a conflict: see "
            "the link's schema subjects)"
        )
