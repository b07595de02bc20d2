"""The clients: accounts that submit steadily over real HTTP while processes die under them.

Each account keeps ``in_flight`` tasks active (below the site's ``max_active``),
polls them until they end and submits the next. A submit that got no answer —
the connection was refused or cut because the web process died — is sent
again with the same request key until an answer comes; so is a 503. Behind a
reverse proxy (``verify --proxy``) the proxy answers 502 or 504 in place of the
refused or cut connection: the same lost response. A 429 backs off and sends
again. Every request key sent is recorded with what its task must produce.
"""

from __future__ import annotations

import asyncio
import random
import secrets
import time
import uuid
from dataclasses import dataclass, field
from typing import NamedTuple

import httpx

from harness.bench.accounts import register_funded, site_client, site_policy, upload_text
from harness.state import SiteRecord

from .inputs import COUNT_UNITS, counted, normalized, texts
from .results import LoadStats

WORD_COUNT = "word-count"
PASSWORD = "chaos password 1"
TERMINAL = frozenset({"succeeded", "failed", "canceled"})
POLL_PAUSE = 0.5  # between polls of an account's active tasks
RESEND_PAUSE = 0.25  # before a submit is sent again (the web process may be restarting)
BACKOFF_LIMIT = 5.0  # the longest a 429 is waited out at once (it says 60 s)
# After the load ends, a submit without an answer is sent again for this long (a web
# restart on a loaded machine takes seconds, not minutes).
ANSWER_GRACE = 120.0
# A reverse proxy's own answer when the site gave none (refused or cut): a lost response. The sites
# themselves never answer these.
GATEWAY_ERRORS = frozenset({502, 504})


class LoadError(RuntimeError):
    """An account could not be set up (registration or upload refused)."""


@dataclass
class Submitted:
    """One request key: what was asked, what its task must produce, and how it was answered."""

    request_key: str
    account_id: str
    file_id: str
    processor: str
    params: dict
    expected: bytes
    task_id: str | None = None
    answer: int | None = None  # 201 or 200
    lost: int = 0  # sends that got no answer


class Heard(NamedTuple):
    """One answer a client got (``status`` 0: none, the connection refused or cut), when (wall clock)."""

    at: float
    status: int
    retry_after: bool  # the answer said when to come back


@dataclass
class Account:
    site: SiteRecord
    http: httpx.AsyncClient
    id: str
    inputs: list[tuple[str, bytes]]  # (file id, bytes)
    rng: random.Random
    # the documented word-count processor, where the site deploys it: a third of the load is mixed in
    counts: bool = False
    submitted: list[Submitted] = field(default_factory=list)
    heard: list[Heard] = field(default_factory=list)  # every answer of a submit, a poll or a download, in order
    downloads: bool = False  # download each result as its task succeeds (storage read under the load)

    def hear(self, response: httpx.Response | None) -> None:
        if response is None:
            self.heard.append(Heard(time.time(), 0, False))
        else:
            self.heard.append(Heard(time.time(), response.status_code, "retry-after" in response.headers))

    def next_request(self) -> Submitted:
        file_id, data = self.rng.choice(self.inputs)
        if self.counts and self.rng.random() < 1 / 3:
            unit = self.rng.choice(COUNT_UNITS)
            processor, params, expected = WORD_COUNT, {"unit": unit}, counted(data, unit)
        else:
            trim = self.rng.random() < 0.5
            processor, params, expected = "text-normalize", {"trimTrailingWhitespace": trim}, normalized(data, trim)
        request = Submitted(request_key=str(uuid.uuid4()), account_id=self.id, file_id=file_id, processor=processor,
                            params=params, expected=expected)
        self.submitted.append(request)
        return request


def submit_body(request: Submitted) -> dict:
    return {"requestKey": request.request_key, "processor": request.processor, "fileId": request.file_id,
            "params": request.params}


def in_flight(site: SiteRecord) -> int:
    """Tasks an account keeps active: a few, always below the site's limit."""
    return max(1, min(3, int(site_policy(site)["tasks"]["max_active"]) - 1))


def retry_after(response: httpx.Response) -> float:
    try:
        return min(float(response.headers.get("Retry-After", "1")), BACKOFF_LIMIT)
    except ValueError:
        return BACKOFF_LIMIT


