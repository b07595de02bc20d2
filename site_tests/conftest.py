"""site_tests: scenarios run by the harness against live generated sites.

The harness points SITEKIT_STATE at its state folder; ``sites.json`` there says
where every site, database, broker and bucket is. Tests talk to sites only
over HTTP, and look behind them only through the services' own protocols
(SQL, S3, the broker) — never through site code.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, sync_playwright

from harness import state
from harness.state import SiteRecord, SitesFile

from .browser import launch, require_chromium
from .client import SiteClient, policy


def _load() -> SitesFile:
    folder = os.environ.get("SITEKIT_STATE")
    if not folder:
        raise pytest.UsageError("site_tests run against live sites: use `python -m harness verify`")
    return state.load(Path(folder))


RUN = _load()


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "disruptive: stops, restarts or breaks a site's processes or storage; the harness runs these "
        "after the others, one at a time per site",
    )


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # Disruptive scenarios of one site must not overlap: with --dist loadgroup
    # each site's group runs on one worker, sites in parallel.
    for item in items:
        if item.get_closest_marker("disruptive") and hasattr(item, "callspec"):
            site = item.callspec.params.get("site")
            if site is not None:
                item.add_marker(pytest.mark.xdist_group(site.slug))


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "site" in metafunc.fixturenames:
        metafunc.parametrize("site", RUN.sites, ids=[s.slug for s in RUN.sites])
    if "priced_site" in metafunc.fixturenames:
        priced = [s for s in RUN.sites if policy(s)["charges"]["enabled"]]
        metafunc.parametrize("priced_site", priced, ids=[s.slug for s in priced])
    if "pair" in metafunc.fixturenames:
        pairs = list(itertools.permutations(RUN.sites, 2))
        metafunc.parametrize("pair", pairs, ids=[f"{a.slug}-{b.slug}" for a, b in pairs])


@pytest.fixture(scope="session")
def run() -> SitesFile:
    return RUN


@pytest.fixture(scope="session")
def state_dir() -> Path:
    return Path(os.environ["SITEKIT_STATE"])


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """Chromium, trusting this run's certificate behind the proxy. Module scope: playwright's sync
    API holds an event loop on this thread while it runs, so it lives only as long as one module's
    tests do."""
    require_chromium()
    with sync_playwright() as playwright:
        chromium = launch(playwright, RUN.proxy.spki if RUN.proxy is not None else None)
        yield chromium
        chromium.close()


@pytest.fixture
def client(site: SiteRecord):
    """A signed-out client for ``site`` that sends the site's Origin on every request."""
    with SiteClient(site) as c:
        yield c


@pytest.fixture
def user(client: SiteClient) -> SiteClient:
    """A client signed in as a fresh account."""
    client.register()
    return client
