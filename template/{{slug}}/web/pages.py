"""Server-rendered pages. They call the same JSON API as any other client."""

from __future__ import annotations

from pathlib import Path

from litestar import get
from litestar.response import Redirect, Template
from litestar.static_files import create_static_files_router

from ..settings import Settings
from .dependencies import SiteSettings

HERE = Path(__file__).parent
TEMPLATES = HERE / "templates"

static_files = create_static_files_router(path="/static", directories=[HERE / "static"], include_in_schema=False)


def page(name: str, settings: Settings, **context) -> Template:
    return Template(
        template_name=name,
        context={"site_name": settings.site.name, "origin": settings.origin, **context},
        headers={"Cache-Control": "no-store"},
    )


@get("/", include_in_schema=False)
async def index() -> Redirect:
    return Redirect("/login")


@get("/login", include_in_schema=False)
async def login_page(settings: SiteSettings) -> Template:
    return page("login.html", settings, title="Sign in")
