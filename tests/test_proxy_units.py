"""The production lane's pure parts: host layout, the test CA and certificate, nginx's configuration,
the site policy edit, and how the report records the lane. The lane itself is proven by running it
(`python3 kit.py verify --proxy`)."""

from __future__ import annotations

import ipaddress
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from cryptography import x509

from harness import KIT_ROOT, cli, proxy, report
from harness.state import ProxyRecord, ProxyRoute, SiteRecord


def test_sites_get_hosts_of_their_own_and_the_last_two_share_one() -> None:
    assert proxy.hosts_for(3) == [("127.0.1.1", 0), ("127.0.1.2", 0), ("127.0.1.2", 1)]
    five = proxy.hosts_for(5)
    assert [host for host, _ in five[:3]] == ["127.0.1.1", "127.0.1.2", "127.0.1.3"]
    assert five[3:] == [("127.0.1.4", 0), ("127.0.1.4", 1)]
    # none of them is the proxy's own source address or 127.0.0.1, where clients come from
    assert not {host for host, _ in five} & {proxy.PROXY_SOURCE, "127.0.0.1"}
    with pytest.raises(proxy.ProxyError, match="at least 3 sites"):
        proxy.hosts_for(2)


def test_public_addresses_use_two_ports_free_on_every_host() -> None:
    public = proxy.public_addresses(3)
    assert [host for host, _ in public] == ["127.0.1.1", "127.0.1.2", "127.0.1.2"]
    assert public[0][1] == public[1][1] != public[2][1]


def test_the_proxy_option_needs_three_sites(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["verify", "--proxy", "--sites", "2"]) == 2
    assert "--proxy needs --sites 3" in capsys.readouterr().err


def _record(tmp_path: Path) -> ProxyRecord:
    record = proxy.make_certificates(tmp_path / "proxy", ["127.0.1.1", "127.0.1.2"])
    record.routes = [ProxyRoute(slug="alpha", host="127.0.1.1", port=8443, upstream="127.0.0.1:8001"),
                     ProxyRoute(slug="bravo", host="127.0.1.2", port=8443, upstream="127.0.0.1:8002"),
                     ProxyRoute(slug="charlie", host="127.0.1.2", port=9443, upstream="127.0.0.1:8003")]
    return record


def test_one_certificate_from_the_run_ca_covers_every_host(tmp_path: Path) -> None:
    record = _record(tmp_path)
    ca = x509.load_pem_x509_certificate(Path(record.ca_file).read_bytes())
    leaf = x509.load_pem_x509_certificates(Path(record.cert_file).read_bytes())[0]
    leaf.verify_directly_issued_by(ca)
    names = leaf.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert set(names.get_values_for_type(x509.IPAddress)) == {ipaddress.ip_address("127.0.1.1"),
                                                              ipaddress.ip_address("127.0.1.2")}
    assert record.spki == proxy.spki_hash(Path(record.cert_file).read_bytes()) and len(record.spki) == 44
    assert Path(record.key_file).stat().st_mode & 0o777 == 0o600
    assert proxy.client_context(record.ca_file).get_ca_certs()[0]["subject"]


def test_nginx_config_routes_each_host_and_port_to_its_site_from_the_proxy_address(tmp_path: Path) -> None:
    record = _record(tmp_path)
    text = proxy.nginx_config(record, tmp_path / "proxy", max_body=1_048_576)
    assert text.count("server {") == 3
    assert "listen 127.0.1.2:9443 ssl;" in text and "proxy_pass http://127.0.0.1:8003;" in text
    assert text.count(f"proxy_bind {proxy.PROXY_SOURCE};") == 3
    assert text.count("proxy_set_header X-Forwarded-For $remote_addr;") == 3  # never $proxy_add_x_forwarded_for
    assert f"client_max_body_size {1_048_576 + proxy.BODY_MARGIN};" in text
    assert "daemon off;" in text and f"pid {tmp_path / 'proxy' / 'nginx.pid'};" in text
    # nothing outside the run's folder but the certificate it was given
    for line in text.splitlines():
        if line.strip().startswith(("pid ", "error_log ", "access_log ", "client_body_temp_path ")):
            assert str(tmp_path) in line, line


