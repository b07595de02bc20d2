"""One table of answers for both validators: copier's (the questions in copier.yml) and the site's
(settings.py loading the rendered site.toml at start-up). Both accept every good answer and both
refuse every bad one, so a hand-edited site.toml is held to the rules copier asked for.

Copier's validators are Jinja and the site's are msgspec, so the rules are written twice; this
table is what keeps the two copies the same (issue #17). A rule added on one side needs a row here.
"""

from __future__ import annotations

import ast
import importlib.util
import re
import shutil
import sys
from pathlib import Path
from types import ModuleType
from typing import NamedTuple

import pytest
import yaml

from harness import KIT_ROOT
from harness.render import render_site

from .conftest import TEMPLATE_PACKAGE, render

GOOD = [
    {},
    {"port": 1024, "origin": "http://127.0.0.1:1024"},
    {"port": 65535, "origin": "https://files.example.com:65535"},
    {"site_name": "x" * 80},
    {"site_name": "Tom's files & more — Ünïcode"},
    {"slug": "ab"},
    {"slug": "a" * 31},
    {"slug": "z_9"},
    {"origin": "http://localhost"},
    {"origin": "http://[::1]:8410"},
    {"origin": "https://a-b.c-d.example.co.uk"},
    {"database_name": "_x", "auth_namespace": "ab", "broker_namespace": "a" * 31},
    {"task_queue": "q", "dead_queue": "a" * 63},
    {"bucket": "abc"},
    {"bucket": "b" * 63},
    {"bucket": "a2.b3-bucket.example"},
    {"bucket": "1.2.3.4.5"},
    {"bucket": "sthree"},
    {"object_prefix": "0"},
    {"object_prefix": "0-prefix_x"},
    {"max_file_bytes": 67108864, "quota_bytes": 67108864},
    {"max_file_bytes": 10, "quota_bytes": 10},
    {"ttl_hours": 1},
    {"ttl_hours": 87600},
    {"max_active": 1000, "max_attempts": 10},
    {"max_active": 1, "max_attempts": 1},
    {"writes_per_minute": 1, "reads_per_minute": 1},
    {"history_days": 1},
    {"history_days": 36500},
    {"login_attempts_per_address": 100000, "registrations_per_address": 100000},
    {"login_attempts_per_address": 1, "registrations_per_address": 1},
    {"files_enabled": False, "tasks_enabled": False},
    {"files_enabled": True, "tasks_enabled": False},
    {"charges_enabled": True, "task_price": 1000000000},
    {"captcha_provider": "turnstile", "captcha_site_key": "0x4AAAAAAA-site_key"},
    {"captcha_provider": "turnstile", "captcha_site_key": "k" * 100},
    {"verify_email": True},
]


class Bad(NamedTuple):
    """A refused answer. ``rule`` is in copier's message and, unless ``site`` says otherwise, in the
    site's too (a rule the site checks in code words it as copier does); ``site`` is what the site's
    message holds instead where msgspec words it (the site.toml key it names)."""

    answers: dict
    rule: str
    site: str | None = None


