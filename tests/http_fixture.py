"""A real HTTP server on 127.0.0.1 serving a folder, for tests of reading mirrors over HTTP.

`MirrorHTTPServer(root)` serves `root` on a free port in background threads: GET and HEAD of
files, a strong `ETag` (sha256 of the content) with `If-None-Match` -> 304, a request log, and
failure modes per path prefix (404, 500 always or the first N times, a stalled body). Closing
it ends every connection, stalled ones included, and joins every thread it started. The
`http_server` fixture gives one serving a fresh temporary folder. `ResetTolerantServer` is
the standard library's threading server for the tests' other servers, quiet about clients
that reset their connections.
"""

from __future__ import annotations

import contextlib
import hashlib
import socket
import socketserver
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Literal
from urllib.parse import unquote, urlsplit

import pytest

HOST = "127.0.0.1"


@dataclass(frozen=True)
class LogEntry:
    method: str
    #: The URL path, without the query.
    path: str
    status: int
    #: Body bytes sent (for a stalled body, what was sent before the stall).
    bytes_sent: int
    if_none_match: str | None = None
    #: The URL's query, as sent.
    query: str = ""


@dataclass
class Failure:
    kind: Literal["404", "500", "stall"]
    #: For "500": how many requests fail before the path serves normally (None: all).
    times: int | None = None
    #: For "stall": body bytes sent before the stall (None: half the file).
    after_bytes: int | None = None
    #: For "stall": how long the connection stays silent (closing the server ends it).
    seconds: float = 3600.0


def etag_of(data: bytes) -> str:
    return f'"{hashlib.sha256(data).hexdigest()}"'


class ResetTolerantServer(ThreadingHTTPServer):
    """A threading HTTP server that prints no traceback for a client that resets its
    connection (Chromium's connections opened ahead and never used, a pool closed at the
    end of a test); any other error prints as before."""

    def handle_error(self, request: Any, client_address: Any) -> None:
        # Called within socketserver's `except` block: the error is the one being handled.
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False

    def __init__(self, owner: MirrorHTTPServer) -> None:
        self.owner = owner
        super().__init__((HOST, 0), _Handler)

    def server_bind(self) -> None:
        # HTTPServer.server_bind resolves the host name (getfqdn): skip the lookup.
        socketserver.TCPServer.server_bind(self)
        self.server_name, self.server_port = HOST, self.server_address[1]

    def process_request(self, request: Any, client_address: Any) -> None:
        thread = threading.Thread(
            target=self.process_request_thread,
            args=(request, client_address),
            name="mirror-http-handler",
            daemon=True,
        )
        self.owner._track(thread)
        thread.start()

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that goes away (timeouts, closed pools, the shutdown) is not an error.
        pass


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    #: A safety net: an idle connection is dropped after this many seconds.
    timeout = 60

    def setup(self) -> None:
        super().setup()
        self.server.owner._register(self.connection)

    def finish(self) -> None:
        self.server.owner._unregister(self.connection)
        with contextlib.suppress(OSError):
            super().finish()

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self._serve(body=True)

    def do_HEAD(self) -> None:
        self._serve(body=False)

    def _serve(self, body: bool) -> None:
        # Each request is logged before its response goes out: a client that has its answer
        # finds the request in the log.
        path = unquote(urlsplit(self.path).path)
        failure = self.server.owner._failure_for(path)
        if failure is not None and failure.kind in ("404", "500"):
            self._send(404 if failure.kind == "404" else 500, b"injected failure\n", body)
            return
        file = self.server.owner._file(path)
        if file is None:
            self._send(404, b"not found\n", body)
            return
        data = file.read_bytes()
        etag = etag_of(data)
        if_none_match = self.headers.get("If-None-Match")
        if if_none_match is not None and _matches(if_none_match, etag):
            self._log(304, 0)
            self.send_response(304)
            self.send_header("ETag", etag)
            self.end_headers()
            return
        json_file = file.name.endswith(".json")
        content_type = "application/json" if json_file else "application/octet-stream"
        if failure is not None and body:  # stall: headers and part of the body, then silence
            part = len(data) // 2 if failure.after_bytes is None else failure.after_bytes
            part = min(part, len(data))
            self._log(200, part)
            self._headers(200, len(data), content_type, etag)
            self.wfile.write(data[:part])
            self.wfile.flush()
            self.server.owner._stop.wait(failure.seconds)
            self.close_connection = True
            return
        self._send(200, data, body, content_type, etag)

    def _log(self, status: int, sent: int) -> None:
        url = urlsplit(self.path)
        self.server.owner._log(
            self.command,
            unquote(url.path),
            status,
            sent,
            self.headers.get("If-None-Match"),
            url.query,
        )

    def _headers(self, status: int, length: int, content_type: str, etag: str | None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(length))
        if etag is not None:
            self.send_header("ETag", etag)
        self.end_headers()

    def _send(
        self,
        status: int,
        data: bytes,
        body: bool,
        content_type: str = "text/plain",
        etag: str | None = None,
    ) -> None:
        self._log(status, len(data) if body else 0)
        self._headers(status, len(data), content_type, etag)
        if body:
            self.wfile.write(data)


def _matches(if_none_match: str, etag: str) -> bool:
    tags = [t.strip() for t in if_none_match.split(",")]
    return "*" in tags or etag in (t.removeprefix("W/") for t in tags)