def test_nginx_accepts_the_generated_config(tmp_path: Path) -> None:
    if shutil.which("nginx") is None and not Path("/usr/sbin/nginx").exists():
        message = "nginx is not installed (`kit.py test` and `kit.py verify --proxy` install it)"
        if os.environ.get("SITEKIT_REQUIRE_TOOLS"):
            pytest.fail(message)
        pytest.skip(message)
    record = _record(tmp_path)
    folder = tmp_path / "proxy"
    (folder / "temp").mkdir()
    config = folder / "nginx.conf"
    config.write_text(proxy.nginx_config(record, folder, max_body=1024))
    checked = subprocess.run([proxy.nginx_binary(), "-t", "-p", str(folder), "-c", str(config),
                              "-e", str(folder / "error.log")], capture_output=True, text=True, check=False)
    assert checked.returncode == 0, checked.stderr
    assert proxy.nginx_version().count(".") == 2


def test_the_site_policy_trusts_the_proxy_alone(tmp_path: Path) -> None:
    # the template renders the line this edit expects
    assert "\ntrusted_proxies = []\n" in (KIT_ROOT / "template" / "site.toml.jinja").read_text()
    policy = tmp_path / "site.toml"
    policy.write_text("[web]\n# a comment\ntrusted_proxies = []\n")
    proxy.trust_the_proxy(policy)
    assert policy.read_text() == '[web]\n# a comment\ntrusted_proxies = ["127.0.0.2"]\n'
    with pytest.raises(proxy.ProxyError):
        proxy.trust_the_proxy(policy)  # already set: never a second edit


def test_clients_trust_the_run_ca_only_behind_the_proxy(tmp_path: Path) -> None:
    record = _record(tmp_path)
    plain = SiteRecord(slug="alpha", name="A", base_url="http://127.0.0.1:1", upstream_url="http://127.0.0.1:1",
                       origin="http://127.0.0.1:1", cookie_name="alpha_session", database_url="", broker_url="",
                       broker_namespace="", task_queue="", dead_queue="", s3_endpoint_url="", bucket="",
                       object_prefix="", site_dir="", venv_python="")
    assert proxy.tls_verify(plain) is True
    behind = SiteRecord(**{**{f: getattr(plain, f) for f in plain.__struct_fields__}, "ca_file": record.ca_file})
    assert proxy.tls_verify(behind) is proxy.client_context(record.ca_file)


def test_the_report_records_the_lane_and_its_scenarios(tmp_path: Path) -> None:
    record = _record(tmp_path)
    cases = [report.Case(name="site_tests.test_proxy::test_x[alpha]", outcome="passed", seconds=1.0),
             report.Case(name="site_tests.test_proxy::test_y[bravo]", outcome="skipped", seconds=0.0),
             report.Case(name="site_tests.test_accounts::test_z[alpha]", outcome="passed", seconds=1.0)]
    lane = report.proxy_lane(record, report.TestResults(cases=cases))
    assert (lane.kind, lane.source, len(lane.routes)) == ("nginx", "127.0.0.2", 3)
    assert lane.checks == report.SiteTests(passed=1, skipped=1, seconds=1.0)
    lines = "\n".join(report.proxy_lines(lane))
    assert "lane: proxy (nginx" in lines and "charlie   https://127.0.1.2:9443 -> http://127.0.0.1:8003" in lines
    assert "1 passed, 0 failed, 1 skipped" in lines


def _directives(text: str) -> dict[str, str]:
    """The http block's own directives (name: value), comments left out."""
    http = text.split("http {", 1)[1].split("server {", 1)[0]
    lines = (line.split("#", 1)[0].strip().rstrip(";") for line in http.splitlines())
    return dict(line.split(None, 1) for line in lines if line)


def test_nginx_streams_bodies_to_the_site_with_bounded_buffers_and_the_sites_deadline_first(tmp_path: Path) -> None:
    """A buffered body never reaches the site until it is whole: its quota pre-check, upload slots and
    receive_seconds would not apply to the client, and nginx would hold up to client_body_buffer_size in
    memory per connection. Streamed, nginx holds one small buffer, and its own timer on a stalled body
    stays behind the site's deadline, so the site answers (408 in its envelope), not nginx."""
    text = proxy.nginx_config(_record(tmp_path), tmp_path / "proxy", max_body=64 * 1024 * 1024)
    http = _directives(text)
    assert http["proxy_request_buffering"] == "off"
    buffer = http["client_body_buffer_size"]
    assert buffer.endswith("k") and int(buffer[:-1]) <= 64, buffer  # not the largest body
    assert int(http["client_body_timeout"].removesuffix("s")) > 120  # the site's default receive_seconds
    assert http["proxy_max_temp_file_size"] == "0"
    slow = _directives(proxy.nginx_config(_record(tmp_path), tmp_path / "proxy", max_body=1024, receive_seconds=900))
    assert int(slow["client_body_timeout"].removesuffix("s")) > 900