BAD = [
    Bad({"slug": "Bad-Slug"}, "slug must match", "site.slug"),
    Bad({"slug": "x"}, "slug must match", "site.slug"),
    Bad({"slug": "a" * 32}, "slug must match", "site.slug"),
    Bad({"slug": "9lives"}, "slug must match", "site.slug"),
    Bad({"slug": "json"}, "would shadow a Python module"),
    Bad({"slug": "harness"}, "would shadow a Python module"),
    Bad({"site_name": ""}, "name must not be empty", "site.name"),
    Bad({"site_name": "  "}, "name must not be empty"),
    Bad({"site_name": "x" * 81}, "name must be at most 80 characters", "site.name"),
    Bad({"site_name": "<script>"}, "name must not contain control characters, quotes or angle brackets"),
    Bad({"site_name": 'say "hi"'}, "name must not contain control characters, quotes or angle brackets"),
    Bad({"site_name": "tab\there"}, "name must not contain control characters, quotes or angle brackets"),
    Bad({"port": 80}, "port must be between 1024 and 65535", "site.port"),
    Bad({"port": 1023}, "port must be between 1024 and 65535", "site.port"),
    Bad({"port": 70000}, "port must be between 1024 and 65535", "site.port"),
    Bad({"origin": "127.0.0.1:8410"}, "origin must be a URL origin"),
    Bad({"origin": "http://example.com/"}, "origin must be a URL origin"),
    Bad({"origin": "http://Example.com"}, "origin must be a URL origin"),
    Bad({"origin": "ftp://example.com"}, "origin must be a URL origin"),
    Bad({"origin": "http://example.com:"}, "origin must be a URL origin"),
    Bad({"origin": "http://example.com?"}, "origin must be a URL origin"),
    Bad({"origin": "http://exa_mple.com"}, "origin must be a URL origin"),
    Bad({"origin": "http://-example.com"}, "origin must be a URL origin"),
    Bad({"origin": "http://ünïcode.example"}, "origin must be a URL origin"),
    Bad({"origin": "http://user@example.com"}, "origin must be a URL origin"),
    Bad({"origin": "http://example.com:99999"}, "origin port must be at most 65535"),
    Bad({"database_name": "has-dash"}, "database_name must match", "site.database_name"),
    Bad({"database_name": "9db"}, "database_name must match", "site.database_name"),
    Bad({"auth_namespace": "UPPER"}, "auth_namespace must match", "site.auth_namespace"),
    Bad({"auth_namespace": "x"}, "auth_namespace must match", "site.auth_namespace"),
    Bad({"task_queue": "bad queue"}, "task_queue must match", "site.task_queue"),
    Bad({"dead_queue": "Dead"}, "dead_queue must match", "site.dead_queue"),
    Bad({"task_queue": "same", "dead_queue": "same"}, "dead_queue must differ from task_queue"),
    Bad({"broker_namespace": "a:b"}, "broker_namespace must match", "site.broker_namespace"),
    Bad({"bucket": "ab"}, "bucket must be 3-63 characters", "site.bucket"),
    Bad({"bucket": "Upper-case"}, "bucket must be 3-63 characters", "site.bucket"),
    Bad({"bucket": "under_score"}, "bucket must be 3-63 characters", "site.bucket"),
    Bad({"bucket": "-starts-with-dash"}, "bucket must be 3-63 characters", "site.bucket"),
    Bad({"bucket": "b" * 64}, "bucket must be 3-63 characters", "site.bucket"),
    Bad({"bucket": "double..dot"}, "bucket must not contain '..', '.-' or '-.'"),
    Bad({"bucket": "dot.-dash"}, "bucket must not contain '..', '.-' or '-.'"),
    Bad({"bucket": "dash-.dot"}, "bucket must not contain '..', '.-' or '-.'"),
    Bad({"bucket": "192.168.1.10"}, "bucket must not look like an IP address"),
    Bad({"bucket": "xn--punycode"}, "bucket uses a prefix or suffix reserved by S3"),
    Bad({"bucket": "sthree-files"}, "bucket uses a prefix or suffix reserved by S3"),
    Bad({"bucket": "files-s3alias"}, "bucket uses a prefix or suffix reserved by S3"),
    Bad({"bucket": "files--ol-s3"}, "bucket uses a prefix or suffix reserved by S3"),
    Bad({"object_prefix": "/leading-slash"}, "object_prefix must match", "site.object_prefix"),
    Bad({"object_prefix": "p" * 64}, "object_prefix must match", "site.object_prefix"),
    Bad({"max_file_bytes": 0}, "max_file_bytes must be between", "files.max_file_bytes"),
    Bad({"max_file_bytes": 67108865, "quota_bytes": 67108865}, "max_file_bytes must be between",
        "files.max_file_bytes"),
    Bad({"quota_bytes": 10, "max_file_bytes": 100}, "quota_bytes must be at least max_file_bytes",
        "files.quota_bytes must be at least files.max_file_bytes"),
    Bad({"ttl_hours": 0}, "ttl_hours must be between", "files.ttl_hours"),
    Bad({"ttl_hours": 87601}, "ttl_hours must be between", "files.ttl_hours"),
    Bad({"max_active": 0}, "max_active must be between", "tasks.max_active"),
    Bad({"max_active": 1001}, "max_active must be between", "tasks.max_active"),
    Bad({"max_attempts": 0}, "max_attempts must be between", "tasks.max_attempts"),
    Bad({"max_attempts": 11}, "max_attempts must be between", "tasks.max_attempts"),
    Bad({"writes_per_minute": 0}, "writes_per_minute must be at least 1", "tasks.writes_per_minute"),
    Bad({"reads_per_minute": 0}, "reads_per_minute must be at least 1", "tasks.reads_per_minute"),
    Bad({"history_days": 0}, "history_days must be between 1 and 36500", "tasks.history_days"),
    Bad({"history_days": 36501}, "history_days must be between 1 and 36500", "tasks.history_days"),
    Bad({"login_attempts_per_address": 0}, "login_attempts_per_address must be between 1 and 100000",
        "auth.login_attempts_per_address"),
    Bad({"login_attempts_per_address": 100001}, "login_attempts_per_address must be between 1 and 100000",
        "auth.login_attempts_per_address"),
    Bad({"registrations_per_address": 0}, "registrations_per_address must be between 1 and 100000",
        "auth.registrations_per_address"),
    Bad({"registrations_per_address": 100001}, "registrations_per_address must be between 1 and 100000",
        "auth.registrations_per_address"),
    Bad({"files_enabled": False, "tasks_enabled": True}, "tasks_enabled needs files_enabled",
        "tasks.enabled requires files.enabled"),
    Bad({"task_price": -1}, "task_price must be between 0 and 1000000000", "charges.prices"),
    Bad({"task_price": 1000000001}, "task_price must be between 0 and 1000000000", "charges.prices"),
    Bad({"captcha_provider": "turnstile"}, "captcha_site_key is required",
        "site_key is required when provider is turnstile"),
    Bad({"captcha_provider": "turnstile", "captcha_site_key": "has space"}, "captcha_site_key is required",
        "captcha.site_key"),
    Bad({"captcha_provider": "recaptcha"}, "recaptcha", "captcha.provider"),
]


