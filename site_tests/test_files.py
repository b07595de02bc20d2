"""Files over real HTTP on every live site, checked against its own database and bucket."""

from __future__ import annotations

import base64
import hashlib

import pytest

from harness.state import SiteRecord, SitesFile

from . import db, storage
from .client import SiteClient, error_code, policy


def test_upload_list_preview_download_delete(user: SiteClient, site: SiteRecord, run: SitesFile) -> None:
    data = b"line one\r\nline two\ttab\n" + "naïve".encode()
    stored = user.upload(data, name="résumé notes.txt")
    assert stored["size"] == len(data) and stored["sha256"] == hashlib.sha256(data).hexdigest()

    assert user.get("/api/files").json()["items"] == [stored]
    assert user.get(f"/api/files/{stored['id']}").json() == stored
    assert user.get(f"/api/files/{stored['id']}/preview").json() == {
        "text": data.decode(), "truncated": False, "encodingError": False,
    }

    download = user.get(f"/api/files/{stored['id']}/content")
    assert download.status_code == 200 and download.content == data
    assert download.headers["x-content-type-options"] == "nosniff"
    assert download.headers["cache-control"] == "private, no-store"
    assert download.headers["content-disposition"].startswith("attachment; filename=")
    assert "filename*=UTF-8''r%C3%A9sum%C3%A9%20notes.txt" in download.headers["content-disposition"]
    digest = base64.b64encode(hashlib.sha256(data).digest()).decode()
    assert download.headers["repr-digest"] == f"sha-256=:{digest}:"

    key = f"{site.object_prefix}/{user.account['id']}/{stored['id']}"
    assert key in storage.keys(run, site.bucket)
    assert user.delete(f"/api/files/{stored['id']}").status_code == 204
    assert key not in storage.keys(run, site.bucket)
    assert user.get(f"/api/files/{stored['id']}/content").status_code == 404
    assert db.fetchval(site, "SELECT status FROM file WHERE id = $1", stored["id"]) == "deleted"


def test_another_accounts_file_is_404(site: SiteRecord) -> None:
    with SiteClient(site) as owner, SiteClient(site) as stranger:
        owner.register()
        stranger.register()
        stored = owner.upload(b"mine")
        for method, suffix in (("GET", ""), ("GET", "/preview"), ("GET", "/content"), ("DELETE", "")):
            response = stranger.request(method, f"/api/files/{stored['id']}{suffix}")
            assert response.status_code == 404 and error_code(response) == "NOT_FOUND", (method, suffix)
        assert owner.get(f"/api/files/{stored['id']}/content").content == b"mine"


def test_another_sites_file_is_404_and_objects_stay_in_their_bucket(
    pair: tuple[SiteRecord, SiteRecord], run: SitesFile
) -> None:
    a, b = pair
    with SiteClient(a) as on_a, SiteClient(b) as on_b:
        on_a.register()
        on_b.register()
        stored = on_a.upload(b"only on " + a.slug.encode())
        for method, suffix in (("GET", ""), ("GET", "/preview"), ("GET", "/content"), ("DELETE", "")):
            response = on_b.request(method, f"/api/files/{stored['id']}{suffix}")
            assert response.status_code == 404, (method, suffix)
        assert on_a.get(f"/api/files/{stored['id']}").status_code == 200
    key = f"{a.object_prefix}/{on_a.account['id']}/{stored['id']}"
    for site in run.sites:
        present = key in storage.keys(run, site.bucket)
        assert present == (site.slug == a.slug), site.slug
    assert db.fetchval(b, "SELECT count(*) FROM file WHERE id = $1", stored["id"]) == 0


def test_quota_exceeded_over_http(user: SiteClient, site: SiteRecord) -> None:
    files = policy(site)["files"]
    quota, largest = files["quota_bytes"], files["max_file_bytes"]
    used = user.upload(b"first file")["size"]
    # Fill the account up to 5 bytes below its quota with real uploads (the audit after the run
    # checks that storage_usage is the sum of the files, so nothing here may fake it).
    while (left := quota - 5 - used) > 0:
        used += user.upload(b"x" * min(largest, left), name="filler.bin", content_type="text/plain")["size"]
    refused = user.post("/api/files", params={"name": "six.txt"}, content=b"123456",
                        headers={"Content-Type": "text/plain"})
    assert refused.status_code == 409 and error_code(refused) == "QUOTA_EXCEEDED"
    assert user.upload(b"12345")["size"] == 5
    assert db.fetchval(site, "SELECT used_bytes FROM storage_usage WHERE account_id = $1",
                       user.account["id"]) == quota


def test_refusals_over_http_store_nothing(user: SiteClient, site: SiteRecord, run: SitesFile) -> None:
    limit = policy(site)["files"]["max_file_bytes"]
    cases = [
        ({"name": "empty.txt"}, b"", "text/plain", 400, "VALIDATION_FAILED"),
        ({"name": "../../x"}, b"x", "text/plain", 400, "VALIDATION_FAILED"),
        ({"name": "page.html"}, b"<b>", "text/html", 400, "VALIDATION_FAILED"),
        ({"name": "big.bin"}, b"x" * (limit + 1), "application/octet-stream", 413, "FILE_TOO_LARGE"),
    ]
    for params, content, content_type, status, code in cases:
        response = user.post("/api/files", params=params, content=content, headers={"Content-Type": content_type})
        assert response.status_code == status and error_code(response) == code, (params, response.text)
    assert db.fetchval(site, "SELECT count(*) FROM file WHERE owner_id = $1", user.account["id"]) == 0
    assert not [k for k in storage.keys(run, site.bucket) if user.account["id"] in k]


@pytest.mark.parametrize("bucket", ["read", "write"])
def test_rate_limit_over_http(user: SiteClient, site: SiteRecord, bucket: str) -> None:
    limit = policy(site)["tasks"][f"{bucket}s_per_minute"]
    # Spend the account's budget from outside, for this minute and the next (no boundary race).
    db.execute(
        site,
        """
        INSERT INTO rate_limit_window (key, window_start, window_end, count)
        SELECT $1, w, w + interval '1 minute', $2
        FROM unnest(ARRAY[date_trunc('minute', now()), date_trunc('minute', now()) + interval '1 minute']) AS w
        ON CONFLICT (key, window_start) DO UPDATE SET count = EXCLUDED.count
        """,
        f"account:{user.account['id']}:{bucket}", limit,
    )
    other = "write" if bucket == "read" else "read"
    response = user.get("/api/files") if bucket == "read" else user.upload_raw(b"x")
    assert response.status_code == 429
    assert response.headers["retry-after"] == "60"
    assert response.json()["error"]["code"] == "RATE_LIMITED"
    assert response.json()["error"]["retryAfterSeconds"] == 60
    # The other bucket is untouched.
    allowed = user.upload_raw(b"x") if other == "write" else user.get("/api/files")
    assert allowed.status_code in (200, 201)
