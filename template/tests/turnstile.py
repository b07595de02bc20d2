"""A Turnstile-compatible verifier on loopback: a real HTTP server speaking Cloudflare's siteverify protocol.

A site under test points ``CAPTCHA_VERIFY_URL`` at it. The token ``ok:<action>``
passes for that action when the site sends ``secret``, as solved on ``hostname`` (the
site's own host); ``ok:<action>@<host>`` is a token solved on another host. Anything
else is refused.
Every form the site posted is kept in ``requests``. Used by the site's own
tests and by the sitekit kit's browser test of the captcha widget.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs

SECRET = "test-secret"


class Verifier:
    def __init__(self, hostname: str, secret: str = SECRET) -> None:
        self.requests: list[dict[str, list[str]]] = []
        verifier = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                form = parse_qs(self.rfile.read(int(self.headers["Content-Length"])).decode())
                verifier.requests.append(form)
                token = form.get("response", [""])[0]
                ok = form.get("secret") == [secret] and token.startswith("ok:")
                action, _, solved_on = token.removeprefix("ok:").partition("@")
                body = json.dumps({"success": ok, "action": action if ok else None,
                                   "hostname": (solved_on or hostname) if ok else None,
                                   "error-codes": [] if ok else ["invalid-input-response"]}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/siteverify"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> Verifier:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
