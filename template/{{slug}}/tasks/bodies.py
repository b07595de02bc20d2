"""The task API's request bodies. A submit names its processor, and its ``params`` are that
processor's own Struct: one submit shape per deployed processor, told apart by ``processor``
(a msgspec tagged union), so the API validates params strictly and OpenAPI shows each shape."""

from __future__ import annotations

from typing import Annotated, Union
from uuid import UUID

import msgspec
from msgspec import Meta

from .contract import Processor
from .registry import REGISTRY

CaptchaToken = Annotated[str, Meta(max_length=4096)]


class RetryBody(msgspec.Struct, rename="camel", forbid_unknown_fields=True, frozen=True):
    captcha_token: CaptchaToken | None = None


_PROCESSOR_OF: dict[type, Processor] = {}


def _submit_shape(found: Processor) -> type[msgspec.Struct]:
    words = "".join(part.capitalize() for part in found.name.split("-"))
    shape = msgspec.defstruct(
        f"Submit{words}",
        [
            ("request_key", UUID),
            ("file_id", UUID),
            ("params", found.params),
            # Its own field: never part of the fingerprint, never stored.
            ("captcha_token", CaptchaToken | None, None),
        ],
        tag_field="processor",
        tag=found.name,
        rename="camel",
        forbid_unknown_fields=True,
        frozen=True,
        module=__name__,
    )
    _PROCESSOR_OF[shape] = found
    return shape


_SHAPES = tuple(_submit_shape(found) for found in REGISTRY.current())
# A submit of any deployed processor (each at the version new tasks get).
SubmitBody = Union[_SHAPES] if len(_SHAPES) > 1 else _SHAPES[0]  # noqa: UP007 - built from a tuple


def processor_of(body: msgspec.Struct) -> Processor:
    """The processor (name and the version new tasks get) a submit body is for."""
    return _PROCESSOR_OF[type(body)]