def row_id(answers: dict) -> str:
    return ",".join(f"{key}={value!r}"[:40] for key, value in answers.items()) or "defaults"


def copier_questions() -> dict:
    return yaml.safe_load((KIT_ROOT / "copier.yml").read_text(encoding="utf-8"))


def reserved_slugs_in_copier() -> set[str]:
    # the list literal of the slug validator: {% if slug in [...] %}
    found = re.search(r"slug in (\[[^\]]*\])", copier_questions()["slug"]["validator"])
    assert found, "copier.yml's slug validator no longer lists reserved names"
    return set(ast.literal_eval(found.group(1)))


@pytest.fixture(scope="module")
def settings() -> ModuleType:
    """The site's settings module, straight from the template (it is copied byte for byte)."""
    spec = importlib.util.spec_from_file_location("template_settings", TEMPLATE_PACKAGE / "settings.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def site_toml_template(root: Path, questions: dict) -> Path:
    """A template of ``questions`` that renders only site.toml (the validators run all the same)."""
    (root / "template").mkdir(parents=True)
    (root / "copier.yml").write_text(yaml.safe_dump(questions, allow_unicode=True, sort_keys=False), encoding="utf-8")
    shutil.copy(KIT_ROOT / "template" / "site.toml.jinja", root / "template" / "site.toml.jinja")
    return root


@pytest.fixture(scope="module")
def validated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return site_toml_template(tmp_path_factory.mktemp("validated"), copier_questions())


@pytest.fixture(scope="module")
def unvalidated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """copier.yml without its validators and choices: writes site.toml for answers copier refuses,
    so the site's own validation gets to see them."""
    questions = copier_questions()
    for question in questions.values():
        if isinstance(question, dict):
            question.pop("validator", None)
            question.pop("choices", None)
    return site_toml_template(tmp_path_factory.mktemp("unvalidated"), questions)


def site_refusal(settings: ModuleType, site_toml: Path) -> str | None:
    """The site's start-up message for ``site_toml``, or None when the site accepts it."""
    try:
        settings.load_policy(site_toml)
    except settings.SettingsError as error:
        return str(error)
    return None


@pytest.mark.parametrize("answers", GOOD, ids=[row_id(a) for a in GOOD])
def test_good_answer_is_accepted_by_copier_and_the_site(
    tmp_path: Path, validated: Path, settings: ModuleType, answers: dict
) -> None:
    site = render_site({"slug": "okay", **answers}, tmp_path / "site", template=validated)
    assert site_refusal(settings, site / "site.toml") is None


@pytest.mark.parametrize(("answers", "rule", "site"), BAD, ids=[row_id(b.answers) for b in BAD])
def test_bad_answer_is_refused_by_copier_with_the_rule(tmp_path: Path, answers: dict, rule: str, site: str) -> None:
    """The whole template: copier stops at the question, before writing anything."""
    with pytest.raises(ValueError, match=r"Validation error|Invalid choice|is not a valid") as caught:
        render(tmp_path, **{"slug": "okay", **answers})
    assert rule in str(caught.value)
    assert not (tmp_path / answers.get("slug", "okay") / "site.toml").exists()


@pytest.mark.parametrize(("answers", "rule", "site"), BAD, ids=[row_id(b.answers) for b in BAD])
def test_bad_answer_is_refused_by_the_site_with_the_rule(
    tmp_path: Path, unvalidated: Path, settings: ModuleType, answers: dict, rule: str, site: str | None
) -> None:
    """The same answer written into site.toml by hand stops the site, in one line naming the rule."""
    rendered = render_site({"slug": "okay", **answers}, tmp_path / "site", template=unvalidated)
    message = site_refusal(settings, rendered / "site.toml")
    assert message is not None, "the site accepted an answer copier refuses"
    assert (site or rule) in message
    assert "\n" not in message


def test_reserved_slugs_are_one_list(settings: ModuleType) -> None:
    assert reserved_slugs_in_copier() == set(settings.RESERVED_SLUGS)
