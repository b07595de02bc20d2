"""GET /metrics: Prometheus text format, for a scraper holding METRICS_TOKEN."""

from __future__ import annotations

import hmac

from litestar import Request, Response, get
from prometheus_client import CONTENT_TYPE_LATEST

from ..errors import NotFound, Unauthenticated
from ..web.dependencies import DbPool, SiteSettings, runtime_of
from ..web.health import readiness
from .exposition import render


@get("/metrics", include_in_schema=False)
async def metrics(request: Request, pool: DbPool, settings: SiteSettings) -> Response[bytes]:
    """Without a configured token the endpoint does not exist; with one, only its bearer may read."""
    token = settings.env.metrics_token
    if not token:
        raise NotFound()
    given = request.headers.get("authorization", "")
    if not hmac.compare_digest(given.encode(), f"Bearer {token}".encode()):
        raise Unauthenticated("A valid metrics token is required.")
    body = await render(pool, request.app.state.http_metrics, readiness(request.app.state, runtime_of(request)))
    return Response(body, media_type=CONTENT_TYPE_LATEST, headers={"Cache-Control": "no-store"})
