"""An SMTP sink on loopback: takes every message and appends it to a mailbox file, one JSON line each
(``{"receivedAt", "mailFrom", "rcptTos", "data"}``). Nothing leaves the machine.

``dev`` starts one (its mails are listed at /dev/mail), the harness one per site (site_tests read the
mailbox), the site's tests one in-process (``MailSink``). Runnable by path with any Python that has
aiosmtpd — it imports nothing of the site:

    python sink.py --mailbox FILE --port-file FILE [--port N]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import time
from pathlib import Path

from aiosmtpd.smtp import SMTP, Envelope, Session

LOOPBACK = "127.0.0.1"
MAX_MESSAGE_BYTES = 1024 * 1024


class MailboxHandler:
    """aiosmtpd's handler: each message's envelope and bytes as one line of the mailbox file."""

    def __init__(self, mailbox: Path) -> None:
        self.mailbox = mailbox

    async def handle_DATA(self, server: SMTP, session: Session, envelope: Envelope) -> str:
        content = envelope.original_content or envelope.content or b""
        record = {
            "receivedAt": time.time(),
            "mailFrom": envelope.mail_from,
            "rcptTos": list(envelope.rcpt_tos),
            "data": content.decode("utf-8", errors="replace") if isinstance(content, bytes) else content,
        }
        line = (json.dumps(record) + "\n").encode()
        fd = os.open(self.mailbox, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, line)  # one write per line: a reader never sees half of one in between others
        finally:
            os.close(fd)
        return "250 Message accepted for delivery"


class MailSink:
    """The sink in a running event loop (``async with MailSink(path) as sink: sink.url``)."""

    def __init__(self, mailbox: Path, port: int = 0) -> None:
        self.mailbox = Path(mailbox)
        self.port = port
        self._server: asyncio.Server | None = None

    @property
    def url(self) -> str:
        return f"smtp://{LOOPBACK}:{self.port}"

    async def __aenter__(self) -> MailSink:
        handler = MailboxHandler(self.mailbox)
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(
            lambda: SMTP(handler, hostname="sink.localhost", enable_SMTPUTF8=True,
                         data_size_limit=MAX_MESSAGE_BYTES, loop=loop),
            LOOPBACK, self.port)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()


def read_mailbox(mailbox: Path) -> list[dict]:
    """Every message the sink took, oldest first (a line still being written is left for next time)."""
    try:
        text = Path(mailbox).read_text(encoding="utf-8")
    except FileNotFoundError:
        return []
    return [json.loads(line) for line in text.split("\n")[:-1] if line]


async def _serve(mailbox: Path, port: int, port_file: Path | None) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    async with MailSink(mailbox, port) as sink:
        if port_file is not None:
            staging = port_file.with_name(f".{port_file.name}.tmp")
            staging.write_text(str(sink.port))
            staging.replace(port_file)  # whole or absent: a reader never sees a partial number
        await stop.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mailbox", type=Path, required=True)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--port-file", type=Path)
    args = parser.parse_args()
    args.mailbox.parent.mkdir(parents=True, exist_ok=True)
    asyncio.run(_serve(args.mailbox, args.port, args.port_file))


if __name__ == "__main__":
    main()
