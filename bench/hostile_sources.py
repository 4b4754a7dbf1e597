"""Hostile remote sources against `cachegql index`: what each costs the indexer.

    python bench/hostile_sources.py --venv /work/main/.venv --markdown before.md
    python bench/hostile_sources.py --venv .venv --only gzip-bomb,trickle
    python bench/hostile_sources.py --list

Standard library only (and the `openssl` command, for the TLS server's test CA): run it
with any Python 3.11+. It serves, on 127.0.0.1 only, a good build cache and every hostile
source of the remote-sources issue (`CASES`), over http and over https signed by a CA it
makes; then, for each case, it runs the venv's `cachegql index HOSTILE GOOD --tag develop`
in a process of its own, under an address-space cap and a timeout, and reports its exit
status, wall time, peak RSS (`wait4`, the command's own), the problem lines and how many
specs it published. The good source is there to show that the rest still loads.

The test suite (tests/test_hostile_remote.py) runs the same server and cases against the
code under test; this script measures any venv, so before and after can be compared.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import re
import shutil
import signal
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import zlib
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

HOST = "127.0.0.1"
GOOD_SPECS = 30  # the good mirror: `cachegql demo-data --mirror --specs 30 --packages 5`
BOMB_BYTES = 1 << 30  # what the gzip bombs decompress to
MIB = 1 << 20

# The forked runner: a command's peak memory (`ru_maxrss`) is its own only when it is
# forked from a small process, not from the caller (a test runner is hundreds of MB).
_LIMITED = """
import os, resource, sys
limit, report, command = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
child = os.fork()
if child == 0:
    os.execv(command[0], command)
_, status, usage = os.wait4(child, 0)
with open(report, "w") as file:
    file.write(str(usage.ru_maxrss))
