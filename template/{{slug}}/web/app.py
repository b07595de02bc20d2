"""The Litestar application factory."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from litestar import Litestar
from litestar.openapi import OpenAPIConfig
from litestar.plugins.jinja import JinjaTemplateEngine
from litestar.template import TemplateConfig

from ..auth.routes import AuthController, MeController
from ..charges.routes import get_credits, list_entries
from ..files.routes import FilesController, upload_route
from ..links.routes import EmailChangeController, LinksController
from ..metrics.exposition import HttpMetrics
from ..metrics.routes import metrics
from ..ops.routes import OpsController
from ..runtime import open_runtime
from ..settings import Settings
from ..tasks.routes import TasksController, list_processors
from .dependencies import DEPENDENCIES
from .dev_pages import dev_mail_page
from .errors import EXCEPTION_HANDLERS
from .guards import count_uncounted_request
from .health import healthz, readyz
from .middleware import OriginCheckMiddleware, RequestIdMiddleware, response_headers
from .openapi import PublicJsonRenderPlugin, StrictStructSchemaPlugin, operators_document
from .ops_pages import ops_router
from .pages import TEMPLATES, pages_router, static_files

# JSON bodies are small; uploads stream through their own handler with its own limit.
MAX_JSON_BODY = 64 * 1024


def create_app(settings: Settings) -> Litestar:
    settings.require_database_url()
    settings.require_secret_key()
    if settings.captcha_enabled:
        settings.require_captcha_secret()

    http_metrics = HttpMetrics()

    @asynccontextmanager
    async def lifespan(app: Litestar) -> AsyncIterator[None]:
        async with open_runtime(settings) as runtime:
            app.state.runtime = runtime
            app.state.http_metrics = http_metrics
            yield

    return Litestar(
        route_handlers=[
            AuthController,
            MeController,
            LinksController,
            EmailChangeController,
            FilesController,
            upload_route(settings.policy.files),
            TasksController,
            list_processors,
            get_credits,
            list_entries,
            OpsController,
            operators_document,
            metrics,
            healthz,
            readyz,
            pages_router,
            ops_router,
            static_files,
            # only under `dev`, which runs the SMTP sink whose mailbox this page lists
            *([dev_mail_page] if settings.env.dev_mailbox else []),
        ],
        dependencies=DEPENDENCIES,
        exception_handlers=EXCEPTION_HANDLERS,
        middleware=[http_metrics.middleware, RequestIdMiddleware(), OriginCheckMiddleware(settings.origin)],
        before_send=[response_headers(settings)],
        after_exception=[count_uncounted_request],
        lifespan=[lifespan],
        # Only the document (/schema and /schema/openapi.json), without the console: Litestar's viewers
        # load their scripts from CDNs, which the CSP refuses, and no package ships them for offline use.
        openapi_config=OpenAPIConfig(title=settings.site.name, version="1.0.0", path="/schema",
                                     render_plugins=[PublicJsonRenderPlugin()]),
        plugins=[StrictStructSchemaPlugin()],
        template_config=TemplateConfig(directory=TEMPLATES, engine=JinjaTemplateEngine),
        request_max_body_size=MAX_JSON_BODY,
        logging_config=None,
    )
