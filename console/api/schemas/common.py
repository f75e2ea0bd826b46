"""What every body of the JSON API is made of: `Shape` (an answer: every field sent and
required, none undeclared), `respond`, the Kafka REST v3 error envelope and the metadata and
relationships every resource carries, a config as a name and a value, the OpenAPI document's
own shape.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Annotated, Any, Literal

from django.http import JsonResponse
from pydantic import BaseModel, ConfigDict, Field

REF = "#/components/schemas/{model}"


def one_of(values: Iterable[str]) -> Any:
    """A Literal of these values, for a field that takes one of a model's choices. (Made at run
    time, so mypy cannot read it: each field typed so says `type: ignore[valid-type]`.)"""
    return Literal[tuple(values)]


class Shape(BaseModel):
    # Every field of an answer is always sent, so every field is required in its schema.
    model_config = ConfigDict(extra="forbid", json_schema_serialization_defaults_required=True)


def respond(shape: BaseModel, status: int = 200) -> JsonResponse:
    return JsonResponse(shape.model_dump(mode="json"), status=status)


Url = Annotated[str, Field(description="Its URL.", json_schema_extra={"format": "uri"})]
NullableCount = Annotated[int | None, Field(description="null on success, else the HTTP status.")]


class Error(Shape):
    """The Kafka REST v3 error envelope."""

    error_code: int = Field(description="The HTTP status times 100 plus a number, e.g. 40401.")
    message: str = Field(description="What was wrong, and what to do about it.")


class ResourceMetadata(Shape):
    """Where this object lives."""

    self: Url


class ResourceCollectionMetadata(Shape):
    """Where this list lives."""

    self: Url
    next: None = Field(None, description="Always null: every list is answered whole.")


class Relationship(Shape):
    """A related resource."""

    related: Url


class ConfigNameValue(Shape):
    """One config, as a name and a string value."""

    name: str
    value: str


class OpenApiDocument(BaseModel):
    """An OpenAPI 3.1 document."""

    model_config = ConfigDict(extra="allow")
    openapi: str
    info: dict[str, Any]
    paths: dict[str, Any]