code = os.waitstatus_to_exitcode(status)
sys.exit(code if code >= 0 else 128 - code)
"""


@dataclass(frozen=True)
class Case:
    """A hostile source: its path on the server, what the fixed indexer must say about
    it, and the flags the tests give to keep it short (the benchmark uses the defaults)."""

    name: str
    what: str
    path: str
    problem: str  # a regular expression the problem line matches
    tls: bool = False
    test_flags: tuple[str, ...] = ()
    good_first: bool = False  # the good source given before the hostile one


CASES: tuple[Case, ...] = (
    Case(
        "file-listing",
        "a listing over http naming a local mirror by file:// URL",
        "/listing-file.json",
        r"entry 'local' of tag 'develop' skipped: file://\S+ is a local file; a source read "
        r"from the network may only name network sources",
    ),
    Case(
        "scheme-listing",
        "a listing over http naming ftp: and file: (one slash) locations",
        "/listing-schemes.json",
        r"entry 'ftp' of tag 'develop' skipped: ftp://\S+ is a ftp: location",
    ),
    Case(
        "redirect-chain",
        "a chain of 6 redirects before the mirror",
        "/redirect/6/good/mirror",
        r"more than 5 redirects \(--max-redirects\)",
    ),
    Case(
        "redirect-loop",
        "a redirect to itself",
        "/loop/good/mirror",
        r"more than 5 redirects \(--max-redirects\)",
    ),
    Case(
        "redirect-file",
        "a redirect to file:///etc/passwd",
        "/to-file/good/mirror",
        r"redirected to file:///etc/passwd: not a network location",
    ),
    Case(
        "https-downgrade",
        "a redirect from https to plain http",
        "/downgrade/good/mirror",
        r"redirected to http://\S+: from https to plain http \(a downgrade\)",
        tls=True,
    ),
    Case(
        "gzip-bomb",
        "Content-Encoding: gzip, 1 MiB that inflates to 1 GiB",
        "/gzip-bomb/index.json",
        r"decompresses to over 200 times its compressed size .*a compression bomb",
    ),
    Case(
        "blob-bomb",
        "a v3 mirror whose index blob (checksum correct) inflates to 1 GiB",
        "/bomb-mirror",
        r"gzip content decompresses to over 200 times its compressed size",
    ),
    Case(
        "endless",
        "an index.json whose body never ends",
        "/endless/index.json",
        r"the body is larger than [\d,]+ bytes \(--max-source-bytes\)",
        test_flags=("--max-source-bytes", "32MiB"),
    ),
    Case(
        "trickle",
        "an index.json sent a byte every 0.2 s",
        "/trickle/index.json",
        r"its source not read within 2 s \(--source-time-limit\)",
        test_flags=("--source-time-limit", "2"),
    ),
    Case(
        "slow-reads",
        "a v2 mirror whose every file answers after 0.8 s",
        "/slowly/good/stacks/root",
        r"its source not read within 2 s \(--source-time-limit\)",
        test_flags=("--source-time-limit", "2"),
    ),
    Case(
        "wrong-length",
        "Content-Length 100,000 and 100 bytes sent",
        "/wrong-length/index.json",
        r"the server broke off the answer .* after 4 attempts",
    ),
    Case(
        "announced-huge",
        "Content-Length of 8 GiB announced, then silence",
        "/announce-huge/index.json",
        r"announces a body of 8,589,934,592 bytes, larger than 1,073,741,824 bytes "
        r"\(--max-source-bytes\); not read",
    ),
    Case(
        "listing-100k",
        "a listing of 100,000 stacks",
        "/listing-100k.json",
        r"the listing names 100,000 stacks, over the limit of 10,000 "
        r"\(--max-listing-entries\); skipped whole",
    ),
    Case(
        "deep-json",
        "JSON nested 100,000 deep",
        "/deep.json",
        r"not valid JSON: nested deeper than 1,024 levels",
    ),
    Case(
        "invalid-utf8",
        "an index.json with bytes that are not UTF-8",
        "/bad-utf8.json",
        r"not valid JSON: not UTF-8 text",
    ),
)


# Fixtures: the files the server serves, made once per work folder.


def make_fixtures(work: Path, cli: str) -> None:
    """The good and local demo mirrors (with the venv's `cachegql`), the bombs."""
    for name, seed in (("good", 1), ("local", 2)):
        if not (work / name / "mirror").is_dir():
            subprocess.run(
                [
                    *(cli, "demo-data", "--mirror", "--specs", str(GOOD_SPECS)),
                    *("--packages", "5", "--seed", str(seed), "--out", str(work / name)),
                ],
                check=True,
                stdout=subprocess.DEVNULL,
            )
    bomb = work / "bomb.gz"
    if not bomb.is_file():
        bomb.write_bytes(_gzip_bomb(BOMB_BYTES))
    if not (work / "bomb-mirror").is_dir():
        _bomb_mirror(work / "bomb-mirror", bomb.read_bytes())
    _tls_files(work)


def _gzip_bomb(size: int) -> bytes:
    """gzip data of `size` zero bytes, made a MiB at a time."""
    deflate = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    zeros = bytes(MIB)
    parts = [deflate.compress(zeros) for _ in range(size // MIB)]
    return b"".join(parts) + deflate.flush()


def _bomb_mirror(root: Path, blob: bytes) -> None:
    """A v3 mirror whose index manifest names `blob` by its true checksum."""
    checksum = hashlib.sha256(blob).hexdigest()
    path = root / "blobs" / "sha256" / checksum[:2] / checksum
    path.parent.mkdir(parents=True)
    path.write_bytes(blob)
    record = {
        "contentLength": len(blob),
        "mediaType": "application/vnd.spack.db.v8+json",
        "compression": "gzip",
        "checksumAlgorithm": "sha256",
        "checksum": checksum,
    }
    manifest = root / "v3" / "manifests" / "index" / "index.manifest.json"
    manifest.parent.mkdir(parents=True)
    manifest.write_text(json.dumps({"version": 3, "data": [record]}))


def _tls_files(work: Path) -> None:
    """A test CA and a certificate for 127.0.0.1 signed by it (`openssl`)."""
    if (work / "tls" / "server.pem").is_file():
        return
    folder = work / "tls"
    folder.mkdir(exist_ok=True)

    def openssl(*args: str) -> None:
        subprocess.run(["openssl", *args], cwd=folder, check=True, capture_output=True)

    openssl(
        *("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2"),
        *("-subj", "/CN=cachegql test CA", "-keyout", "ca.key", "-out", "ca.pem"),
    )
    openssl(
        *("req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=127.0.0.1"),
        *("-keyout", "server.key", "-out", "server.csr"),
    )
    (folder / "san.cnf").write_text("subjectAltName=IP:127.0.0.1\n")
    openssl(
        *("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key"),
        *("-CAcreateserial", "-days", "2", "-extfile", "san.cnf", "-out", "server.pem"),
    )


# The server.


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A reader that refuses an answer part way closes (or resets) its connection: that
        # is the case working, not the server failing. Called within socketserver's
        # `except` block, so the error at hand is the one being handled.
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class HostileServer:
    """Serves the fixtures in `work` and the hostile answers, on http and https."""

    def __init__(self, work: Path) -> None:
        self.work = work
        self.stopping = threading.Event()
        self.http = self._server()
        self.https = self._server()
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(work / "tls" / "server.pem", work / "tls" / "server.key")
        self.https.socket = context.wrap_socket(self.https.socket, server_side=True)
        self._threads: list[threading.Thread] = []
        self._lock = threading.Lock()
        self.in_flight = 0
        self.most_in_flight = 0  # of the /slow requests at any one time

    def _server(self) -> ThreadingHTTPServer:
        server = _Server((HOST, 0), _Handler)
        server.owner = self  # type: ignore[attr-defined]
        return server

    def url(self, path: str, tls: bool = False) -> str:
        server = self.https if tls else self.http
        return f"{'https' if tls else 'http'}://{HOST}:{server.server_address[1]}{path}"

    def __enter__(self) -> HostileServer:
        for server in (self.http, self.https):
            thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1})
            thread.daemon = True
            thread.start()
            self._threads.append(thread)
        return self

    def __exit__(self, *_: object) -> None:
        self.stopping.set()
        for server in (self.http, self.https):
            server.shutdown()
            server.server_close()
        for thread in self._threads:
            thread.join(timeout=5)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: Any

    def log_message(self, format: str, *args: Any) -> None:
        pass

    @property
    def owner(self) -> HostileServer:
        return self.server.owner  # type: ignore[no-any-return]

    def do_GET(self) -> None:
        path = urlsplit(self.path).path
        for prefix, answer in _ROUTES:
            if path == prefix or path.startswith(prefix + "/"):
                with contextlib.suppress(OSError):  # the client may hang up: that is the point
                    answer(self, path)
                return
        self._file(path)

    def _send(self, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(body)

    def _redirect(self, location: str) -> None:
        self._send(302, b"", {"Location": location})

    def _file(self, path: str) -> None:
        work = self.owner.work.resolve()
        target = (work / path.lstrip("/")).resolve()
        if work not in target.parents or not target.is_file():
            self._send(404, b"not found")
            return
        self._send(200, target.read_bytes())

    def listing_file(self, _: str) -> None:
        local = self.owner.work / "local" / "mirror"
        entries = [{"label": "root", "url": "good/mirror"}]
        entries.append({"label": "local", "url": local.resolve().as_uri()})
        self._send(200, json.dumps({"develop": entries}).encode())

    def listing_schemes(self, _: str) -> None:
        entries = [{"label": "root", "url": "good/mirror"}]
        entries.append({"label": "ftp", "url": f"ftp://{HOST}/mirror"})
        entries.append({"label": "one-slash", "url": "file:/etc/passwd"})
        self._send(200, json.dumps({"develop": entries}).encode())

    def redirect(self, path: str) -> None:
        _, _, hops, rest = path.split("/", 3)
        left = int(hops) - 1
        self._redirect(f"/redirect/{left}/{rest}" if left else f"/{rest}")

    def loop(self, path: str) -> None:
        self._redirect(path)

    def to_file(self, _: str) -> None:
        self._redirect("file:///etc/passwd")

    def downgrade(self, path: str) -> None:
        self._redirect(self.owner.url(path.removeprefix("/downgrade")))

    def gzip_bomb(self, _: str) -> None:
        body = (self.owner.work / "bomb.gz").read_bytes()
        self._send(200, body, {"Content-Encoding": "gzip", "Content-Type": "application/json"})

    def endless(self, _: str) -> None:
        self.send_response(200)
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(b'{"database": {"version": "8", "installs": {"')
        block = b"a" * (1 << 16)
        sent = 0
        while not self.owner.stopping.is_set() and sent < 64 << 30:
            self.wfile.write(block)
            sent += len(block)

    def trickle(self, _: str) -> None:
        self.send_response(200)
        self.send_header("Connection", "close")
        self.end_headers()
        deadline = time.monotonic() + 900
        while not self.owner.stopping.wait(0.2) and time.monotonic() < deadline:
            self.wfile.write(b" ")
            self.wfile.flush()

    def wrong_length(self, _: str) -> None:
        self.send_response(200)
        self.send_header("Content-Length", "100000")
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(b'{"database": ' + b" " * 87)
        self.close_connection = True

    def announce_huge(self, _: str) -> None:
        self.send_response(200)
        self.send_header("Content-Length", str(8 << 30))
        self.end_headers()
        self.owner.stopping.wait(60)

    def slowly(self, path: str) -> None:
        self.owner.stopping.wait(0.8)
        self._file(path.removeprefix("/slowly"))

    def encoded(self, path: str) -> None:
        encoding = path.rsplit("/", 1)[-1]
        self._send(200, b"\x1f\x8b not really gzip", {"Content-Encoding": encoding})

    def served_gzip(self, path: str) -> None:
        """A file of the work folder sent with `Content-Encoding: gzip` (it is gzip)."""
        body = (self.owner.work / path.removeprefix("/served-gzip/")).read_bytes()
        self._send(200, body, {"Content-Encoding": "gzip"})

    def registry(self, path: str) -> None:
        """`/v2/NAME/...` as a hostile OCI registry answers it, by NAME."""
        name = path.split("/")[2]
        if name == "loop":
            self._redirect(path)
        elif name == "tofile":
            self._redirect("file:///etc/passwd")
        elif name == "bomb":
            self.gzip_bomb(path)
        else:
            self._send(404, b'{"errors": [{"code": "NAME_UNKNOWN"}]}')

    def slow(self, _: str) -> None:
        owner = self.owner
        with owner._lock:
            owner.in_flight += 1
            owner.most_in_flight = max(owner.most_in_flight, owner.in_flight)
        owner.stopping.wait(0.3)
        with owner._lock:
            owner.in_flight -= 1
        self._send(200, b"{}")

    def listing_100k(self, _: str) -> None:
        entries = [{"label": f"stack-{i}", "url": f"nothing/{i}"} for i in range(100_000)]
        self._send(200, json.dumps({"develop": entries}).encode())

    def deep(self, _: str) -> None:
        self._send(200, b"[" * 100_000 + b"]" * 100_000)

    def bad_utf8(self, _: str) -> None:
        self._send(200, b'{"database": {"version": "8", "installs": {"\xff\xfe": {}}}}')


_ROUTES: tuple[tuple[str, Callable[[_Handler, str], None]], ...] = (
    ("/listing-file.json", _Handler.listing_file),
    ("/listing-schemes.json", _Handler.listing_schemes),
    ("/redirect", _Handler.redirect),
    ("/loop", _Handler.loop),
    ("/to-file", _Handler.to_file),
    ("/downgrade", _Handler.downgrade),
    ("/gzip-bomb", _Handler.gzip_bomb),
    ("/endless", _Handler.endless),
    ("/trickle", _Handler.trickle),
    ("/wrong-length", _Handler.wrong_length),
    ("/announce-huge", _Handler.announce_huge),
    ("/encoded", _Handler.encoded),
    ("/slowly", _Handler.slowly),
    ("/slow", _Handler.slow),
    ("/v2", _Handler.registry),
    ("/served-gzip", _Handler.served_gzip),
    ("/listing-100k.json", _Handler.listing_100k),
    ("/deep.json", _Handler.deep),
    ("/bad-utf8.json", _Handler.bad_utf8),
)


# Running a case.


@dataclass
class Result:
    case: str
    returncode: int | None  # None: killed at the timeout
    seconds: float
    peak_rss_mb: float | None
    problems: list[str] = field(default_factory=list)
    specs: int | None = None
    stderr: str = ""

    @property
    def matched(self) -> bool:
        pattern = _CASES_BY_NAME[self.case].problem
        return any(re.search(pattern, line) for line in self.problems)


_CASES_BY_NAME = {case.name: case for case in CASES}
_SPECS = re.compile(r"(\d[\d,]*) specs?\b")


def run_case(
    cli: str,
    case: Case,
    server: HostileServer,
    work: Path,
    *,
    flags: tuple[str, ...] = (),
    timeout: float = 60.0,
    memory_cap: int = 4 << 30,
    env: dict[str, str] | None = None,
) -> Result:
    """`cachegql index HOSTILE GOOD --tag develop --out ...` in a process of its own."""
    run = Path(tempfile.mkdtemp(prefix=f"{case.name}-", dir=work))
    hostile, good = server.url(case.path, case.tls), server.url("/good/mirror")
    sources = (good, hostile) if case.good_first else (hostile, good)
    command = [cli, "index", *sources, "--tag", "develop", "--out", str(run / "ix"), *flags]
    environment = dict(env if env is not None else os.environ)
    environment["SSL_CERT_FILE"] = str(work / "tls" / "ca.pem")
    environment["CACHEGQL_CACHE_DIR"] = str(run / "cache")  # no answer cached across runs
    peak = run / "peak-kib"
    argv = [sys.executable, "-c", _LIMITED, str(memory_cap), str(peak), *command]
    started = time.monotonic()
    with (run / "out").open("w") as out, (run / "err").open("w") as err:
        process = subprocess.Popen(
            argv,
            env=environment,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=err,
            start_new_session=True,
        )
        try:
            returncode: int | None = process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            returncode = None
    seconds = time.monotonic() - started
    stdout, stderr = (run / "out").read_text(), (run / "err").read_text()
    specs = _SPECS.search(stdout)
    result = Result(
        case.name,
        returncode,
        seconds,
        int(peak.read_text()) / 1024 if peak.is_file() else None,
        [line for line in stderr.splitlines() if line.startswith(("problem: ", "error"))],
        int(specs.group(1).replace(",", "")) if specs else None,
        stderr,
    )
    shutil.rmtree(run, ignore_errors=True)
    return result


def _row(result: Result, flags: tuple[str, ...]) -> str:
    code = "killed" if result.returncode is None else str(result.returncode)
    peak = "?" if result.peak_rss_mb is None else f"{result.peak_rss_mb:,.0f} MB"
    specs = "-" if result.specs is None else str(result.specs)
    problem = result.problems[0] if result.problems else ""
    problem = problem if len(problem) <= 110 else problem[:110] + "..."
    return (
        f"| `{result.case}` | {' '.join(flags) or '-'} | {code} | {result.seconds:.1f} s "
        f"| {peak} | {specs} | {problem.replace('|', '/')} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--venv", type=Path, help="the venv whose cachegql is measured")
    parser.add_argument("--work", type=Path, default=Path("bench/work/hostile-sources"))
    parser.add_argument("--only", help="comma-separated case names")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds per case")
    parser.add_argument("--memory-cap-gb", type=float, default=4.0)
    parser.add_argument("--json", type=Path, help="write the results here")
    parser.add_argument("--markdown", type=Path, help="write the table here")
    parser.add_argument("--list", action="store_true", help="list the cases")
    args = parser.parse_args()
    if args.list:
        for case in CASES:
            print(f"{case.name:16} {case.what}")
        return
    if args.venv is None:
        parser.error("--venv is required")
    cli = str(args.venv / "bin" / "cachegql")
    chosen = [c for c in CASES if not args.only or c.name in args.only.split(",")]
    args.work.mkdir(parents=True, exist_ok=True)
    make_fixtures(args.work, cli)
    lines = [
        f"`cachegql index HOSTILE GOOD` with {args.venv} (timeout {args.timeout:g} s, "
        f"address space {args.memory_cap_gb:g} GB; GOOD is {GOOD_SPECS} specs)",
        "",
        "| case | flags | exit | time | peak RSS | specs | first problem line |",
        "|---|---|---|---|---|---|---|",
    ]
    print("\n".join(lines), flush=True)
    results = []
    known = subprocess.run([cli, "index", "--help"], capture_output=True, text=True).stdout
    with HostileServer(args.work) as server:
        for case in chosen:
            # The tests' shorter limits, where this cachegql has them: a trickle is
            # otherwise given the default 600 s, an endless body the default 1 GiB.
            flags = case.test_flags if all(f in known for f in case.test_flags[::2]) else ()
            result = run_case(
                cli,
                case,
                server,
                args.work,
                flags=flags,
                timeout=args.timeout,
                memory_cap=int(args.memory_cap_gb * (1 << 30)),
            )
            results.append(result)
            lines.append(_row(result, flags))
            print(lines[-1], flush=True)
    if args.json:
        args.json.write_text(json.dumps([asdict(r) for r in results], indent=1))
    if args.markdown:
        args.markdown.write_text("\n".join(lines) + "\n")


@contextlib.contextmanager
def serving(work: Path, cli: str) -> Iterator[HostileServer]:
    """The fixtures made and the server running, for the tests."""
    make_fixtures(work, cli)
    with HostileServer(work) as server:
        yield server


if __name__ == "__main__":
    main()
