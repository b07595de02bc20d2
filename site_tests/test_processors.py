"""A processor the owner added, exactly as docs/processors.md says (harness/owner_code.py), beside
the shipped one: it is listed, its params are validated against its own Struct, it runs end to end
with its own result name, type and size (larger than its input), and the pages offer it."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, expect

from harness.state import SiteRecord

from .browser import WIDTHS, SitePage, site_page
from .client import SiteClient, error_code, grant_credits
from .waiting import wait_task

expect.set_options(timeout=20_000)

ADDED = "word-count"


def listed(client: SiteClient) -> dict[str, dict]:
    response = client.get("/api/processors")
    assert response.status_code == 200, response.text
    return {found["name"]: found for found in response.json()}


@pytest.fixture
def owner(user: SiteClient) -> SiteClient:
    if ADDED not in listed(user):
        pytest.skip(f"{user.site.slug} does not deploy the documented {ADDED} processor (a fleet site of its own)")
    return user


def word_count(file_id: str, params: dict) -> dict:
    return {"requestKey": str(uuid.uuid4()), "processor": ADDED, "fileId": file_id, "params": params}


def test_both_processors_are_listed_with_their_own_params_and_types(owner: SiteClient) -> None:
    found = listed(owner)
    assert set(found) >= {"text-normalize", ADDED}
    normalize, added = found["text-normalize"], found[ADDED]
    assert normalize["paramsSchema"]["required"] == ["trimTrailingWhitespace"]
    assert normalize["accepts"] == ["text/plain"] and normalize["resultType"] == "text/plain"
    unit = added["paramsSchema"]["properties"]["unit"]
    assert sorted(unit["enum"]) == ["characters", "lines", "words"] and unit["default"] == "words"
    assert added["accepts"] == ["text/plain", "text/markdown"] and added["resultType"] == "application/json"
    assert added["version"] == 1 and added["title"] == "Count words"


def test_params_are_validated_against_the_chosen_processors_struct(owner: SiteClient) -> None:
    file = owner.upload(b"some words here")
    for params in ({"unit": "pages"}, {"color": 1}, {"trimTrailingWhitespace": True}, {"unit": 3}):
        answer = owner.post("/api/tasks", json=word_count(file["id"], params))
        assert answer.status_code == 400 and error_code(answer) == "VALIDATION_FAILED", (params, answer.text)
    # and the shipped processor still refuses the added one's params
    answer = owner.post("/api/tasks", json={**word_count(file["id"], {"unit": "words"}), "processor": "text-normalize"})
    assert answer.status_code == 400, answer.text
    answer = owner.post("/api/tasks", json=word_count(file["id"], {"unit": "words"}) | {"processor": "no-such"})
    assert answer.status_code == 400, answer.text
    assert owner.get("/api/tasks").json()["items"] == []


def test_an_input_type_it_does_not_take_is_refused_at_submit(owner: SiteClient) -> None:
    csv = owner.upload(b"a,b\n1,2\n", "table.csv", "text/csv")
    answer = owner.post("/api/tasks", json=word_count(csv["id"], {}))
    assert answer.status_code == 400 and error_code(answer) == "VALIDATION_FAILED", answer.text
    assert "text/plain" in answer.json()["error"]["message"]


def test_it_runs_end_to_end_and_its_result_may_outgrow_its_input(owner: SiteClient) -> None:
    one_byte = owner.upload(b"x", "x.txt")
    markdown = owner.upload("# Title\n\nTwo lines, é\n".encode(), "read me.md", "text/markdown")
    started = [
        (one_byte, {}, {"unit": "words", "count": 1}),
        (markdown, {"unit": "lines"}, {"unit": "lines", "count": 3}),
        (markdown, {"unit": "characters"}, {"unit": "characters", "count": 22}),
    ]
    for file, params, expected in started:
        answer = owner.post("/api/tasks", json=word_count(file["id"], params))
        assert answer.status_code == 201, answer.text
        task = wait_task(owner, answer.json()["id"], {"succeeded", "failed"})
        assert task["status"] == "succeeded", task
        assert task["processor"] == ADDED and task["processorVersion"] == 1
        result = task["result"]
        assert result["name"] == f"{file['name']}.count.json"
        assert result["contentType"] == "application/json"
        content = owner.get(f"/api/files/{result['fileId']}/content")
        assert content.status_code == 200 and json.loads(content.content) == expected
        assert result["size"] == len(content.content) and (file is not one_byte or result["size"] == 26)
        assert content.headers["content-type"].startswith("application/json")
        listed_file = owner.get(f"/api/files/{result['fileId']}").json()
        assert listed_file["contentType"] == "application/json" and listed_file["size"] == result["size"]
    # the one-byte input's result is 26 bytes: the claim reserved the declared bound, not the input's size
    assert one_byte["size"] == 1


@pytest.fixture
def tab(browser: Browser, site: SiteRecord) -> Iterator[SitePage]:
    with site_page(browser, site) as opened:
        yield opened
        assert opened.console.problems == [], opened.console.problems


def test_the_tasks_page_offers_it_with_a_form_built_from_its_params(tab: SitePage) -> None:
    tab.account = tab.register(f"{tab.site.slug}-{uuid.uuid4().hex[:10]}@example.com")
    if ADDED not in {found["name"] for found in tab.api("GET", "/api/processors").json()}:
        pytest.skip(f"{tab.site.slug} does not deploy the documented {ADDED} processor")
    grant_credits(tab.site, tab.account["id"])
    tab.upload(b"one two three\n", "three.txt")
    tab.upload(b"a,b\n", "table.csv", "text/csv")
    page = tab.goto("/tasks")
    picker = page.locator("#start-processor")
    expect(picker.locator("option")).to_have_text(["Normalise text", "Count words"])
    expect(page.locator("#start-param-trimTrailingWhitespace")).to_be_visible()
    picker.select_option(label="Count words")
    unit = page.locator("#start-param-unit")
    expect(unit.locator("option")).to_have_text(["characters", "lines", "words"])  # the schema's order
    expect(unit).to_have_value("words")  # its default
    expect(page.locator("#start-param-trimTrailingWhitespace")).to_have_count(0)
    # only the files it takes are offered
    expect(page.locator("#start-file option", has_text="three.txt")).to_have_count(1)
    expect(page.locator("#start-file option", has_text="table.csv")).to_have_count(0)
    for width in WIDTHS:
        page.set_viewport_size({"width": width, "height": 800})
        scroll, inner = tab.overflow()
        assert scroll <= inner, f"/tasks with {ADDED} at {width} px: scrollWidth {scroll} > innerWidth {inner}"
        if width == 390:
            tab.screenshot("tasks-word-count")
    page.locator("#start-file").select_option(label="three.txt")
    unit.select_option("lines")
    page.locator("#start-button").click()
    expect(page.locator("#status")).to_have_text("Succeeded")
    expect(page.locator("#processor")).to_have_text(f"{ADDED} version 1")
    expect(page.locator("#option")).to_have_text("unit: lines")
    expect(page.locator("#result-type")).to_have_text("application/json")
    page.get_by_role("button", name="Preview").click()
    expect(page.locator("#result-text")).to_have_text('{"unit":"lines","count":1}')
    tab.goto("/tasks")
    expect(page.locator("#task-list li .meta").first).to_contain_text(ADDED)