def _hang_up(connection: socket.socket) -> None:
    """End a connection from any thread: a handler blocked reading it sees the end."""
    with contextlib.suppress(OSError):
        connection.shutdown(socket.SHUT_RDWR)


class MirrorHTTPServer:
    """Serves a folder over HTTP on 127.0.0.1 (a free port) from background threads."""

    def __init__(self, root: Path) -> None:
        self.root = root.resolve()
        self._lock = threading.Lock()
        self._log_entries: list[LogEntry] = []
        self._failures: dict[str, Failure] = {}
        self._threads: list[threading.Thread] = []
        self._connections: set[socket.socket] = set()
        self._stop = threading.Event()
        self._server: _Server | None = None
        self._serve_thread: threading.Thread | None = None
        self._port: int | None = None

    # -- life cycle

    def start(self) -> MirrorHTTPServer:
        self._server = _Server(self)
        self._port = int(self._server.server_address[1])
        self._serve_thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name="mirror-http-server",
            daemon=True,
        )
        self._serve_thread.start()
        return self

    @property
    def port(self) -> int:
        """The port (kept after close: a closed server's URL refuses connections)."""
        assert self._port is not None, "not started"
        return self._port

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}"

    def url_for(self, path: str | Path) -> str:
        """The URL of a path under the root (absolute paths are made relative to it)."""
        path = Path(path)
        relative = path.resolve().relative_to(self.root) if path.is_absolute() else path
        return f"{self.url}/{relative.as_posix()}"

    def close(self, timeout: float = 5.0) -> None:
        """Stop serving, end every connection (stalled ones too), join every thread; raises
        when a thread outlives `timeout` seconds."""
        if self._server is None:
            return
        self._stop.set()
        self._server.shutdown()
        with self._lock:
            connections = list(self._connections)
        for connection in connections:
            _hang_up(connection)
        self._server.server_close()
        deadline = time.monotonic() + timeout
        for thread in [self._serve_thread, *self._threads]:
            if thread is not None:
                thread.join(max(0.0, deadline - time.monotonic()))
        self._server = None
        alive = self.alive_threads()
        if alive:
            raise RuntimeError(f"{len(alive)} server threads still running after close()")

    def alive_threads(self) -> list[threading.Thread]:
        with self._lock:
            threads = [*self._threads, self._serve_thread]
        return [t for t in threads if t is not None and t.is_alive()]

    def __enter__(self) -> MirrorHTTPServer:
        return self.start()

    def __exit__(self, *_: object) -> None:
        self.close()

    # -- failure modes, by path prefix (the longest matching prefix applies)

    def not_found(self, prefix: str) -> None:
        self._set(prefix, Failure("404"))

    def server_error(self, prefix: str, times: int | None = None) -> None:
        """500 for requests under `prefix`: all of them, or only the first `times`."""
        self._set(prefix, Failure("500", times=times))

    def stall(self, prefix: str, after_bytes: int | None = None, seconds: float = 3600.0) -> None:
        """GETs under `prefix` send headers and `after_bytes` of the body (half by default),
        then nothing for `seconds` without closing."""
        self._set(prefix, Failure("stall", after_bytes=after_bytes, seconds=seconds))

    def clear_failures(self) -> None:
        with self._lock:
            self._failures.clear()

    def _set(self, prefix: str, failure: Failure) -> None:
        with self._lock:
            self._failures["/" + prefix.lstrip("/")] = failure

    def _failure_for(self, path: str) -> Failure | None:
        with self._lock:
            prefixes = [p for p in self._failures if path.startswith(p)]
            if not prefixes:
                return None
            prefix = max(prefixes, key=len)
            failure = self._failures[prefix]
            if failure.times is not None:
                if failure.times <= 0:
                    return None
                failure.times -= 1
            return failure

    # -- the request log

    @property
    def log(self) -> list[LogEntry]:
        with self._lock:
            return list(self._log_entries)

    def requests(self, prefix: str = "/", method: str | None = None) -> list[LogEntry]:
        """Logged requests whose path starts with `prefix` (and of `method`)."""
        prefix = "/" + prefix.lstrip("/")
        return [
            e
            for e in self.log
            if e.path.startswith(prefix) and (method is None or e.method == method)
        ]

    def clear_log(self) -> None:
        with self._lock:
            self._log_entries.clear()

    def _log(
        self,
        method: str,
        path: str,
        status: int,
        sent: int,
        if_none_match: str | None,
        query: str = "",
    ) -> None:
        with self._lock:
            self._log_entries.append(LogEntry(method, path, status, sent, if_none_match, query))

    def _register(self, connection: socket.socket) -> None:
        with self._lock:
            self._connections.add(connection)
        if self._stop.is_set():  # accepted while closing
            _hang_up(connection)

    def _unregister(self, connection: socket.socket) -> None:
        with self._lock:
            self._connections.discard(connection)

    def _track(self, thread: threading.Thread) -> None:
        with self._lock:
            self._threads = [t for t in self._threads if t.is_alive()]
            self._threads.append(thread)

    def _file(self, path: str) -> Path | None:
        candidate = (self.root / path.lstrip("/")).resolve()
        if not candidate.is_relative_to(self.root) or not candidate.is_file():
            return None
        return candidate


@pytest.fixture(name="http_server")
def http_server_fixture(tmp_path: Path) -> Iterator[MirrorHTTPServer]:
    """A server of a fresh folder (`server.root`, empty): write files there, then fetch."""
    root = tmp_path / "www"
    root.mkdir()
    with MirrorHTTPServer(root) as server:
        yield server
