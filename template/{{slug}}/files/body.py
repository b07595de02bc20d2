"""Receiving an upload's body: streamed to a temporary file, hashed on the way, within the size limit.

Nothing of the body is held in memory beyond one chunk: a raw body and the file part of a
multipart form (parsed as it arrives by ``multipart``'s push parser, the parser Litestar
itself uses) go straight to an anonymous temporary file, which storage then reads from.
The caller bounds the whole receive with a deadline.
"""

from __future__ import annotations

import hashlib
import tempfile
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import IO

from multipart import MultipartError, MultipartSegment, PushMultipartParser, parse_options_header

from .errors import FileRejected, FileTooLarge

FIELD_BYTES = 4096  # the form's text fields (the name); the file part is bounded by the size limit
FORM_SEGMENTS = 8


@dataclass(frozen=True)
class Received:
    """A complete body: an open temporary file at position 0 (deleted when closed), its size and digest."""

    file: IO[bytes]
    size: int
    sha256: bytes

    def close(self) -> None:
        self.file.close()


class _Sink:
    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.size = 0
        self.digest = hashlib.sha256()
        # Anonymous (already unlinked): nothing is left on disk whatever happens to the process.
        self.file = tempfile.TemporaryFile()  # noqa: SIM115 - closed by Received.close or on failure

    def write(self, data: bytes) -> None:
        self.size += len(data)
        if self.size > self.limit:
            raise FileTooLarge.over(self.limit)
        self.digest.update(data)
        self.file.write(data)  # to the page cache; a chunk is at most the server's read size

    def finish(self) -> Received:
        if not self.size:
            raise FileRejected("The file is empty.")
        self.file.flush()
        self.file.seek(0)
        return Received(file=self.file, size=self.size, sha256=self.digest.digest())


async def receive_raw(chunks: AsyncIterator[bytes], limit: int) -> Received:
    """The whole request body as the file, refused as soon as it passes ``limit`` bytes."""
    sink = _Sink(limit)
    try:
        async for chunk in chunks:
            sink.write(chunk)
        return sink.finish()
    except BaseException:
        sink.file.close()
        raise


@dataclass(frozen=True)
class Form:
    name: str | None
    content_type: str | None
    received: Received


async def receive_form(chunks: AsyncIterator[bytes], content_type: str, limit: int) -> Form:
    """A multipart form: the field ``file`` (within ``limit``) and an optional text field ``name``."""
    boundary = parse_options_header(content_type)[1].get("boundary")
    if not boundary:
        raise FileRejected("The form has no boundary.")
    sink: _Sink | None = None
    try:
        file_name, file_type, name = None, None, None
        text = bytearray()
        field: str | None = None
        with PushMultipartParser(boundary, max_segment_count=FORM_SEGMENTS, max_header_size=FIELD_BYTES,
                                 max_header_count=8) as parser:
            async for chunk in chunks:
                for event in parser.parse(chunk):
                    if isinstance(event, MultipartSegment):
                        field = event.name
                        if field == "name":
                            text.clear()  # a repeated field: the last one counts
                        if field == "file" and sink is None:
                            sink, file_name, file_type = _Sink(limit), event.filename, event.content_type
                        elif field == "file":
                            raise FileRejected("Send one file per request.")
                    elif event is None:
                        if field == "name":
                            name = text.decode("utf-8", errors="replace")
                        field = None
                    elif field == "file" and sink is not None:
                        sink.write(event)
                    elif field == "name":
                        text += event
                        if len(text) > FIELD_BYTES:
                            raise FileRejected("The name field is too long.")
        if sink is None:
            raise FileRejected("Send the file in a form field named 'file'.")
        return Form(name=name or file_name, content_type=file_type, received=sink.finish())
    except BaseException as error:
        if sink is not None:
            sink.file.close()
        if isinstance(error, MultipartError):
            raise FileRejected("The form could not be read.") from None
        raise
