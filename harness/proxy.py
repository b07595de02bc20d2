"""The production lane (``verify --proxy``): Debian's nginx with TLS from a local test CA in front of every site.

Hosts are loopback addresses, one per site, except the run's last two sites, which share one address on
two ports (cookies ignore ports: that pair shares a browser's cookie jar). An address rather than a name
under ``.localhost``: this machine resolves no such names, and every client — httpx, requests, Chromium
and playwright's Node side — reaches an address without a resolver of its own.

nginx connects to the sites from ``PROXY_SOURCE``, the one address their ``[web] trusted_proxies``
lists; clients connect from other loopback addresses (127.0.0.1 unless a test picks another), so an
``X-Forwarded-For`` sent straight to a site comes from an untrusted peer and is ignored.
"""

from __future__ import annotations

import base64
import hashlib
import re
import shutil
import signal
import ssl
import subprocess
from functools import cache
from pathlib import Path

import httpx
import psutil

from .background import start_logged
from .services import embedded
from .state import ProxyRecord, ProxyRoute, SiteRecord

PROXY_SOURCE = "127.0.0.2"
HOST_NETWORK = "127.0.1."  # site i's own host is 127.0.1.<i + 1>
MIN_SITES = 3  # one site on a host of its own, and the pair that shares a host
# The proxy must let through a body one byte over the site's limit: the site answers it (413, its envelope).
BODY_MARGIN = 64 * 1024
# nginx's own timer on a stalled body (between two reads) runs this much past the sites' longest
# [files] receive_seconds: the site cuts a slow body and answers in its envelope; nginx closes only
# what a site left hanging.
RECEIVE_MARGIN = 30
RECEIVE_SECONDS = 120  # a site's [files] receive_seconds when its site.toml leaves it out (settings.py)
READY_TIMEOUT = 30.0


class ProxyError(RuntimeError):
    """The proxy could not be planned, configured or started; the message says why and where its log is."""


def nginx_binary() -> str:
    binary = shutil.which("nginx") or shutil.which("nginx", path="/usr/sbin")
    if binary is None:
        raise ProxyError("nginx is not installed (apt-get install nginx; `python3 kit.py verify --proxy` does it)")
    return binary


def nginx_version() -> str:
    # `nginx -v` writes "nginx version: nginx/1.22.1" to stderr
    shown = subprocess.run([nginx_binary(), "-v"], capture_output=True, text=True, check=False).stderr
    return shown.strip().rsplit("/", 1)[-1]


def hosts_for(count: int) -> list[tuple[str, int]]:
    """(host, which of the two public ports) for each site of a run of ``count``."""
    if count < MIN_SITES:
        raise ProxyError(f"--proxy needs at least {MIN_SITES} sites: sites on hosts of their own "
                         "and two sites sharing one host on different ports")
    own = [(f"{HOST_NETWORK}{index + 1}", 0) for index in range(count - 2)]
    shared = f"{HOST_NETWORK}{count - 1}"
    return [*own, (shared, 0), (shared, 1)]


def _bindable(host: str, port: int) -> bool:
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


def public_addresses(count: int) -> list[tuple[str, int]]:
    """Each site's public (host, port): two ports, free on every host of the run."""
    hosts = hosts_for(count)
    addresses = sorted({host for host, _ in hosts})
    ports: list[int] = []
    for _ in range(50):  # another process may take a port between the probe and nginx's bind: then start fails
        port = embedded().free_port(addresses[0])
        if port not in ports and all(_bindable(host, port) for host in addresses):
            ports.append(port)
        if len(ports) == 2:
            return [(host, ports[which]) for host, which in hosts]
    raise ProxyError(f"no two ports free on all of {', '.join(addresses)}")


def spki_hash(cert_pem: bytes) -> str:
    """base64 SHA-256 of the certificate's SubjectPublicKeyInfo (Chromium's --ignore-certificate-errors-spki-list)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import serialization

    key = x509.load_pem_x509_certificate(cert_pem).public_key()
    der = key.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    return base64.b64encode(hashlib.sha256(der).digest()).decode()


def make_certificates(folder: Path, hosts: list[str]) -> ProxyRecord:
    """A test CA made for this run and one certificate for every host; the proxy's record, not yet routed."""
    import trustme

    folder.mkdir(parents=True, exist_ok=True)
    ca = trustme.CA(organization_name="sitekit harness test CA")
    leaf = ca.issue_cert(*hosts)
    ca_file, cert_file, key_file = folder / "ca.pem", folder / "cert.pem", folder / "key.pem"
    ca.cert_pem.write_to_path(str(ca_file))
    cert_file.write_bytes(b"".join(blob.bytes() for blob in leaf.cert_chain_pems))
    key_file.touch(mode=0o600)
    leaf.private_key_pem.write_to_path(str(key_file))
    return ProxyRecord(kind="nginx", version=nginx_version(), source=PROXY_SOURCE, ca_file=str(ca_file),
                       cert_file=str(cert_file), key_file=str(key_file),
                       spki=spki_hash(leaf.cert_chain_pems[0].bytes()), routes=[])


def trust_the_proxy(site_toml: Path, source: str = PROXY_SOURCE) -> None:
    """List the proxy in the rendered site's ``[web] trusted_proxies``, as its operator would."""
    text, count = re.subn(r"(?m)^trusted_proxies = \[\]$", f'trusted_proxies = ["{source}"]', site_toml.read_text())
    if count != 1:
        raise ProxyError(f"{site_toml}: no `trusted_proxies = []` line to set")
    site_toml.write_text(text)


