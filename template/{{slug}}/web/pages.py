"""Server-rendered pages. They are shells: the data comes from the same JSON API as any other client.

A page needs a live session of this site; without one it redirects to
``/login?next=<path>``. The detail page checks in SQL that the task is the
viewer's own and answers the same 404 page for a foreign or missing id.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any
from urllib.parse import quote
from uuid import UUID

from litestar import Request, Response, Router, get
from litestar.di import Provide
from litestar.params import FromPath, QueryParameter
from litestar.response import Redirect, Template
from litestar.static_files import create_static_files_router
from litestar.status_codes import HTTP_303_SEE_OTHER, HTTP_404_NOT_FOUND

from .. import captcha
from ..auth.sessions import SignedIn
from ..settings import Settings
from ..tasks import store as tasks
from ..tasks.errors import TaskNotFound
from .dependencies import DbPool, NamedDependency, SiteSettings, session_account

HERE = Path(__file__).parent
TEMPLATES = HERE / "templates"
TURNSTILE_SCRIPT = "https://challenges.cloudflare.com/turnstile/v0/api.js"

static_files = create_static_files_router(path="/static", directories=[HERE / "static"], include_in_schema=False)

Viewer = NamedDependency[SignedIn]
# Where the login page goes after signing in (``/login?next=/tasks/…``).
NextPath = Annotated[str | None, QueryParameter(name="next", max_length=1024)]


class SignInRequired(Exception):
    """A page was asked for without a live session of this site."""


def safe_next(path: str | None) -> str:
    """Only a path on this site. Browsers read ``//host`` and ``/\\host`` as another origin, and drop
    tabs and newlines anywhere in a URL first (``/<TAB>/host`` is ``//host``), so a path with a
    backslash or any control character is refused too; the login script checks the origin again."""
    if (path and path.startswith("/") and not path.startswith("//") and "\\" not in path
            and path.isprintable()):
        return path
    return "/files"


def redirect_to_login(request: Request, _: SignInRequired) -> Response:
    return Redirect(f"/login?next={quote(request.url.path)}", status_code=HTTP_303_SEE_OTHER)


async def provide_viewer(request: Request) -> SignedIn:
    """The signed-in account of a page view. Unlike the API's account it spends no rate-limit count:
    the page itself reads nothing; its scripts' API calls are counted as usual."""
    if account := await session_account(request):
        return account
    raise SignInRequired()


def page(name: str, settings: Settings, *, status_code: int = 200, **context: Any) -> Template:
    return Template(
        template_name=name,
        context={
            "site_name": settings.site.name,
            "max_file_bytes": settings.policy.files.max_file_bytes,
            **context,
        },
        status_code=status_code,
        headers={"Cache-Control": "no-store"},
    )


def captcha_widget(settings: Settings, action: captcha.Action) -> dict[str, str] | None:
    """What the page needs to show Turnstile for ``action`` (public values only), or None when it is off."""
    if not captcha.required(settings, action):
        return None
    return {"script": TURNSTILE_SCRIPT, "site_key": settings.policy.captcha.site_key, "action": action}


@get("/")
async def index(request: Request, settings: SiteSettings) -> Redirect:
    signed_in = settings.session_cookie in request.cookies
    return Redirect("/files" if signed_in else "/login", status_code=HTTP_303_SEE_OTHER)


@get("/login")
async def login_page(settings: SiteSettings, next_path: NextPath = None) -> Template:
    return page("login.html", settings, title="Sign in", next=safe_next(next_path))


@get("/reset")
async def reset_page(settings: SiteSettings) -> Template:
    """Ask for a reset link; with one (its token in the fragment), set the new password."""
    return page("reset.html", settings, title="Reset your password")


@get("/verify")
async def verify_page(request: Request, settings: SiteSettings) -> Template:
    """Follow a verification or email-change link (signed in or not); signed in, ask for a new link."""
    viewer = await session_account(request)
    verified = viewer is not None and viewer.email_verified
    return page("verify.html", settings, title="Confirm your email address", viewer=viewer, verified=verified)


@get("/files")
async def files_page(viewer: Viewer, settings: SiteSettings) -> Template:
    return page("files.html", settings, title="Files", viewer=viewer, current="files")


@get("/tasks")
async def tasks_page(viewer: Viewer, settings: SiteSettings) -> Template:
    return page("tasks.html", settings, title="Tasks", viewer=viewer, current="tasks",
                captcha=captcha_widget(settings, "task_submit"))


@get("/tasks/{task_id:uuid}")
async def task_page(task_id: FromPath[UUID], viewer: Viewer, pool: DbPool, settings: SiteSettings) -> Template:
    try:
        async with pool.acquire() as conn:
            await tasks.get_task(conn, viewer.id, task_id)
    except TaskNotFound:
        return page("not_found.html", settings, title="Task not found", viewer=viewer, current="tasks",
                    status_code=HTTP_404_NOT_FOUND)
    return page("task.html", settings, title="Task", viewer=viewer, current="tasks", task_id=str(task_id),
                captcha=captcha_widget(settings, "task_retry"))


@get("/account")
async def account_page(viewer: Viewer, settings: SiteSettings) -> Template:
    policy = settings.policy
    return page("account.html", settings, title="Account", viewer=viewer, current="account",
                charges_enabled=policy.charges.enabled, files_enabled=policy.files.enabled)


pages_router = Router(
    path="/",
    route_handlers=[index, login_page, reset_page, verify_page, files_page, tasks_page, task_page, account_page],
    dependencies={"viewer": Provide(provide_viewer)},
    exception_handlers={SignInRequired: redirect_to_login},
    include_in_schema=False,
)
