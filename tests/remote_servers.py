"""Real OCI registries and S3 servers on 127.0.0.1, started and stopped by the tests.

- `Registry`: Debian's `docker-registry` (the CNCF distribution registry, installed by
  .ci/run), anonymous, behind htpasswd (a `Basic` challenge), or behind a `Bearer`
  challenge whose tokens come from `TokenServer`, a token service that grants a token
  only for the right username and password (the registry's `silly` access controller
  sends the challenge; the credential is checked by the token service).
- `MotoServer`: moto's standalone S3 server.
Skipped when the program is missing, failed under CI=true, where it must be there.
"""

from __future__ import annotations

import base64
import shutil
import socket
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import httpx

from tests.conftest import skip_unless_ci
from tests.http_fixture import ResetTolerantServer

HOST = "127.0.0.1"
USERNAME = "alice"
PASSWORD = "cachegql-test-pass"  # its bcrypt hash below, made once with crypt(3)
_BCRYPT = "$2b$04$CgaZgcqN5hSgg./mVtRbfuS5r8wL1NWgmhVTwdy/hDoUSE4.W1BNm"
REGISTRY = shutil.which("docker-registry") or "/usr/bin/docker-registry"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        return int(sock.getsockname()[1])


def _wait(url: str, process: subprocess.Popen[bytes], what: str) -> None:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{what} exited with {process.returncode}")
        try:
            httpx.get(url, timeout=1)
            return
        except httpx.HTTPError:
            time.sleep(0.1)
    raise RuntimeError(f"{what} did not answer at {url}")


def _stop(process: subprocess.Popen[bytes]) -> None:
    """Ask a server to stop; kill it after 10 s."""
    process.terminate()
    try:
        process.wait(10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


class TokenServer:
    """A token service: `GET /token` with the right basic credential gives a token."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                header = self.headers.get("authorization", "")
                owner.requests.append({"path": self.path, "authorization": header})
                expected = base64.b64encode(f"{USERNAME}:{PASSWORD}".encode()).decode()
                if header != f"Basic {expected}":
                    self.send_response(401)
                    self.end_headers()
                    return
                body = b'{"token": "granted-token"}'
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.server = ResetTolerantServer((HOST, 0), Handler)
        self.url = f"http://{HOST}:{self.server.server_address[1]}/token"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(5)


class Registry:
    """`docker-registry serve` on a free port: `auth` None, "htpasswd" or a token realm."""

    def __init__(self, folder: Path, auth: str | None = None) -> None:
        if not Path(REGISTRY).exists():
            skip_unless_ci("OCI tests: docker-registry not found (apt-get install docker-registry)")
        folder.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.host = f"{HOST}:{self.port}"
        config = [
            "version: 0.1",
            "log: {level: error}",
            f"storage: {{filesystem: {{rootdirectory: {folder / 'data'}}}}}",
            f"http: {{addr: '{self.host}', secret: cachegql-tests}}",
        ]
        if auth == "htpasswd":
            (folder / "htpasswd").write_text(f"{USERNAME}:{_BCRYPT}\n")
            config.append(f"auth: {{htpasswd: {{realm: tests, path: {folder / 'htpasswd'}}}}}")
        elif auth is not None:  # the realm of a token service
            config.append(f"auth: {{silly: {{realm: '{auth}', service: tests}}}}")
        (folder / "config.yml").write_text("\n".join(config) + "\n")
        self.log = (folder / "registry.log").open("wb")
        self.process = subprocess.Popen(
            [REGISTRY, "serve", str(folder / "config.yml")], stdout=self.log, stderr=self.log
        )
        try:
            _wait(f"http://{self.host}/v2/", self.process, "docker-registry")
        except Exception:
            self.close()
            raise

    def url(self, repository: str) -> str:
        return f"oci+http://{self.host}/{repository}"

    def close(self) -> None:
        _stop(self.process)
        self.log.close()


class MotoServer:
    """moto's S3 server on a free port; `endpoint` is its URL."""

    def __init__(self, folder: Path) -> None:
        # The one beside this Python (the project's venv), else one on the PATH.
        beside = Path(sys.executable).parent / "moto_server"
        program = str(beside) if beside.exists() else shutil.which("moto_server") or ""
        if not program or not Path(program).exists():
            skip_unless_ci("S3 tests: moto_server not found (moto[server] of the dev extras)")
        folder.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.endpoint = f"http://{HOST}:{self.port}"
        self.log = (folder / "moto.log").open("wb")
        self.process = subprocess.Popen(
            [program, "-H", HOST, "-p", str(self.port)], stdout=self.log, stderr=self.log
        )
        try:
            _wait(self.endpoint, self.process, "moto_server")
        except Exception:
            self.close()
            raise

    def close(self) -> None:
        _stop(self.process)
        self.log.close()
