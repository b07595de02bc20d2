"""The processors an owner can start, as the API and the pages describe them."""

from __future__ import annotations

from typing import Any

import msgspec

from ..charges import ledger
from ..settings import ChargesPolicy
from .contract import Processor
from .registry import REGISTRY


class ProcessorOut(msgspec.Struct, rename="camel", frozen=True):
    """One processor new tasks can use. ``paramsSchema`` is the JSON Schema of its ``params``
    (``$defs`` holds any nested shapes); ``resultType`` null means the input's own type."""

    name: str
    version: int
    title: str
    accepts: list[str]
    result_type: str | None
    params_schema: dict[str, Any]
    price: int


def params_schema(found: Processor) -> dict[str, Any]:
    """The params Struct's own schema at the top, its nested ones under ``$defs``."""
    document = msgspec.json.schema(found.params)
    defs = document.get("$defs", {})
    reference = document.get("$ref", "")
    own = defs.pop(reference.rpartition("/")[2], None) if reference.startswith("#/$defs/") else None
    schema = dict(own if own is not None else document)
    if defs:
        schema["$defs"] = defs
    return schema


def enabled(charges: ChargesPolicy) -> list[ProcessorOut]:
    return [
        ProcessorOut(name=found.name, version=found.version, title=found.title, accepts=list(found.accepts),
                     result_type=found.result_type, params_schema=params_schema(found),
                     price=ledger.quote(charges, found.name, found.version))
        for found in REGISTRY.current()
    ]
