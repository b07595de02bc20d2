"""Captcha (Cloudflare Turnstile), verified server-side. Off unless ``[captcha] provider = "turnstile"``.

The token arrives in its own request field; it is sent to the verifier once
and is never part of a fingerprint, stored, or logged.
"""

from __future__ import annotations

import logging
from typing import Literal
from urllib.parse import urlsplit

import httpx

from .errors import CaptchaFailed, Unavailable
from .settings import Settings

log = logging.getLogger(__name__)

Action = Literal["task_submit", "task_retry"]
VERIFY_TIMEOUT = 5.0


def required(settings: Settings, action: Action) -> bool:
    return settings.captcha_enabled and action in settings.policy.captcha.actions


async def verify(settings: Settings, action: Action, token: str | None, remote_ip: str | None) -> None:
    """Pass, or raise CaptchaFailed (refused, wrong action, missing) / Unavailable (verifier unreachable)."""
    if not required(settings, action):
        return
    if not token:
        raise CaptchaFailed("Complete the captcha check first.")
    form = {"secret": settings.require_captcha_secret(), "response": token}
    if remote_ip:
        form["remoteip"] = remote_ip
    try:
        async with httpx.AsyncClient(timeout=VERIFY_TIMEOUT) as client:
            response = await client.post(settings.env.captcha_verify_url, data=form)
        outcome = response.json() if response.status_code == 200 else None
    except (httpx.HTTPError, ValueError) as error:
        log.warning("captcha verifier unreachable: %s", type(error).__name__)
        raise Unavailable("The captcha check is unavailable. Please try again.") from None
    if not isinstance(outcome, dict):
        log.warning("captcha verifier answered %d", response.status_code)
        raise Unavailable("The captcha check is unavailable. Please try again.")
    # A token solved on another site that shares our site key (or a page copied elsewhere)
    # names that site's host: only a challenge served on this site's own origin counts.
    if (outcome.get("success") is not True or outcome.get("action") != action
            or outcome.get("hostname") != urlsplit(settings.origin).hostname):
        raise CaptchaFailed()
