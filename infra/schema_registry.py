"""A client of Confluent Schema Registry's REST API (Confluent's own registry, and those that
speak its API, such as the embedded stack's): what schema linking reads from a source registry
and writes to a destination one. Every failure is a `SchemaRegistryError` whose words say what
went wrong and what to do; Confluent's error code is kept for callers that decide on it."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from urllib.parse import quote

import requests

CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"

# Confluent's error codes that callers decide on.
SUBJECT_NOT_FOUND = 40401
SUBJECT_SOFT_DELETED = 40404  # a soft delete of a subject soft-deleted already
# A write the subject's mode refuses: READONLY, an id given outside IMPORT mode, or (in IMPORT
# mode) an id another schema holds.
REFUSED_BY_MODE = 42205


@dataclass(frozen=True)
class Reference:
    name: str
    subject: str
    version: int


@dataclass(frozen=True)
class SchemaVersion:
    """One version of a subject: its schema, type (AVRO, PROTOBUF or JSON) and references."""

    subject: str
    version: int
    id: int
    schema: str
    schema_type: str = "AVRO"
    references: tuple[Reference, ...] = field(default=())

    def body(self) -> dict:
        """What registering it sends (the id and version too: IMPORT mode keeps them)."""
        return {
            "schema": self.schema,
            "schemaType": self.schema_type,
            "references": [vars(r) for r in self.references],
            "id": self.id,
            "version": self.version,
        }


class SchemaRegistryError(RuntimeError):
    def __init__(self, message: str, code: int | None = None, status: int | None = None):
        super().__init__(message)
        self.code, self.status = code, status


class SchemaRegistry:
    def __init__(
        self,
        url: str,
        username: str | None = None,
        password: str | None = None,
        timeout: float = 10.0,
    ):
        self.url = url.rstrip("/")
        self.timeout = timeout
        self.session = requests.Session()
        self.session.headers.update({"Content-Type": CONTENT_TYPE, "Accept": CONTENT_TYPE})
        # The environment's proxy and CA bundle, read once: requests reads them again for every
        # request otherwise (a quarter of a 1,000-subject sync run's CPU).
        self.session.trust_env = False
        self.session.proxies = requests.utils.get_environ_proxies(self.url)
        self.session.verify = (
            os.environ.get("REQUESTS_CA_BUNDLE") or os.environ.get("CURL_CA_BUNDLE") or True
        )
        if username is not None:
            self.session.auth = (username, password or "")

    # --- reading ---------------------------------------------------------------------------

    def subjects(self, deleted: bool = False) -> list[str]:
        """Every subject (with soft-deleted ones when asked)."""
        return sorted(self._call("GET", "/subjects", "list the subjects", deleted=deleted) or [])

    def versions(self, subject: str, deleted: bool = False) -> list[int]:
        found = self._call(
            "GET",
            f"/subjects/{_part(subject)}/versions",
            f"list {subject}'s versions",
            deleted=deleted,
        )
        return sorted(found or [])

    def version(self, subject: str, version: int, deleted: bool = False) -> SchemaVersion:
        found = self._call(
            "GET",
            f"/subjects/{_part(subject)}/versions/{version}",
            f"read version {version} of {subject}",
            deleted=deleted,
        )
        return _schema_version(found)

    def listing(self, deleted: bool = False, page: int = 1000) -> list[SchemaVersion]:
        """Every version of every subject (soft-deleted ones too when asked), read a page at
        a time: what a sync compares, in a few requests whatever the number of subjects."""
        found: list[SchemaVersion] = []
        while True:
            got = self._call(
                "GET",
                "/schemas",
                "list the schemas",
                deleted=deleted,
                offset=len(found),
                limit=page,
            )
            found += [_schema_version(v) for v in got or ()]
            if len(got or ()) < page:
                return found

    def schema(self, schema_id: int) -> dict:
        """The schema an id names: {"schema", "schemaType", "references"}."""
        return self._call("GET", f"/schemas/ids/{schema_id}", f"read schema id {schema_id}")

    def id_subjects(self, schema_id: int) -> list[str]:
        """The subjects that hold the schema an id names (soft-deleted versions too)."""
        found = self._call(
            "GET",
            f"/schemas/ids/{schema_id}/versions",
            f"read which subjects hold schema id {schema_id}",
            deleted=True,
        )
        return sorted({v["subject"] for v in found or ()})

    def mode(self, subject: str | None = None) -> str:
        """The subject's mode (READWRITE, READONLY, IMPORT), its own or else the registry's."""
        path = f"/mode/{_part(subject)}" if subject else "/mode"
        doing = f"read the mode of {subject}" if subject else "read the registry's mode"
        found = self._call("GET", path, doing, defaultToGlobal=True if subject else None)
        return found["mode"]

    def compatibility(self, subject: str) -> str:
        """The subject's compatibility level (BACKWARD, FULL_TRANSITIVE, NONE, …): its own, or
        else the registry's, which is what a new version of it is checked against."""
        found = self._call(
            "GET",
            f"/config/{_part(subject)}",
            f"read the compatibility level of {subject}",
            defaultToGlobal=True,
        )
        return found["compatibilityLevel"]

    # --- writing ---------------------------------------------------------------------------

    def set_compatibility(self, level: str, subject: str) -> None:
        """Give the subject a compatibility level of its own."""
        self._call(
            "PUT",
            f"/config/{_part(subject)}",
            f"set the compatibility level of {subject} to {level}",
            body={"compatibility": level},
        )

    def set_mode(self, mode: str, subject: str | None = None, force: bool = False) -> None:
        """Set a subject's mode (or the registry's). `force`: IMPORT on a subject or registry
        that already holds schemas."""
        path = f"/mode/{_part(subject)}" if subject else "/mode"
        doing = f"set {subject} to {mode}" if subject else f"set the registry to {mode}"
        self._call("PUT", path, doing, body={"mode": mode}, force=force or None)

    def register(self, version: SchemaVersion, keep_id: bool = True) -> int:
        """Register the schema under its subject; with `keep_id`, under its own id and version
        (the subject must be in IMPORT mode). Returns the id the registry gave it."""
        body = version.body()
        if not keep_id:
            body = {k: v for k, v in body.items() if k not in ("id", "version")}
        doing = (
            f"register version {version.version} of {version.subject} (id {version.id})"
            if keep_id
            else f"register a schema under {version.subject}"
        )
        found = self._call("POST", f"/subjects/{_part(version.subject)}/versions", doing, body=body)
        return int(found["id"])

    def delete_version(self, subject: str, version: int, permanent: bool = False) -> None:
        """Soft-delete a version (or, once soft-deleted, delete it for good)."""
        self._call(
            "DELETE",
            f"/subjects/{_part(subject)}/versions/{version}",
            f"delete version {version} of {subject}",
            permanent=permanent or None,
        )

    def delete_subject(self, subject: str) -> None:
        """Delete the subject and its every version for good (soft first, as Confluent's API
        asks); a subject it does not have is no error."""
        for permanent in (False, True):
            try:
                self._call(
                    "DELETE",
                    f"/subjects/{_part(subject)}",
                    f"delete {subject}",
                    permanent=permanent or None,
                )
            except SchemaRegistryError as exc:
                if exc.code == SUBJECT_NOT_FOUND:
                    return
                if exc.code != SUBJECT_SOFT_DELETED or permanent:
                    raise

    # --- the one door ----------------------------------------------------------------------

    def _call(self, method: str, path: str, doing: str, body: dict | None = None, **params):
        query = {k: str(v).lower() if isinstance(v, bool) else v for k, v in params.items()}
        query = {k: v for k, v in query.items() if v is not None}
        try:
            resp = self.session.request(
                method,
                self.url + path,
                params=query,
                data=None if body is None else json.dumps(body),
                timeout=self.timeout,
            )
        except requests.Timeout as exc:
            raise SchemaRegistryError(
                f"Could not {doing} at {self.url}: it did not answer within {self.timeout:g} s. "
                "Check that the registry is running and the URL is right."
            ) from exc
        except requests.RequestException as exc:
            raise SchemaRegistryError(
                f"Could not {doing} at {self.url}: it cannot be reached. Check that the "
                "registry is running and the URL is right."
            ) from exc
        if resp.status_code < 300:
            return _json(resp, doing, self.url) if resp.content else None
        raise _refusal(resp, doing, self.url)


