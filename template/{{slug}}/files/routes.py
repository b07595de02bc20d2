"""HTTP routes for files."""

from __future__ import annotations

import asyncio
import base64
import codecs
from typing import Annotated
from uuid import UUID

import msgspec
from litestar import Controller, Request, Response, delete, get, post
from litestar.connection import ASGIConnection
from litestar.handlers import BaseRouteHandler
from litestar.openapi import ResponseSpec
from litestar.params import FromPath, QueryParameter
from litestar.response import Stream
from litestar.status_codes import HTTP_201_CREATED, HTTP_202_ACCEPTED, HTTP_204_NO_CONTENT

from ..errors import EmailUnverified, PayloadTooLarge
from ..settings import FilesPolicy
from ..web.dependencies import CurrentAccount, DbPool, Objects, SiteSettings, runtime_of
from ..web.guards import ACCOUNT_GUARDS, email_verified
from ..web.openapi import MUTATION, PARAMETERS, SIGNED_IN, answers
from ..web.paging import Cursor, Page, read_page
from . import store
from .body import receive_form, receive_raw
from .deletion import delete_file
from .errors import (
    FileContentLost,
    FileInUse,
    FileNotFound,
    FileRejected,
    FilesDisabled,
    FilesNotConfigured,
    FileTooLarge,
    QuotaExceeded,
    StorageUnavailable,
    UploadsBusy,
    UploadTooSlow,
)
from .names import clean_content_type, clean_name, content_disposition
from .objects import ObjectMissing
from .openapi import NAME_QUERY_CHARS, upload_operation
from .slots import UploadSlots
from .store import FileOut
from .uploads import check_headroom, store_upload

PREVIEW_BYTES = 64 * 1024
MULTIPART_OVERHEAD = 64 * 1024


class Preview(msgspec.Struct, rename="camel", frozen=True):
    text: str
    truncated: bool
    encoding_error: bool


class Usage(msgspec.Struct, rename="camel", frozen=True):
    """Storage the account's files take (ready ones, uploads under way and results being written) of
    the site's per-account quota."""

    used_bytes: int
    quota_bytes: int


class DeletePending(msgspec.Struct, frozen=True):
    status: str = "deleting"


async def storage_configured(connection: ASGIConnection, _: BaseRouteHandler) -> None:
    if runtime_of(connection).objects is None:
        raise FilesNotConfigured()


async def files_enabled(connection: ASGIConnection, _: BaseRouteHandler) -> None:
    if not runtime_of(connection).settings.policy.files.enabled:
        raise FilesDisabled()


def upload_route(policy: FilesPolicy):
    """The upload handler, with a body limit of the site's maximum file size (plus form overhead)
    and this process's upload slots (an account's share of them capped: files/slots.py)."""
    slots = UploadSlots(policy.concurrent_uploads)

    @post("/api/files", status_code=HTTP_201_CREATED, tags=["files"],
          guards=[*ACCOUNT_GUARDS, email_verified, files_enabled, storage_configured],
          request_max_body_size=policy.max_file_bytes + MULTIPART_OVERHEAD, operation_class=upload_operation(policy),
          responses=answers(*SIGNED_IN, *MUTATION, EmailUnverified, FilesDisabled, FilesNotConfigured, FileRejected,
                            FileTooLarge, PayloadTooLarge, QuotaExceeded, UploadsBusy, UploadTooSlow,
                            StorageUnavailable))
    async def upload_file(request: Request, account: CurrentAccount, pool: DbPool, objects: Objects,
                          name: Annotated[str | None, QueryParameter(max_length=NAME_QUERY_CHARS)] = None) -> FileOut:
        """Store a file: raw body (``?name=`` + Content-Type) or a multipart form (field ``file``)."""
        form = request.content_type[0] == "multipart/form-data"
        header = request.headers.get("content-type") or ""
        if not form:
            clean_content_type(header, policy.allowed_types)  # refuse before reading the body
        # The slot is held until the object is stored, so at most this many temporary files
        # exist per process, whatever storage's speed.
        with slots.take(account.id):
            length = request.headers.get("content-length", "")
            if length.isascii() and length.isdigit() and int(length) > 0:
                announced = int(length)
                if not form and announced > policy.max_file_bytes:
                    raise FileTooLarge.over(policy.max_file_bytes)
                # A form's file is at least its body less the room the other fields may take.
                at_least = max(announced - MULTIPART_OVERHEAD, 1) if form else announced
                await check_headroom(pool, policy, account.id, at_least)
            try:
                async with asyncio.timeout(policy.receive_seconds):
                    if form:
                        received = await receive_form(request.stream(), header, policy.max_file_bytes)
                        name, content_type = name or received.name, received.content_type
                        body = received.received
                    else:
                        body, content_type = await receive_raw(request.stream(), policy.max_file_bytes), header
            except TimeoutError:
                raise UploadTooSlow() from None
            try:
                return await store_upload(
                    pool, objects, policy, account.id, clean_name(name),
                    clean_content_type(content_type, policy.allowed_types), body,
                )
            finally:
                body.close()

    return upload_file


