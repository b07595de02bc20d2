"""How the OpenAPI document describes the API's error answers, and who is shown which document.

Every route lists the errors it can answer with (``responses=answers(...)``): each status is
documented with the one envelope ``{"error": {"domain", "code", "message"}}``, the codes
behind it and an example of each, so a client generated from ``/schema/openapi.json`` knows
every answer it can get. The lists are declarations beside each route; the site's own tests
check that every documented error is the envelope, and the harness fuzzes a live site with
all of schemathesis' checks (an answer the document does not describe fails it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

import msgspec
from litestar import Request, get

# Litestar's own Struct schema plugin, extended below; it exports no public name for it.
from litestar._openapi.schema_generation.plugins.struct import StructSchemaPlugin
from litestar.openapi import ResponseSpec
from litestar.openapi.plugins import JsonRenderPlugin
from litestar.openapi.spec import Example

from ..errors import (
    Internal,
    OriginMismatch,
    PayloadTooLarge,
    RateLimited,
    SiteError,
    Unauthenticated,
    Unavailable,
    ValidationFailed,
)
from .guards import OPERATOR_GUARDS

if TYPE_CHECKING:
    from litestar._openapi.schema_generation import SchemaCreator
    from litestar.openapi.spec import Schema
    from litestar.typing import FieldDefinition

Domain = Literal["task", "file", "execution", "auth", "rate", "request"]


class ErrorDetail(msgspec.Struct, rename="camel", frozen=True):
    """What went wrong: ``code`` is stable (one of those listed for the status), ``message`` is for
    people. A 500 carries the ``requestId`` its log line has; a 429 ``retryAfterSeconds``."""

    domain: Domain
    code: str
    message: str
    request_id: str | msgspec.UnsetType = msgspec.UNSET
    retry_after_seconds: int | msgspec.UnsetType = msgspec.UNSET


class ErrorBody(msgspec.Struct, frozen=True):
    """The one envelope of every error answer."""

    error: ErrorDetail


def _example(error: type[SiteError]) -> Example:
    detail: dict[str, object] = {"domain": error.domain, "code": error.code, "message": error.default_message}
    if error is RateLimited:
        detail["retryAfterSeconds"] = RateLimited().retry_after_seconds
    if error is Internal:
        detail["requestId"] = "5f0c2a9e41d7b3c8"
    return Example(summary=f"{error.domain} {error.code}", value={"error": detail})


def answers(*errors: type[SiteError]) -> dict[int, ResponseSpec]:
    """The ``responses=`` of a route that can answer with ``errors`` (and with the failures every
    route shares: 500 ``INTERNAL``, 503 ``UNAVAILABLE`` when the database does not answer)."""
    by_status: dict[int, list[type[SiteError]]] = {}
    for error in (*errors, Internal, Unavailable):
        kinds = by_status.setdefault(error.status, [])
        if error not in kinds:
            kinds.append(error)
    return {
        status: ResponseSpec(
            data_container=ErrorBody,
            generate_examples=False,
            description="; ".join(f"{kind.code} ({kind.domain}): {kind.default_message}" for kind in kinds),
            examples=[_example(kind) for kind in kinds],
        )
        for status, kinds in sorted(by_status.items())
    }


# What the guards of every signed-in route answer: no session, the per-minute quota spent.
SIGNED_IN = (Unauthenticated, RateLimited)
# What the Origin check answers to every POST, PUT, PATCH and DELETE.
MUTATION = (OriginMismatch,)
# A JSON body that does not decode into the route's Struct, or is larger than the JSON limit.
JSON_BODY = (ValidationFailed, PayloadTooLarge)
# A query or path parameter outside its documented constraints.
PARAMETERS = (ValidationFailed,)


class StrictStructSchemaPlugin(StructSchemaPlugin):
    """A request Struct with ``forbid_unknown_fields`` refuses a field it does not name: its schema
    says so (``additionalProperties: false``), so a client or fuzzer does not send one."""

    def is_plugin_supported_field(self, field_definition: FieldDefinition) -> bool:
        return super().is_plugin_supported_field(field_definition) and bool(
            field_definition.type_.__struct_config__.forbid_unknown_fields)

    def to_openapi_schema(self, field_definition: FieldDefinition, schema_creator: SchemaCreator) -> Schema:
        schema = super().to_openapi_schema(field_definition, schema_creator)
        schema.additional_properties = False
        return schema


# The operator console's routes: in the operators' document, never in the public one.
CONSOLE_PREFIX = "/api/ops/"
CONSOLE_TAG = "ops"


def _references(node: Any) -> set[str]:
    if isinstance(node, dict):
        found = {node["$ref"].rsplit("/", 1)[1]} if isinstance(node.get("$ref"), str) else set()
        return found.union(*(_references(value) for value in node.values()))
    if isinstance(node, list):
        return set().union(*(_references(value) for value in node))
    return set()


def public_document(document: dict[str, Any]) -> dict[str, Any]:
    """The document without the console: its paths, its tag and the schemas only it uses. The
    console answers 404 to anyone but an operator; the public document does not give it away."""
    paths = {path: item for path, item in document.get("paths", {}).items() if not path.startswith(CONSOLE_PREFIX)}
    schemas = document.get("components", {}).get("schemas", {})
    kept: set[str] = set()
    pending = _references(paths)
    while pending:
        name = pending.pop()
        if name not in kept and name in schemas:
            kept.add(name)
            pending |= _references(schemas[name])
    public = {**document, "paths": paths}
    if "components" in document:
        public["components"] = {**document["components"], "schemas": {k: v for k, v in schemas.items() if k in kept}}
    if "tags" in document:
        public["tags"] = [tag for tag in document["tags"] if tag.get("name") != CONSOLE_TAG]
    return public


class PublicJsonRenderPlugin(JsonRenderPlugin):
    """``/schema`` and ``/schema/openapi.json``: the public document (see public_document)."""

    def render(self, request: Request, openapi_schema: dict[str, Any]) -> bytes:
        return self.render_json(request, public_document(openapi_schema))


@get("/api/ops/openapi.json", guards=OPERATOR_GUARDS, include_in_schema=False, tags=[CONSOLE_TAG])
async def operators_document(request: Request) -> dict[str, Any]:
    """The whole document, console included, for an operator (anyone else: the 404 of a path that
    does not exist)."""
    return request.app.openapi_schema.to_schema()