def _part(name: str) -> str:
    return quote(name, safe="")


def _json(resp: requests.Response, doing: str, url: str):
    try:
        return resp.json()
    except ValueError as exc:
        raise SchemaRegistryError(
            f"Could not {doing} at {url}: the answer is not Schema Registry JSON. Check that "
            "the URL points at a schema registry (Confluent's REST API)."
        ) from exc


def _refusal(resp: requests.Response, doing: str, url: str) -> SchemaRegistryError:
    try:
        detail = resp.json()
    except ValueError:
        detail = {}
    code = detail.get("error_code") if isinstance(detail, dict) else None
    said = detail.get("message") if isinstance(detail, dict) else None
    if resp.status_code in (401, 403):
        words = (
            "the registry refused the credentials. Check the username and password (or API "
            "key) registered for it"
        )
    elif said:
        words = f"the registry said: {said.rstrip('.')}"
    else:
        words = f"the registry answered HTTP {resp.status_code}"
    return SchemaRegistryError(f"Could not {doing} at {url}: {words}.", code, resp.status_code)


def _schema_version(found: dict) -> SchemaVersion:
    return SchemaVersion(
        subject=found["subject"],
        version=int(found["version"]),
        id=int(found["id"]),
        schema=found["schema"],
        schema_type=found.get("schemaType") or "AVRO",
        references=tuple(
            Reference(r["name"], r["subject"], int(r["version"]))
            for r in found.get("references") or ()
        ),
    )
