"""Fuzzing every site's API from its own OpenAPI schema (schemathesis) with every check it has:
no 5xx, every answer (errors included) one the document describes, schema-valid requests accepted
and schema-violating ones refused, 405 with ``Allow``; every error in the envelope.

One signed-in account per site, made an operator (through the site's own command line) so it reads
the operators' document (the public one plus the console's ``/api/ops`` routes) and the console is
fuzzed past its guard too; operations that end the session (logout, password change, signing out
everywhere, account deletion) are left to the scenario tests so they do not sign the fuzzer out
halfway. The counts of each run are written to ``<state>/fuzz/<site>-<worker>.json``.
"""

from __future__ import annotations

import collections
import json
import os
import secrets
from pathlib import Path

import pytest
import requests
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.specs.openapi.checks import unsupported_method

from harness.state import SiteRecord

from .client import SiteClient
from .conftest import RUN
from .operator import run_cli

DOMAINS = {"task", "file", "execution", "auth", "rate", "request"}
# A site stores any file's bytes as sent: a PDF upload is bytes like any other.
schemathesis.serializer.alias("application/pdf", "application/octet-stream")
EXAMPLES_PER_OPERATION = 30
# schemathesis' defaults, plus 413 among the answers to data the schema refuses: a body larger
# than the site's largest file is refused with 413, as RFC 9110 says.
CONFIG = schemathesis.config.SchemathesisConfig.from_dict({
    "checks": {"negative_data_rejection": {"expected-statuses": [
        "400", "401", "403", "404", "405", "406", "409", "413", "415", "422", "428", "429", "5xx"]}},
})


def _session(site: SiteRecord) -> requests.Session:
    email = f"fuzz-{secrets.token_hex(5)}@example.com"
    with SiteClient(site) as client:
        client.register(email, funded=False)  # where the site asks, its mailed link followed
        token = client.session_token
    granted = run_cli(site, "operator", "grant", email)
    assert granted.returncode == 0, granted.stdout + granted.stderr
    session = requests.Session()
    session.headers["Origin"] = site.origin
    session.cookies.set(site.cookie_name, token)
    return session


def _fuzz_test(site: SiteRecord):
    # Made when the site's test runs, not when this module is collected: every pytest process of a
    # run collects it (both phases, every worker), and schemathesis builds an operation's examples as
    # its test is made — about 10 s of CPU a site, and an account and an operator grant each time.
    signed_in: dict[str, requests.Session] = {}
    fixture_name = f"fuzz_schema_{site.slug}"

    @pytest.fixture(name=fixture_name)
    def operators_document(request: pytest.FixtureRequest) -> schemathesis.schemas.BaseSchema:
        # schemathesis (4.32) names each operation's subtest through the item's ``_nodeid``, which
        # pytest 9 no longer has (its ``nodeid`` is read-only): give the item one to read and write.
        request.node._nodeid = request.node.nodeid
        session = signed_in["session"] = _session(site)
        # The operators' document: the public one (/schema/openapi.json) and the console's routes.
        return schemathesis.openapi.from_url(f"{site.base_url}/api/ops/openapi.json", verify=site.ca_file or True,
                                             config=CONFIG, cookies=session.cookies)

    globals()[f"_{fixture_name}"] = operators_document
    # The lazy schema's filters are the ones applied (it replaces those of the schema it loads).
    schema = (
        schemathesis.pytest.from_fixture(fixture_name)
        .exclude(path="/api/auth/logout")
        .exclude(path="/api/me/password")
        .exclude(path="/api/me/sessions/end")
        .exclude(method="DELETE", path="/api/me")
    )
    seen: collections.Counter[str] = collections.Counter()
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    out = Path(os.environ["SITEKIT_STATE"]) / "fuzz" / f"{site.slug}-{worker}.json"

    @schema.parametrize()
    @settings(max_examples=EXAMPLES_PER_OPERATION, deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck))
    def test(case) -> None:
        session = signed_in["session"]
        verify = site.ca_file or True
        response = case.call(base_url=site.base_url, session=session, timeout=30, verify=verify)
        seen[f"{case.method} {case.path} {response.status_code}"] += 1
        out.parent.mkdir(exist_ok=True)
        out.write_text(json.dumps({"cases": sum(seen.values()), "outcomes": dict(sorted(seen.items()))}, indent=1))
        # Every check schemathesis has (as `st run --checks all`): no 5xx, and every answer — errors
        # included — is one the document describes, with the schema it gives.
        # Behind the proxy, nginx answers TRACE itself before any location (405, without Allow): the
        # site never sees it. Every other undeclared method, and TRACE on the plain lane, is checked.
        excluded = [unsupported_method] if site.ca_file and case.method.upper() == "TRACE" else []
        case.validate_response(response, excluded_checks=excluded,
                               transport_kwargs={"base_url": site.base_url, "session": session,
                                                 "timeout": 30, "verify": verify})
        content_type = response.headers.get("content-type") or [""]
        if response.status_code >= 400 and content_type[0].startswith("application/json"):
            body = response.json()
            assert set(body) == {"error"}, body
            error = body["error"]
            assert {"domain", "code", "message"} <= set(error), error
            assert error["domain"] in DOMAINS and error["code"].isupper(), error
            assert "Traceback" not in error["message"] and "asyncpg" not in error["message"], error

    return test


for _site in RUN.sites:
    globals()[f"test_fuzz_{_site.slug}"] = _fuzz_test(_site)


def test_the_fuzzer_reached_every_site() -> None:
    assert RUN.sites, "no sites to fuzz"
    assert all(f"test_fuzz_{s.slug}" in globals() for s in RUN.sites)
    pytest.importorskip("schemathesis")