class FilesController(Controller):
    path = "/api/files"
    tags = ["files"]
    guards = ACCOUNT_GUARDS

    @get("/", responses=answers(*SIGNED_IN, *PARAMETERS))
    async def list_files(self, account: CurrentAccount, pool: DbPool, cursor: Cursor = None) -> Page[FileOut]:
        """Ready, unexpired files of the signed-in account, newest first, 20 a page."""
        return await read_page(pool, cursor,
                               lambda conn, after, limit: store.list_ready(conn, account.id, after, limit),
                               key=lambda file: (file.created_at, file.id))

    @get("/usage", responses=answers(*SIGNED_IN))
    async def usage(self, account: CurrentAccount, pool: DbPool, settings: SiteSettings) -> Usage:
        """How much of the quota the signed-in account's files take."""
        async with pool.acquire() as conn:
            used = await store.used_bytes(conn, account.id)
        return Usage(used_bytes=used, quota_bytes=settings.policy.files.quota_bytes)

    @get("/{file_id:uuid}", responses=answers(*SIGNED_IN, *PARAMETERS, FileNotFound))
    async def get_file(self, file_id: FromPath[UUID], account: CurrentAccount, pool: DbPool) -> FileOut:
        async with pool.acquire() as conn:
            return (await store.get_ready(conn, file_id, account.id)).public

    @get("/{file_id:uuid}/preview", guards=[storage_configured],
         responses=answers(*SIGNED_IN, *PARAMETERS, FilesNotConfigured, FileNotFound, FileContentLost,
                           StorageUnavailable))
    async def preview_file(self, file_id: FromPath[UUID], account: CurrentAccount, pool: DbPool,
                           objects: Objects) -> Preview:
        """The first 64 KiB as UTF-8 text; undecodable bytes are reported, not fatal."""
        async with pool.acquire() as conn:
            stored = await store.get_ready(conn, file_id, account.id)
        try:
            data = await objects.read(stored.object_key, PREVIEW_BYTES)
        except ObjectMissing:
            raise FileContentLost() from None
        truncated = stored.public.size > PREVIEW_BYTES
        try:
            # A multi-byte character cut by the 64 KiB boundary is not an error.
            text = codecs.getincrementaldecoder("utf-8")("strict").decode(data, final=not truncated)
            encoding_error = False
        except UnicodeDecodeError:
            text, encoding_error = data.decode("utf-8", errors="replace"), True
        return Preview(text=text, truncated=truncated, encoding_error=encoding_error)

    @get("/{file_id:uuid}/content", guards=[storage_configured],
         responses=answers(*SIGNED_IN, *PARAMETERS, FilesNotConfigured, FileNotFound, FileContentLost,
                           StorageUnavailable))
    async def download_file(self, file_id: FromPath[UUID], account: CurrentAccount, pool: DbPool, objects: Objects,
                            settings: SiteSettings) -> Stream:
        """The exact bytes, as an attachment."""
        async with pool.acquire() as conn:
            stored = await store.get_ready(conn, file_id, account.id)
        try:
            chunks = await objects.stream(stored.object_key, settings.policy.files.download_seconds)
        except ObjectMissing:
            raise FileContentLost() from None
        public = stored.public
        digest = base64.b64encode(bytes.fromhex(public.sha256)).decode()
        return Stream(
            chunks,
            media_type=public.content_type,
            headers={
                "Content-Length": str(public.size),
                "Content-Disposition": content_disposition(public.name),
                "X-Content-Type-Options": "nosniff",
                "Cache-Control": "private, no-store",
                "Repr-Digest": f"sha-256=:{digest}:",
            },
        )

    @delete("/{file_id:uuid}", status_code=HTTP_202_ACCEPTED, guards=[storage_configured],
            responses={204: ResponseSpec(None, description="The file and its contents are gone."),
                       **answers(*SIGNED_IN, *MUTATION, *PARAMETERS, FilesNotConfigured, FileNotFound,
                                 FileInUse)})
    async def delete_file(self, file_id: FromPath[UUID], account: CurrentAccount, pool: DbPool,
                          objects: Objects) -> Response:
        """204 when the file is gone; 202 when storage failed and maintenance will finish the removal."""
        if await delete_file(pool, objects, account.id, file_id):
            return Response(None, status_code=HTTP_204_NO_CONTENT)
        return Response(DeletePending(), status_code=HTTP_202_ACCEPTED)
