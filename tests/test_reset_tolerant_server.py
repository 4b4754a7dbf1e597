"""The tests' own HTTP server: a client's reset is no traceback in the log, other errors are.

CI's log showed `ConnectionResetError` tracebacks from the standard library's server when
Chromium let go of connections it had opened ahead; they hid nothing, but a log that
cries wolf hides the next real error.
"""

from __future__ import annotations

import socket
import struct
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler
from typing import Any

import pytest

from tests.http_fixture import ResetTolerantServer


class _Handler(BaseHTTPRequestHandler):
    timeout = 5  # a read that never ends fails the test instead of hanging it

    def do_GET(self) -> None:
        if self.path == "/fail":
            raise RuntimeError("a handler's own bug")
        self.send_response(204)
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        pass


class _Counted(ResetTolerantServer):
    """Counts the errors it was asked to handle: the test's own proof they happened."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.errors = 0
        self._lock = threading.Lock()  # handlers run in threads of their own

    def handle_error(self, request: object, client_address: object) -> None:
        with self._lock:
            self.errors += 1
        super().handle_error(request, client_address)


@contextmanager
def _served() -> Iterator[_Counted]:
    server = _Counted(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()  # waits for its handlers' threads
        thread.join(5)


def _reset_before_asking(port: int) -> None:
    """Connect, then close with a reset (SO_LINGER 0) while the server waits to read."""
    client = socket.create_connection(("127.0.0.1", port))
    client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    time.sleep(0.1)  # the server's thread is in its first read
    client.close()


def test_a_reset_prints_nothing(capfd: pytest.CaptureFixture[str]) -> None:
    with _served() as server:
        for _ in range(3):
            _reset_before_asking(server.server_address[1])
        time.sleep(0.2)  # the last connection accepted before the server shuts down
    assert server.errors == 3
    assert "Traceback" not in capfd.readouterr().err


def test_a_handlers_bug_still_prints_its_traceback(capfd: pytest.CaptureFixture[str]) -> None:
    with (
        _served() as server,
        socket.create_connection(("127.0.0.1", server.server_address[1])) as client,
    ):
        client.settimeout(5)
        client.sendall(b"GET /fail HTTP/1.0\r\n\r\n")
        client.recv(1024)  # the server closes without an answer
    assert server.errors == 1
    err = capfd.readouterr().err
    assert "Traceback" in err and "a handler's own bug" in err