def server_block(route: ProxyRoute, source: str) -> str:
    """One site's server: what docs/operations.md shows."""
    return f"""\
    server {{
        listen {route.host}:{route.port} ssl;
        server_name {route.host};
        location / {{
            proxy_pass http://{route.upstream};
            proxy_bind {source};                           # the one address the site trusts
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header Host $http_host;
            proxy_set_header X-Forwarded-For $remote_addr;  # the peer nginx saw; a client's own header is dropped
            proxy_set_header X-Forwarded-Proto $scheme;
        }}
    }}
"""


def nginx_config(record: ProxyRecord, folder: Path, max_body: int, receive_seconds: int = RECEIVE_SECONDS) -> str:
    """The whole configuration: everything nginx writes stays in ``folder``; it listens on the routes only.
    ``max_body``: the sites' largest ``max_file_bytes``; ``receive_seconds``: their longest."""
    temp = folder / "temp"
    body = max_body + BODY_MARGIN
    servers = "".join(server_block(route, record.source) for route in record.routes)
    return f"""\
# sitekit harness, verify --proxy: generated for this run; nginx runs in the foreground, stopped by pid
daemon off;
worker_processes 1;
pid {folder / "nginx.pid"};
error_log {folder / "error.log"} notice;
events {{
    worker_connections 512;
}}
http {{
    access_log {folder / "access.log"};
    client_body_temp_path {temp / "body"};
    proxy_temp_path {temp / "proxy"};
    fastcgi_temp_path {temp / "fastcgi"};
    uwsgi_temp_path {temp / "uwsgi"};
    scgi_temp_path {temp / "scgi"};
    ssl_certificate {record.cert_file};
    ssl_certificate_key {record.key_file};
    ssl_protocols TLSv1.2 TLSv1.3;
    client_max_body_size {body};
    # Bodies stream through as they arrive, so the site's own limits apply to the client: its size and
    # quota checks answer before the body is sent, its upload slots count the clients still sending and
    # its receive_seconds cuts a stalled body. nginx holds one small buffer per request.
    proxy_request_buffering off;
    client_body_buffer_size 16k;
    client_body_timeout {receive_seconds + RECEIVE_MARGIN}s;
    # Responses stream through in memory too: nginx's worker (nobody, under root) never needs to
    # write a temporary file under this run's folder.
    proxy_max_temp_file_size 0;
{servers}}}
"""


def routes_for(records: list[SiteRecord], public: list[tuple[str, int]]) -> list[ProxyRoute]:
    return [ProxyRoute(slug=record.slug, host=host, port=port, upstream=record.upstream_url.split("://", 1)[1])
            for record, (host, port) in zip(records, public, strict=True)]


def spawn(folder: Path, record: ProxyRecord, max_body: int, receive_seconds: int) -> subprocess.Popen:
    """Write the configuration, have nginx check it, and start nginx (its pid is the caller's to record)."""
    binary = nginx_binary()
    config = folder / "nginx.conf"
    (folder / "temp").mkdir(parents=True, exist_ok=True)
    config.write_text(nginx_config(record, folder, max_body, receive_seconds))
    record.config, record.log = str(config), str(folder / "error.log")
    # -e: the error log before the configuration is read (else /var/log/nginx/error.log)
    argv = [binary, "-p", str(folder), "-c", str(config), "-e", record.log]
    checked = subprocess.run([*argv, "-t", "-q"], capture_output=True, text=True, check=False)
    if checked.returncode != 0:
        raise ProxyError(f"nginx refused {config}: {checked.stderr.strip()[-500:]}")
    return start_logged(argv, folder / "nginx.out")


def wait_ready(record: ProxyRecord, process: subprocess.Popen) -> None:
    """Until every route answers /readyz through the proxy, over TLS checked against the run's CA."""
    with httpx.Client(verify=client_context(record.ca_file), timeout=2) as client:

        def answers(route: ProxyRoute) -> bool:
            try:
                return client.get(f"{route.url}/readyz").status_code == 200
            except httpx.HTTPError:
                return False

        for route in record.routes:
            try:
                embedded().wait_until(lambda route=route: answers(route), READY_TIMEOUT, f"proxy for {route.slug}",
                                      process)
            except Exception as error:
                raise ProxyError(f"{route.url}: {error}; see {record.log}") from None


def stop(record: ProxyRecord) -> None:
    """Stop the proxy by its pid — only while that pid still runs nginx with this run's configuration."""
    if record.pid is None:
        return
    try:
        # nginx rewrites its title: "nginx: master process /usr/sbin/nginx -p … -c <config> …",
        # which psutil splits at the spaces: look for the path in the whole title
        title = " ".join(psutil.Process(record.pid).cmdline())
    except psutil.Error:
        return
    if record.config in title:
        embedded().stop_process(record.pid, signal.SIGTERM, 20.0)


@cache
def client_context(ca_file: str) -> ssl.SSLContext:
    """TLS that trusts the run's test CA (and nothing else)."""
    return ssl.create_default_context(cafile=ca_file)


def tls_verify(site: SiteRecord) -> ssl.SSLContext | bool:
    """What an httpx client of ``site`` checks its certificate against: the run's CA behind the proxy."""
    return client_context(site.ca_file) if site.ca_file else True
