"""Bad answers are refused by copier with a message that says what is wrong."""

from __future__ import annotations

from pathlib import Path

import pytest

from .conftest import render

BAD = [
    ({"slug": "Bad-Slug"}, "slug must match"),
    ({"slug": "x"}, "slug must match"),
    ({"slug": "a" * 32}, "slug must match"),
    ({"slug": "9lives"}, "slug must match"),
    ({"slug": "json"}, "would shadow a Python module"),
    ({"site_name": "  "}, "site_name must not be empty"),
    ({"site_name": "<script>"}, "site_name must not contain"),
    ({"port": 80}, "port must be between 1024 and 65535"),
    ({"port": 70000}, "port must be between 1024 and 65535"),
    ({"origin": "127.0.0.1:8410"}, "origin must be a URL origin"),
    ({"origin": "http://example.com/"}, "origin must be a URL origin"),
    ({"origin": "http://Example.com"}, "origin must be a URL origin"),
    ({"origin": "ftp://example.com"}, "origin must be a URL origin"),
    ({"database_name": "has-dash"}, "database_name must match"),
    ({"auth_namespace": "UPPER"}, "auth_namespace must match"),
    ({"task_queue": "bad queue"}, "task_queue must match"),
    ({"task_queue": "same", "dead_queue": "same"}, "dead_queue must differ from task_queue"),
    ({"broker_namespace": "a:b"}, "broker_namespace must match"),
    ({"bucket": "ab"}, "bucket must be 3-63 characters"),
    ({"bucket": "Upper-case"}, "bucket must be 3-63 characters"),
    ({"bucket": "under_score"}, "bucket must be 3-63 characters"),
    ({"bucket": "-starts-with-dash"}, "bucket must be 3-63 characters"),
    ({"bucket": "double..dot"}, "bucket must not contain"),
    ({"bucket": "192.168.1.10"}, "must not look like an IP address"),
    ({"bucket": "xn--punycode"}, "reserved by S3"),
    ({"bucket": "b" * 64}, "bucket must be 3-63 characters"),
    ({"object_prefix": "/leading-slash"}, "object_prefix must match"),
    ({"max_file_bytes": 0}, "max_file_bytes must be between"),
    ({"quota_bytes": 10, "max_file_bytes": 100}, "quota_bytes must be at least max_file_bytes"),
    ({"ttl_hours": 0}, "ttl_hours must be between"),
    ({"max_active": 0}, "max_active must be between"),
    ({"max_attempts": 11}, "max_attempts must be between"),
    ({"writes_per_minute": 0}, "writes_per_minute must be at least 1"),
    ({"files_enabled": False, "tasks_enabled": True}, "tasks_enabled needs files_enabled"),
    ({"task_price": -1}, "task_price must not be negative"),
    ({"captcha_provider": "turnstile"}, "captcha_site_key is required"),
    ({"captcha_provider": "recaptcha"}, "recaptcha"),
]


@pytest.mark.parametrize(("answers", "message"), BAD, ids=[str(a) for a, _ in BAD])
def test_bad_answer_is_refused_with_a_message(tmp_path: Path, answers: dict, message: str) -> None:
    with pytest.raises(ValueError, match=r"Validation error|Invalid choice|is not a valid") as caught:
        render(tmp_path, **{"slug": "okay", **answers})
    assert message in str(caught.value)
    assert not (tmp_path / answers.get("slug", "okay") / "site.toml").exists()