async def open_account(site: SiteRecord, index: int, seed: int) -> Account:
    """A fresh account (funded on a priced site) with its texts uploaded."""
    http = site_client(site)
    try:
        email = f"chaos-{index}-{secrets.token_hex(4)}@example.com"
        account_id = await register_funded(http, site, email, PASSWORD, error=LoadError)
        inputs = [(await upload_text(http, site, f"chaos-{index}-{number}.txt", data, error=LoadError), data)
                  for number, data in enumerate(texts(site.slug, index))]
        listed = await http.get("/api/processors")
        counts = listed.status_code == 200 and any(found["name"] == WORD_COUNT for found in listed.json())
    except BaseException:
        await http.aclose()
        raise
    return Account(site=site, http=http, id=account_id, inputs=inputs,
                   rng=random.Random(f"{seed}:{site.slug}:{index}"), counts=counts)


def _error_code(response: httpx.Response) -> str:
    try:
        return response.json()["error"]["code"]
    except (ValueError, KeyError, TypeError):
        return "?"


async def submit(account: Account, request: Submitted, stats: LoadStats, findings: list[str],
                 give_up_at: float) -> dict | None:
    """Send the submit until it is answered with its task; None if it was refused (no task made)."""
    try:
        return await _send_until_answered(account, request, stats, findings, give_up_at)
    finally:
        if request.lost:
            stats.lost_responses += 1


async def _send_until_answered(account: Account, request: Submitted, stats: LoadStats, findings: list[str],
                               give_up_at: float) -> dict | None:
    while True:
        try:
            response = await account.http.post("/api/tasks", json=submit_body(request))
        except httpx.TransportError as error:
            response, cut = None, not isinstance(error, httpx.ConnectError | httpx.ConnectTimeout)
        else:
            cut = False  # the proxy cannot tell us whether the site refused the connection or cut it
        account.hear(response)
        if response is None or response.status_code in GATEWAY_ERRORS:
            request.lost += 1
            stats.resends += 1
            stats.cut += cut
            if time.monotonic() > give_up_at:
                findings.append(f"request {request.request_key}: no answer after {request.lost} sends")
                return None
            await asyncio.sleep(RESEND_PAUSE)
            continue
        status = response.status_code
        if status in (200, 201):
            task = response.json()
            request.task_id, request.answer = task["id"], status
            if status == 200 and not request.lost:
                findings.append(f"request {request.request_key}: a new request key answered 200 (task {task['id']})")
            elif status == 200:
                stats.found_on_resend += 1
            return task
        if status == 429:
            stats.rate_limited += 1
            await asyncio.sleep(retry_after(response))
            continue
        if status == 503:
            stats.unavailable += 1
            await asyncio.sleep(RESEND_PAUSE)
            continue
        findings.append(f"request {request.request_key}: submit answered {status} {_error_code(response)}")
        if status < 500 or time.monotonic() > give_up_at:
            return None  # a refusal makes no task; an unexpected 5xx is sent again (the task may exist)
        await asyncio.sleep(RESEND_PAUSE)


async def poll(account: Account, active: dict[str, Submitted], findings: list[str]) -> None:
    """Forget the tasks that ended; a poll the web process cannot answer now is tried next round."""
    for task_id in list(active):
        try:
            response = await account.http.get(f"/api/tasks/{task_id}")
        except httpx.TransportError:
            account.hear(None)
            return
        account.hear(response)
        if response.status_code in GATEWAY_ERRORS:
            return
        if response.status_code == 200:
            task = response.json()
            if task["status"] in TERMINAL:
                del active[task_id]
                if account.downloads and task["result"] is not None:
                    await _download(account, task["result"]["fileId"])
        elif response.status_code not in (429, 503):
            findings.append(f"task {task_id}: detail answered {response.status_code} {_error_code(response)}")
            del active[task_id]


async def _download(account: Account, file_id: str) -> None:
    """One read of a result; its answer is only heard (the campaign checks every result's bytes at the end)."""
    try:
        response = await account.http.get(f"/api/files/{file_id}/content")
    except httpx.TransportError:
        response = None
    account.hear(response)


async def run_account(account: Account, target: int, until: float, stats: LoadStats, findings: list[str],
                      stop: asyncio.Event | None = None) -> None:
    """Until ``until`` (monotonic) or ``stop``: keep ``target`` tasks active; a submit under way is answered
    first."""
    active: dict[str, Submitted] = {}
    while time.monotonic() < until and not (stop and stop.is_set()):
        if len(active) < target:
            request = account.next_request()
            stats.submits += 1
            task = await submit(account, request, stats, findings, give_up_at=until + ANSWER_GRACE)
            if task is None:
                await asyncio.sleep(RESEND_PAUSE)
            elif task["status"] not in TERMINAL:
                active[task["id"]] = request
        else:
            await poll(account, active, findings)
            await asyncio.sleep(POLL_PAUSE)
