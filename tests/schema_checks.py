"""A small JSON Schema check for API answers: required fields, types (with their integer
ranges), consts, enums, anyOf/oneOf, and `$ref`s within the schema's own document; and
`conforms`, an answer checked against Confluent's SDK models (tests/contracts/)."""

from __future__ import annotations

import json
from pathlib import Path

CONFLUENT_MODELS = json.loads(
    (Path(__file__).parent / "contracts" / "confluent_v3_models.json").read_text()
)
for _model in CONFLUENT_MODELS["$defs"].values():  # what either SDK requires
    _model["required"] = sorted(
        {*_model.get("required", []), *_model.get("x-kafka-rest-sdk-go-required", [])}
    )

_JSON_TYPES = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
}


def resolve(node, document: dict):
    """`node`, with a `$ref` to somewhere in `document` followed."""
    while isinstance(node, dict) and "$ref" in node:
        assert node["$ref"].startswith("#/"), node
        target = document
        for part in node["$ref"][2:].split("/"):
            target = target[part]
        node = target
    return node


# Complex on purpose: one comparison per kind of JSON schema node.
def mismatches(value, schema: dict, document: dict, where: str = "body") -> list[str]:  # noqa: C901
    """How `value` differs from `schema` (whose `$ref`s point into `document`)."""
    schema = resolve(schema, document)
    kinds = schema.get("type")
    if kinds:
        kinds = [kinds] if isinstance(kinds, str) else kinds
        if not any(_JSON_TYPES[k](value) for k in kinds):
            return [f"{where} is {value!r}, documented as {'/'.join(kinds)}"]
    branches = schema.get("anyOf") or schema.get("oneOf")
    if branches and all(mismatches(value, b, document, where) for b in branches):
        return [f"{where} is {value!r}, which fits none of its documented forms"]
    found = []
    if "const" in schema and value != schema["const"]:
        found.append(f"{where} is {value!r}, documented as {schema['const']!r}")
    if "enum" in schema and value not in schema["enum"]:
        found.append(f"{where} is {value!r}, documented as one of {schema['enum']}")
    if _JSON_TYPES["integer"](value):
        low, high = schema.get("minimum"), schema.get("maximum")
        if (low is not None and value < low) or (high is not None and value > high):
            found.append(f"{where} is {value}, outside {low}..{high}")
    if isinstance(value, dict):
        found += [f"{where} lacks {n!r}" for n in schema.get("required", []) if n not in value]
        if schema.get("additionalProperties") is False:
            found += [
                f"{where} has undocumented {n!r}" for n in value if n not in schema["properties"]
            ]
        for name, sub in schema.get("properties", {}).items():
            if name in value:
                found += mismatches(value[name], sub, document, f"{where}.{name}")
    if isinstance(value, list) and "items" in schema:
        for i, item in enumerate(value):
            found += mismatches(item, schema["items"], document, f"{where}[{i}]")
    return found


def conforms(response, model: str, status: int = 200) -> dict:
    """A Django test client's answer, of `status`, read as Confluent's SDK reads `model`."""
    assert response.status_code == status, response.content
    body = response.json()
    problems = mismatches(body, {"$ref": f"#/$defs/{model}"}, CONFLUENT_MODELS)
    assert not problems, "\n".join(problems)
    return body
