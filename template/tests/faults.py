"""Fault injection from outside the site: a TCP proxy in front of a real service.

The site is pointed at the proxy instead of the service. ``break_()`` refuses
new connections and cuts the open ones (as an outage would); ``slow(seconds)``
holds every chunk the client sends for that long (a service that answers
late); ``heal()`` lets traffic through again at once. ``requests`` counts the
plain-HTTP requests that reached the proxy (a test can wait for "the second
call is in flight"). Nothing in the site knows it is being tested.

Run standalone (the sitekit harness does, one per site, in front of S3):

    python faults.py --upstream 127.0.0.1:9000 --port-file PATH

It writes its port to PATH, breaks on SIGUSR1 and heals on SIGUSR2, and after
each change writes ``broken`` or ``healthy`` to PATH.state (so a controller
knows the fault is in place before it goes on).
"""

from __future__ import annotations

import argparse
import contextlib
import re
import signal
import socket
import threading
from pathlib import Path

_REQUEST_LINE = re.compile(rb"^[A-Z]+ \S+ HTTP/1\.[01]\r\n")


class FaultProxy:
    def __init__(self, upstream: tuple[str, int], host: str = "127.0.0.1", port: int = 0) -> None:
        self.upstream = upstream
        self._listener = socket.create_server((host, port), reuse_port=False)
        self.port = self._listener.getsockname()[1]
        self.url = f"http://{host}:{self.port}"
        self.broken = threading.Event()
        self.requests = 0
        self._delay = 0.0
        self._fast = threading.Event()
        self._fast.set()
        self._stopped = threading.Event()
        self._open: set[socket.socket] = set()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._accept, name="fault-proxy", daemon=True)

    def start(self) -> FaultProxy:
        self._thread.start()
        return self

    def break_(self) -> None:
        """Refuse new connections and cut every open one."""
        self.broken.set()
        with self._lock:
            sockets, self._open = list(self._open), set()
        for sock in sockets:
            _close(sock)

    def slow(self, seconds: float) -> None:
        """Hold each chunk the client sends for ``seconds`` (until ``heal()``) before passing it on."""
        self._delay = seconds
        self._fast.clear()

    def heal(self) -> None:
        self.broken.clear()
        self._delay = 0.0
        self._fast.set()  # chunks held by slow() go on now

    def stop(self) -> None:
        self._stopped.set()
        self.break_()
        _close(self._listener)
        self._thread.join(timeout=5)

    def __enter__(self) -> FaultProxy:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _accept(self) -> None:
        while not self._stopped.is_set():
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            if self.broken.is_set():
                client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
                _close(client)  # RST: connection reset by peer
                continue
            try:
                server = socket.create_connection(self.upstream, timeout=5)
            except OSError:
                _close(client)
                continue
            server.settimeout(None)
            with self._lock:
                self._open.update((client, server))
            for source, sink, upstream in ((client, server, True), (server, client, False)):
                threading.Thread(target=self._pump, args=(source, sink, upstream), daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket, upstream: bool) -> None:
        try:
            while chunk := source.recv(65536):
                if upstream:
                    if _REQUEST_LINE.match(chunk):
                        with self._lock:
                            self.requests += 1
                    if not self._fast.is_set():
                        self._fast.wait(self._delay)
                sink.sendall(chunk)
        except OSError:
            pass
        finally:
            with self._lock:
                self._open.discard(source)
                self._open.discard(sink)
            _close(source)
            _close(sink)


def _close(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)
    sock.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--upstream", required=True, help="host:port of the real service")
    parser.add_argument("--port-file", required=True)
    args = parser.parse_args()
    host, port = args.upstream.rsplit(":", 1)
    proxy = FaultProxy((host, int(port))).start()
    state_file = Path(args.port_file + ".state")

    def report(state: str) -> None:
        tmp = state_file.with_suffix(".tmp")
        tmp.write_text(state)
        tmp.replace(state_file)

    def on_break(*_: object) -> None:
        proxy.break_()
        report("broken")

    def on_heal(*_: object) -> None:
        proxy.heal()
        report("healthy")

    report("healthy")
    signal.signal(signal.SIGUSR1, on_break)
    signal.signal(signal.SIGUSR2, on_heal)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    tmp = Path(args.port_file + ".tmp")
    tmp.write_text(str(proxy.port))
    tmp.replace(args.port_file)
    while not stop.wait(3600):
        pass
    proxy.stop()


if __name__ == "__main__":
    main()
