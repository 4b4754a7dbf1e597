"""Hostile requests against `cachegql serve`: what each costs the server and everyone else.

    python bench/hostile.py --venv /work/ab-after/.venv \\
        --json /work/notes/hostile-before.json --markdown /work/notes/hostile-before.md
    python bench/hostile.py --venv VENV --workers 2 --only fragments
    python bench/hostile.py --venv VENV --quick          # short holds, no slow cases
    python bench/hostile.py --list                       # the cases

Standard library only: run it with any Python 3.11+ (e.g. the measured venv's own). It
serves a 200k-spec demo index (built with the venv's `cachegql` when missing) with
`cachegql serve --reload-interval 0 --no-access-log`, 1 worker (or `--workers 2`), under
an address-space cap (`--memory-cap-gb`, RLIMIT_AS) so that no case can take the machine.

While the cases run, a separate process of canaries sends, every 50 ms each, GET /healthz,
a hash-prefix lookup and a 5-spec page (these two with a varying unused variable, so the
response cache never answers them) and records their latency: for each case, the worst
canary latency overlapping it is the waiting it imposed on others. The server's RSS (the
process and its children) is sampled every 20 ms. Each case reports its HTTP status,
content type, `errors[].extensions.code`, duration (capped by `--timeout`), the server's
CPU seconds, RSS before, peak and after (`--after-delay` seconds later), the answer's size,
and whether the server survived; a server that died, stayed busy (no answer to a probe
within `--settle` seconds) or kept more than `--bloat-mb` over its fresh RSS is restarted.

Everything is bounded: one request per case (four for the `-x4` case), at most
`--connections` idle or trickling connections held for at most `--hold` seconds, on
127.0.0.1 only. Output: a JSON file of results and a markdown table (also on stdout).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import json
import os
import random
import re
import resource
import shutil
import signal
import socket
import string
import subprocess
import sys
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))  # its sibling modules

from machine import machine

ROOT = Path(__file__).resolve().parents[1]
WORK = ROOT / "bench" / "work"
HOST = "127.0.0.1"
DEFAULT_PORT = 8893
BASE32 = "abcdefghijklmnopqrstuvwxyz234567"
FACETS = "compilers oss platforms targets stacks versions packages namespaces"
BUCKET = "{ value count }"
KEEP_BODY_BYTES = 16 * 1024 * 1024  # answers longer than this are counted, not kept whole
EDGE_BYTES = 64 * 1024  # what is kept of the start and end of a longer answer
CHUNK = 1024 * 1024
MB = 1024 * 1024


# --------------------------------------------------------------------------------------
# A small HTTP/1.1 client on raw sockets: one deadline for the whole exchange, bodies
# streamed from generators, and the server's early answers or closes observed.


@dataclass
class Request:
    """One HTTP request; `body` is bytes, or a function making an iterator of chunks."""

    method: str
    path: str
    body: bytes | Callable[[], Iterator[bytes]] = b""
    body_size: int = -1  # required with a generator body
    headers: dict[str, str] = field(default_factory=dict)

    def size(self) -> int:
        return len(self.body) if isinstance(self.body, bytes) else self.body_size

    def head(self) -> bytes:
        headers = {"Host": f"{HOST}", "Accept": "application/json", **self.headers}
        if self.method == "POST":
            headers.setdefault("Content-Type", "application/json")
            headers["Content-Length"] = str(self.size())
        headers["Connection"] = "close"
        lines = [f"{self.method} {self.path} HTTP/1.1", *(f"{k}: {v}" for k, v in headers.items())]
        return ("\r\n".join(lines) + "\r\n\r\n").encode()

    def chunks(self) -> Iterator[bytes]:
        if isinstance(self.body, bytes):
            if self.body:
                yield self.body
        else:
            yield from self.body()


@dataclass
class Answer:
    """What came back (or did not) for one request."""

    status: int = 0
    content_type: str = ""
    size: int = 0
    seconds: float = 0.0
    timed_out: bool = False
    error: str = ""  # a connection error, e.g. the server closing while we sent
    bytes_sent: int = 0
    body: bytes | None = None  # whole, when at most KEEP_BODY_BYTES
    head: bytes = b""  # the first EDGE_BYTES
    tail: bytes = b""  # the last EDGE_BYTES


class _Deadline:
    def __init__(self, seconds: float) -> None:
        self.end = time.monotonic() + seconds

    def left(self) -> float:
        left = self.end - time.monotonic()
        if left <= 0:
            raise TimeoutError
        return left


class _Reader:
    """Buffered reads from a socket under a deadline; keeps only what is needed."""

    def __init__(self, sock: socket.socket, deadline: _Deadline) -> None:
        self.sock, self.deadline, self.buffer = sock, deadline, b""

    def fill(self) -> bool:
        self.sock.settimeout(self.deadline.left())
        data = self.sock.recv(CHUNK)
        self.buffer += data
        return bool(data)

    def until(self, marker: bytes) -> bytes:
        while marker not in self.buffer:
            if not self.fill():
                raise ConnectionError("closed before " + repr(marker))
        data, _, self.buffer = self.buffer.partition(marker)
        return data

    def take(self, size: int) -> bytes:
        while len(self.buffer) < size:
            if not self.fill():
                raise ConnectionError("closed in the body")
        data, self.buffer = self.buffer[:size], self.buffer[size:]
        return data

    def pieces(self, length: int | None, chunked: bool) -> Iterator[bytes]:
        """The body: `length` bytes, chunked, or until the server closes."""
        if chunked:
            while size := int(self.until(b"\r\n").split(b";")[0], 16):
                yield self.take(size)
                self.take(2)
            return
        if length is not None:
            while length > 0:
                if not self.buffer and not self.fill():
                    raise ConnectionError("closed in the body")
                piece, self.buffer = self.buffer[:length], self.buffer[length:]
                length -= len(piece)
                yield piece
            return
        while True:
            if self.buffer:
                yield self.buffer
                self.buffer = b""
            if not self.fill():
                return


def exchange(port: int, request: Request, timeout: float) -> Answer:
    """Send `request` on a new connection and read the whole answer, within `timeout`."""
    answer = Answer()
    started = time.monotonic()
    deadline = _Deadline(timeout)
    try:
        with socket.create_connection((HOST, port), timeout=deadline.left()) as sock:
            try:
                for piece in itertools.chain([request.head()], request.chunks()):
                    sock.settimeout(deadline.left())
                    sock.sendall(piece)
                    answer.bytes_sent += len(piece)
            except (BrokenPipeError, ConnectionResetError) as exc:
                answer.error = f"server closed while we sent ({type(exc).__name__})"
            _read_answer(_Reader(sock, deadline), answer)
    except TimeoutError:
        answer.timed_out = True
    except (ConnectionError, OSError) as exc:
        answer.error = answer.error or f"{type(exc).__name__}: {exc}"
    answer.seconds = time.monotonic() - started
    return answer


def _read_answer(reader: _Reader, answer: Answer) -> None:
    lines = reader.until(b"\r\n\r\n").decode("latin-1").split("\r\n")
    answer.status = int(lines[0].split()[1])
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    answer.content_type = headers.get("content-type", "")
    length = int(headers["content-length"]) if "content-length" in headers else None
    chunked = "chunked" in headers.get("transfer-encoding", "").lower()
    kept: list[bytes] | None = []
    for piece in reader.pieces(length, chunked):
        answer.size += len(piece)
        if len(answer.head) < EDGE_BYTES:
            answer.head += piece[: EDGE_BYTES - len(answer.head)]
        answer.tail = (answer.tail + piece)[-EDGE_BYTES:]
        if kept is not None:
            kept.append(piece)
            if answer.size > KEEP_BODY_BYTES:
                kept = None
    answer.body = b"".join(kept) if kept is not None else None


def post(query: str, variables: Any = None, **extra: Any) -> Request:
    payload: dict[str, Any] = {"query": query, **extra}
    if variables is not None:
        payload["variables"] = variables
    return Request("POST", "/graphql", json.dumps(payload).encode())


def raw_post(body: bytes) -> Request:
    return Request("POST", "/graphql", body)


def get(params: dict[str, str]) -> Request:
    return Request("GET", "/graphql?" + urllib.parse.urlencode(params))


# --------------------------------------------------------------------------------------
# The server under test, its memory and CPU.


def _descendants(pid: int) -> list[int]:
    found = []
    with contextlib.suppress(OSError):
        for task in Path(f"/proc/{pid}/task").iterdir():
            with contextlib.suppress(OSError):
                for child in (task / "children").read_text().split():
                    found += [int(child), *_descendants(int(child))]
    return found


def _rss_kb(pid: int) -> int:
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def _cpu_ticks(pid: int) -> int:
    with contextlib.suppress(OSError, IndexError, ValueError):
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])  # utime + stime
    return 0


class Server:
    """`cachegql serve` in its own session, under an address-space cap; restartable."""

    def __init__(self, args: argparse.Namespace, index: Path) -> None:
        self.command = [
            str(args.venv / "bin" / "cachegql"),
            "serve",
            "--index",
            str(index),
            "--host",
            HOST,
            "--port",
            str(args.port),
            "--workers",
            str(args.workers),
            "--reload-interval",
            "0",
            "--no-access-log",
            *args.serve_flag,
        ]
        self.port = args.port
        self.cap = int(args.memory_cap_gb * 1024**3)
        self.logs = args.logs
        self.process: subprocess.Popen[bytes] | None = None
        self.starts = 0
        self.probes = 0  # a new body each time: the response cache must not answer probes
        self.fresh_rss_mb = 0.0
        self.log_path = self.logs / "server-0.log"

    def _limit(self) -> None:  # runs in the child, before exec
        resource.setrlimit(resource.RLIMIT_AS, (self.cap, self.cap))

    def start(self) -> float:
        """Start it and wait until /readyz answers; the seconds that took."""
        self.starts += 1
        self.log_path = self.logs / f"server-{self.starts}.log"
        started = time.monotonic()
        with self.log_path.open("wb") as log:
            self.process = subprocess.Popen(
                self.command,
                cwd=self.logs,
                stdout=log,
                stderr=subprocess.STDOUT,
                preexec_fn=self._limit,
                start_new_session=True,
            )
        while time.monotonic() - started < 120:
            if self.process.poll() is not None:
                tail = self.log_path.read_text(errors="replace")[-2000:]
                raise RuntimeError(f"the server exited at start:\n{tail}")
            if exchange(self.port, Request("GET", "/readyz"), 2).status == 200:
                time.sleep(0.5)  # let the workers of --workers N all come up
                self.fresh_rss_mb = self.rss_mb()
                return time.monotonic() - started
            time.sleep(0.1)
        raise RuntimeError("the server did not become ready within 120 s")

    def stop(self) -> None:
        if self.process is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()
        self.process = None

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def pids(self) -> list[int]:
        if not self.alive():
            return []
        assert self.process is not None
        return [self.process.pid, *_descendants(self.process.pid)]

    def rss_mb(self) -> float:
        return sum(_rss_kb(pid) for pid in self.pids()) / 1024

    def cpu_seconds(self) -> float:
        return sum(_cpu_ticks(pid) for pid in self.pids()) / os.sysconf("SC_CLK_TCK")

    def log_size(self) -> int:
        return self.log_path.stat().st_size if self.log_path.exists() else 0

    def log_since(self, offset: int) -> str:
        with self.log_path.open("rb") as log:
            log.seek(offset)
            return log.read().decode(errors="replace")

    def responsive(self, within: float) -> bool:
        """Whether /healthz and a small page (which needs the worker thread) answer."""
        if not self.alive():
            return False
        self.probes += 1
        page = post("{ specs(first: 5) { nodes { hash } } }", {"probe": self.probes})
        health = exchange(self.port, Request("GET", "/healthz"), within)
        return health.status == 200 and exchange(self.port, page, within).status == 200


class RssSampler(threading.Thread):
    """The server's total RSS (process and children), every `interval` seconds."""

    def __init__(self, server: Server, interval: float = 0.02) -> None:
        super().__init__(daemon=True)
        self.server, self.interval = server, interval
        self.samples: list[tuple[float, float]] = []
        self.stopping = threading.Event()

    def run(self) -> None:
        while not self.stopping.wait(self.interval):
            self.samples.append((time.monotonic(), self.server.rss_mb()))

    def peak(self, start: float, end: float) -> float:
        return max((mb for t, mb in self.samples if start <= t <= end), default=0.0)


# --------------------------------------------------------------------------------------
# Canaries: a separate process (so the benchmark's own CPU use does not delay them) of
# three closed loops, each a request on a new connection, then 50 ms of sleep.

CANARY_KINDS = ("healthz", "lookup", "page")


def canary_requests(hash7: str) -> dict[str, Callable[[int], Request]]:
    lookup = f'{{ spec(hash: "{hash7}") {{ name }} }}'
    page = "{ specs(first: 5) { nodes { hash } } }"
    return {
        "healthz": lambda n: Request("GET", "/healthz"),
        # An unused variable makes every body new, so the response cache never answers.
        "lookup": lambda n: post(lookup, {"canary": n}),
        "page": lambda n: post(page, {"canary": n}),
    }


async def _canary_loop(
    kind: str, make: Callable[[int], Request], port: int, interval: float, timeout: float
) -> None:
    parent = os.getppid()
    for n in itertools.count():
        if os.getppid() != parent:
            return
        started = time.monotonic()
        status, error = 0, ""
        try:
            status = await asyncio.wait_for(_canary_request(port, make(n)), timeout)
        except (OSError, TimeoutError, ValueError, asyncio.IncompleteReadError) as exc:
            error = type(exc).__name__
        print(json.dumps([kind, started, time.monotonic(), status, error]), flush=True)
        await asyncio.sleep(interval)


async def _canary_request(port: int, request: Request) -> int:
    reader, writer = await asyncio.open_connection(HOST, port)
    try:
        writer.write(request.head() + b"".join(request.chunks()))
        await writer.drain()
        data = await reader.read()  # Connection: close, so until the server closes
        return int(data.split(b" ", 2)[1]) if data else 0
    finally:
        writer.close()


def canary_main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="hostile.py _canary")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--hash", required=True)
    parser.add_argument("--interval", type=float, default=0.05)
    parser.add_argument("--timeout", type=float, default=180)
    args = parser.parse_args(argv)
    makers = canary_requests(args.hash)

    async def run() -> None:
        await asyncio.gather(
            *(
                _canary_loop(kind, makers[kind], args.port, args.interval, args.timeout)
                for kind in CANARY_KINDS
            )
        )

    with contextlib.suppress(BrokenPipeError, KeyboardInterrupt):
        asyncio.run(run())
    return 0


class Canaries:
    """The canary process and what it reported."""

    def __init__(self, port: int, hash7: str, interval: float) -> None:
        self.process = subprocess.Popen(
            [
                sys.executable,
                str(Path(__file__).resolve()),
                "_canary",
                "--port",
                str(port),
                "--hash",
                hash7,
                "--interval",
                str(interval),
            ],
            stdout=subprocess.PIPE,
            text=True,
        )
        self.records: list[tuple[str, float, float, int, str]] = []
        self.interval = interval
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            kind, start, end, status, error = json.loads(line)
            self.records.append((kind, start, end, status, error))

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=10)

    def during(self, start: float, end: float, sent_within: bool = False) -> dict[str, Any]:
        """Per kind: the worst latency of requests overlapping [start, end] (only those sent
        in it with `sent_within`), their count and errors; a request still unanswered counts
        with its wait so far."""
        now = time.monotonic()
        records = list(self.records)
        result: dict[str, Any] = {}
        for kind in CANARY_KINDS:
            mine = [r for r in records if r[0] == kind]
            overlapping = [r for r in mine if r[1] <= end and r[2] >= start]
            if sent_within:
                overlapping = [r for r in overlapping if r[1] >= start]
            worst = max((r[2] - r[1] for r in overlapping), default=0.0)
            errors = sorted({r[4] or str(r[3]) for r in overlapping if r[4] or r[3] != 200})
            # Unanswered for over a second since the last answer (and the case's end).
            pending = bool(mine) and mine[-1][2] < end and now - mine[-1][2] > 1 + self.interval
            if pending:
                worst = max(worst, now - (mine[-1][2] + self.interval))
            result[kind] = {
                "worst_ms": round(worst * 1000, 1),
                "requests": len(overlapping),
                "errors": errors,
                "still_waiting": pending,
            }
        return result


# --------------------------------------------------------------------------------------
# The hostile requests: small generators of queries and bodies.


_UNIQUE = itertools.count(1)


def fragment_fanout(levels: int, width: int = 4) -> str:
    """Levels of `width` fragments on Query, each spreading all of the next level's; the
    last level reads `__typename`. The text grows linearly, the expansion as width**levels.
    Each call names its operation anew (FanOut1, FanOut2, ...), so that no server cache of
    validated documents can answer it."""
    names = "abcdefgh"[:width]
    top = " ".join(f"...L1{x}" for x in names)
    lines = [f"query FanOut{next(_UNIQUE)} {{ {top} }}"]
    for level in range(1, levels + 1):
        spreads = " ".join(f"...L{level + 1}{x}" for x in names)
        body = spreads if level < levels else "__typename"
        lines += [f"fragment L{level}{x} on Query {{ {body} }}" for x in names]
    return "\n".join(lines)


def aliases(count: int, selection: str) -> str:
    return "{ " + " ".join(f"a{i}: {selection}" for i in range(count)) + " }"


def all_facets() -> str:
    return "facets { " + " ".join(f"{name} {BUCKET}" for name in FACETS.split()) + " }"


def stacks_selection() -> str:
    """Every field of Stack that is not a connection."""
    buckets = " ".join(f"{name} {BUCKET}" for name in ("compilers", "oss", "platforms", "targets"))
    return f"stacks {{ name tag numSpecs numPackages {buckets} }}"


def broad_or(count: int) -> str:
    entries = ", ".join('{ version: { ne: "x.y" } }' for _ in range(count))
    return f"{{ specs(filter: {{ or: [{entries}] }}) {{ totalCount }} }}"


def broad_or_variables(count: int) -> Request:
    """The same `or` as a variable: no token limit applies to variables, so its price (and,
    below the price limit, the index's work) is what decides."""
    entries = [{"version": {"ne": "x.y"}}] * count
    query = "query Broad($f: SpecFilter) { specs(filter: $f) { totalCount } }"
    return post(query, {"f": {"or": entries}})


def search_terms_aliased(roots: int = 14) -> Request:
    """`roots` aliased spec searches, each of a word of 32 three-letter parts (every part
    a prefix that may expand to 64 terms) repeated to the search's 2,000 characters:
    priced on the event loop, such a search must stop counting at the threshold, not
    build every part's query first (it took 0.4 s a request before it did)."""
    word = "-".join(["lib"] * 32)
    text = " ".join([word] * 15)
    names = [f"v{i}" for i in range(roots)]
    declared = ", ".join(f"${n}: String" for n in names)
    fields = " ".join(f"{n}: specs(search: ${n}, first: 1) {{ totalCount }}" for n in names)
    return post(f"query({declared}) {{ {fields} }}", {n: text for n in names})


def base32_word(size: int, seed: int = 7) -> str:
    return "".join(random.Random(seed).choices(BASE32, k=size))


def search(size: int) -> str:
    return f'{{ specs(search: "{base32_word(size)}") {{ totalCount nodes {{ hash }} }} }}'


def deep_variables(depth: int) -> Request:
    """A SpecFilter variable `{"not": {"not": ... {}}}` `depth` levels deep, written as text
    (8 bytes a level; Python's json module cannot encode it that deep)."""
    chain = '{"not":' * depth + "{}" + "}" * depth
    query = "query Deep($f: SpecFilter) { specs(filter: $f, first: 1) { totalCount } }"
    return raw_post(f'{{"query": {json.dumps(query)}, "variables": {{"f": {chain}}}}}'.encode())


def streamed(start: bytes, fill: bytes, end: bytes, size: int) -> Request:
    """A POST of `size` bytes: `start`, then `fill` repeated, then `end`, streamed in 1 MB
    pieces so the client never holds it."""
    pad = size - len(start) - len(end)

    def body() -> Iterator[bytes]:
        yield start
        piece = fill * CHUNK
        for offset in range(0, pad, CHUNK):
            yield piece[: min(CHUNK, pad - offset)]
        yield end

    return Request("POST", "/graphql", body, size)


def padded_json(size: int) -> Request:
    """A valid request: `{ __typename }` and an ignored "padding" string."""
    return streamed(b'{"query": "{ __typename }", "padding": "', b"a", b'"}', size)


def comment_query(size: int) -> Request:
    """A query that is one huge comment line, then `{ __typename }`."""
    return streamed(b'{"query": "# ', b"x", b'\\n{ __typename }"}', size)


def cursor(size: int) -> str:
    return "".join(random.Random(3).choices(string.ascii_letters + string.digits, k=size))


# --------------------------------------------------------------------------------------
# Running cases.


@dataclass
class Context:
    port: int
    timeout: float
    hash7: str
    quick: bool
    connections: int
    hold: tuple[float, ...]  # checkpoints of connection cases, in seconds


@dataclass
class Outcome:
    """What a case observed on its side of the connection."""

    status: str = ""
    content_type: str = ""
    codes: list[str] = field(default_factory=list)
    message: str = ""
    seconds: float = 0.0
    timed_out: bool = False
    request_bytes: int = 0
    answer_bytes: int = 0
    notes: list[str] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)


_CODE = re.compile(rb'"code"\s*:\s*"([A-Z_]+)"')
_MESSAGE = re.compile(rb'"message"\s*:\s*"((?:[^"\\]|\\.){0,300})')


def describe(answer: Answer, request: Request) -> Outcome:
    outcome = Outcome(
        status=str(answer.status or "-"),
        content_type=answer.content_type.split(";")[0],
        seconds=round(answer.seconds, 3),
        timed_out=answer.timed_out,
        request_bytes=request.size() + len(request.head()),
        answer_bytes=answer.size,
    )
    if answer.timed_out:
        outcome.notes.append(f"no answer within the client timeout ({answer.seconds:.0f} s)")
    if answer.error:
        outcome.notes.append(answer.error)
    if answer.bytes_sent < len(request.head()) + request.size():
        outcome.notes.append(f"sent {answer.bytes_sent / MB:.1f} MB of {request.size() / MB:.1f}")
    if answer.body is not None and "json" in outcome.content_type:
        try:
            parsed = json.loads(answer.body)
        except ValueError:
            outcome.notes.append("answer is not valid JSON")
        else:
            errors = parsed.get("errors") if isinstance(parsed, dict) else None
            for error in errors or []:
                code = (error.get("extensions") or {}).get("code", "(none)")
                if code not in outcome.codes:
                    outcome.codes.append(code)
            if errors:
                outcome.message = str(errors[0].get("message", ""))[:300]
                if any("extensions" not in e or "code" not in e["extensions"] for e in errors):
                    outcome.notes.append("an error without extensions.code")
            if isinstance(parsed, dict) and parsed.get("data") is not None and not errors:
                keys = list(parsed["data"])
                more = ", ..." if len(keys) > 3 else ""
                outcome.notes.append(f"answered with data ({', '.join(keys[:3])}{more})")
    elif answer.size:  # too large to keep: look at its ends only
        edges = answer.head + answer.tail
        outcome.codes = sorted({m.decode() for m in _CODE.findall(edges)})
        found = _MESSAGE.search(edges)
        outcome.message = found.group(1).decode(errors="replace")[:300] if found else ""
        outcome.notes.append(f"answer of {answer.size / MB:.0f} MB not parsed (ends searched)")
    return outcome


def single(build: Callable[[Context], Request]) -> Callable[[Context], Outcome]:
    """A case of one request."""

    def run(ctx: Context) -> Outcome:
        request = build(ctx)
        return describe(exchange(ctx.port, request, ctx.timeout), request)

    return run


def concurrent(build: Callable[[Context], Request], copies: int) -> Callable[[Context], Outcome]:
    """A case of `copies` requests (built apart) at once, each on its own connection."""

    def run(ctx: Context) -> Outcome:
        requests = [build(ctx) for _ in range(copies)]
        with ThreadPoolExecutor(copies) as pool:
            answers = list(pool.map(lambda r: exchange(ctx.port, r, ctx.timeout), requests))
        outcomes = [describe(a, r) for a, r in zip(answers, requests, strict=True)]
        first = outcomes[0]
        first.seconds = max(o.seconds for o in outcomes)
        first.timed_out = any(o.timed_out for o in outcomes)
        first.status = "/".join(sorted({o.status for o in outcomes}))
        first.extra["each_seconds"] = [o.seconds for o in outcomes]
        first.notes.insert(
            0,
            f"{copies} at once; each: "
            + ", ".join(f"{'> ' if o.timed_out else ''}{o.seconds:.1f} s" for o in outcomes),
        )
        return first

    return run


def repeated(
    build: Callable[[Context, int], Request], copies: int, seconds: float
) -> Callable[[Context], Outcome]:
    """A case of `copies` connections at once, each sending requests (the `n`th built
    with `n`) one after the other for `seconds`: a steady load rather than one request."""

    def run(ctx: Context) -> Outcome:
        counter = itertools.count()
        stop = time.monotonic() + seconds

        def client(_: int) -> list[tuple[Answer, Request]]:
            done = []
            while time.monotonic() < stop:
                request = build(ctx, next(counter))
                done.append((exchange(ctx.port, request, ctx.timeout), request))
            return done

        with ThreadPoolExecutor(copies) as pool:
            exchanged = [pair for pairs in pool.map(client, range(copies)) for pair in pairs]
        outcomes = [describe(a, r) for a, r in exchanged]
        first = outcomes[0]
        each = sorted(o.seconds for o in outcomes)
        first.seconds = each[-1]
        first.timed_out = any(o.timed_out for o in outcomes)
        first.status = "/".join(sorted({o.status for o in outcomes}))
        first.extra = {"answers": len(outcomes), "median_s": each[len(each) // 2]}
        first.notes.insert(
            0,
            f"{len(outcomes)} answers over {copies} connections in {seconds:.0f} s; median "
            f"{each[len(each) // 2] * 1000:.1f} ms, slowest {each[-1] * 1000:.1f} ms",
        )
        return first

    return run


def largest_inline(n: int) -> Request:
    """The largest operation the server runs on its event loop at the benchmark's 20k
    specs: a 100-spec page over the whole default tag (every spec read, fewer than
    `cachegql.schema.inline.INLINE_MAX_READS`) with the benchmark's 7 facets (its price
    within `INLINE_MAX_PRICE`). An unused variable keeps the response cache out."""
    query = (
        "{ specs(first: 100) { totalCount nodes { hash name version os target "
        "compiler { name version } } facets { compilers { value count } oss { value count } "
        "platforms { value count } targets { value count } stacks { value count } "
        "versions(first: 20) { value count } packages(first: 20) { value count } } } }"
    )
    return post(query, {"n": n})


def cursor_echo(size: int) -> Callable[[Context], Outcome]:
    """An `after:` cursor of `size` bytes: is it echoed whole in the error?"""

    def run(ctx: Context) -> Outcome:
        value = cursor(size)
        request = post(f'{{ specs(first: 1, after: "{value}") {{ totalCount }} }}')
        answer = exchange(ctx.port, request, ctx.timeout)
        outcome = describe(answer, request)
        body = answer.body or b""
        echoed = value.encode() in body
        outcome.extra["cursor_echoed_whole"] = echoed
        outcome.notes.append(
            "the whole cursor is echoed in the answer" if echoed else "cursor not echoed whole"
        )
        outcome.message = outcome.message[:120]
        return outcome

    return run


def _closed(sock: socket.socket) -> tuple[bool, bytes]:
    """Whether the server closed `sock` (non-blocking), and any bytes it sent."""
    try:
        data = sock.recv(4096)
    except BlockingIOError:
        return False, b""
    except OSError:
        return True, b""
    return (not data), data


def hold_connections(
    ctx: Context, count: int, first: bytes, drip: Iterator[bytes] | None, label: str
) -> Outcome:
    """Open `count` connections, send `first` on each, then one byte of `drip` a second on
    each (nothing when None); count those still open at each checkpoint of `ctx.hold`."""
    outcome = Outcome()
    socks: list[socket.socket] = []
    failed = 0
    for _ in range(count):
        try:
            sock = socket.create_connection((HOST, ctx.port), timeout=5)
            if first:
                sock.sendall(first)
            sock.setblocking(False)
            socks.append(sock)
        except OSError:
            failed += 1
    opened = time.monotonic()
    closed_at: dict[int, float] = {}
    replies: dict[str, int] = {}
    open_at: dict[str, int] = {}
    pending = list(ctx.hold)
    drips = list(itertools.islice(drip, int(max(ctx.hold)) + 2)) if drip is not None else []
    second = 0
    try:
        while pending:
            second += 1
            time.sleep(max(0.0, opened + second - time.monotonic()))
            elapsed = time.monotonic() - opened
            for i, sock in enumerate(socks):
                if i in closed_at:
                    continue
                gone, data = _closed(sock)
                if data:
                    line = data.split(b"\r\n", 1)[0].decode("latin-1")[:40]
                    replies[line] = replies.get(line, 0) + 1
                if not gone and drips:
                    try:
                        sock.send(drips[min(second - 1, len(drips) - 1)])
                    except OSError:
                        gone = True
                if gone:
                    closed_at[i] = elapsed
            while pending and elapsed >= pending[0]:
                open_at[f"{pending.pop(0):.0f}s"] = len(socks) - len(closed_at)
    finally:
        for sock in socks:
            sock.close()
    outcome.seconds = round(time.monotonic() - opened, 1)
    outcome.status = "-" if not replies else ", ".join(replies)
    outcome.request_bytes = len(first) + (second if drips else 0)
    summary = ", ".join(f"{n}/{len(socks)} open after {t}" for t, n in open_at.items())
    outcome.notes.append(f"{label}: {summary}")
    if failed:
        outcome.notes.append(f"{failed} connections could not be opened")
    if closed_at:
        times = sorted(closed_at.values())
        outcome.notes.append(
            f"server closed {len(times)} (first after {times[0]:.0f} s, last {times[-1]:.0f} s)"
        )
    if replies:
        outcome.notes.append(
            "server replied: " + ", ".join(f"{k} x{v}" for k, v in replies.items())
        )
    outcome.extra = {
        "connections": len(socks),
        "failed_to_open": failed,
        "open_at": open_at,
        "closed_after_s": sorted(round(t, 1) for t in closed_at.values()),
        "replies": replies,
    }
    return outcome


def idle_connections(ctx: Context) -> Outcome:
    return hold_connections(ctx, ctx.connections, b"", None, "idle, nothing sent")


def trickle_headers(ctx: Context) -> Outcome:
    """A request line and an endless run of headers, one byte a second."""
    stream = itertools.chain(
        b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n", itertools.cycle(b"X-Slow: 1\r\n")
    )
    return hold_connections(
        ctx, max(1, ctx.connections // 10), b"", (bytes([b]) for b in stream), "headers 1 B/s"
    )


def trickle_body(ctx: Context) -> Outcome:
    """A whole head announcing a 4 KB JSON body, then the body one byte a second."""
    body = json.dumps({"query": "{ tags { name } }", "pad": "a" * 4000}).encode()
    head = (
        f"POST /graphql HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        f"Accept: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    ).encode()
    return hold_connections(
        ctx, max(1, ctx.connections // 10), head, (bytes([b]) for b in body), "body 1 B/s"
    )


def quiet(ctx: Context) -> Outcome:
    """No hostile request: the canaries' latency on an idle server, for reference."""
    time.sleep(5)
    return Outcome(status="-", seconds=5.0, notes=["reference: no hostile request"])


@dataclass
class Case:
    name: str
    group: str
    description: str
    run: Callable[[Context], Outcome]
    slow: bool = False  # skipped by --quick


def _q(query: Callable[[Context], str]) -> Callable[[Context], Outcome]:
    return single(lambda ctx: post(query(ctx)))


CASES: list[Case] = [
    Case("quiet", "reference", "5 s with no hostile request", quiet),
    Case(
        "inline-largest",
        "inline",
        "4 clients sending, for 3 s, the largest operation run on the event loop",
        repeated(lambda ctx, n: largest_inline(n), 4, 3.0),
    ),
    Case(
        "fragments-2.6kb",
        "fragments",
        "12 levels of 4 fragments, each spreading the next level's 4 (2.6 KB)",
        _q(lambda ctx: fragment_fanout(12)),
    ),
    Case(
        "fragments-2.9kb",
        "fragments",
        "13 levels of 4 fragments, each spreading the next level's 4 (2.9 KB)",
        _q(lambda ctx: fragment_fanout(13)),
        slow=True,
    ),
    Case(
        "fragments-2.6kb-x4",
        "fragments",
        "four different 2.6 KB fan-out queries at once (each on its own connection)",
        concurrent(lambda ctx: post(fragment_fanout(12)), 4),
    ),
    Case(
        "alias-spec-5000",
        "aliases",
        '5,000 aliases of spec(hash: "<7 chars>") { name }',
        _q(lambda ctx: aliases(5000, f'spec(hash: "{ctx.hash7}") {{ name }}')),
    ),
    Case(
        "alias-spec-20000",
        "aliases",
        '20,000 aliases of spec(hash: "<7 chars>") { name }',
        _q(lambda ctx: aliases(20000, f'spec(hash: "{ctx.hash7}") {{ name }}')),
        slow=True,
    ),
    Case(
        "alias-stacks-5000",
        "aliases",
        "5,000 aliases of stacks { every non-connection field of Stack }",
        _q(lambda ctx: aliases(5000, stacks_selection())),
    ),
    Case(
        "alias-facets-1000",
        "aliases",
        "1,000 aliases of specs(first: 0) { facets { all 8 facets } }",
        _q(lambda ctx: aliases(1000, f"specs(first: 0) {{ {all_facets()} }}")),
    ),
    Case(
        "or-ne-2000",
        "filters",
        'specs(filter: { or: [2,000 x { version: { ne: "x.y" } }] }) { totalCount }',
        _q(lambda ctx: broad_or(2000)),
    ),
    Case(
        "or-ne-10000",
        "filters",
        'specs(filter: { or: [10,000 x { version: { ne: "x.y" } }] }) { totalCount }',
        _q(lambda ctx: broad_or(10000)),
    ),
    Case(
        "or-ne-4000-vars",
        "filters",
        "the `or` of 4,000 `ne` as a variable (under the price limit: the index answers)",
        single(lambda ctx: broad_or_variables(4_000)),
    ),
    Case(
        "search-terms-aliased",
        "filters",
        "14 aliased searches of 15 words of 32 three-letter parts (many terms to price)",
        single(lambda ctx: search_terms_aliased()),
    ),
    Case(
        "or-ne-30000-vars",
        "filters",
        "the `or` of 30,000 `ne` as a variable (over the price limit)",
        single(lambda ctx: broad_or_variables(30_000)),
    ),
    Case(
        "alias-stacks-100",
        "aliases",
        "100 aliases of stacks { every non-connection field of Stack } (under the token limit)",
        _q(lambda ctx: aliases(100, stacks_selection())),
    ),
    Case(
        "alias-facets-100",
        "aliases",
        "100 aliases of specs(first: 0) { facets { all 8 facets } } (under the token limit)",
        _q(lambda ctx: aliases(100, f"specs(first: 0) {{ {all_facets()} }}")),
    ),
    Case(
        "alias-spec-500",
        "aliases",
        '500 aliases of spec(hash: "<7 chars>") { name } (under the token limit)',
        _q(lambda ctx: aliases(500, f'spec(hash: "{ctx.hash7}") {{ name }}')),
    ),
    Case(
        "tagdiff-aliases-20",
        "aliases",
        "20 aliases of tagDiff(develop -> v0.23.0, first: 100) with 100 added specs each",
        _q(
            lambda ctx: aliases(
                20,
                'tagDiff(from: "develop", to: "v0.23.0", first: 100) { added removed '
                "nodes { name addedSpecs(first: 100) { nodes { hash } } } }",
            )
        ),
    ),
    Case(
        "tagdiff-filtered",
        "filters",
        "one tagDiff over whole tags with a filter of 2,000 `ne` entries (as a variable)",
        single(
            lambda ctx: post(
                'query D($f: SpecFilter) { tagDiff(from: "develop", to: "v0.23.0", '
                "filter: $f) { added removed totalCount } }",
                {"f": {"or": [{"version": {"ne": "x.y"}}] * 2000}},
            )
        ),
    ),
    Case(
        "search-10kb",
        "search",
        "specs(search:) with a 10 KB base32 word",
        _q(lambda c: search(10_000)),
    ),
    Case(
        "search-100kb",
        "search",
        "specs(search:) with a 100 KB base32 word",
        _q(lambda c: search(100_000)),
    ),
    Case(
        "search-1mb",
        "search",
        "specs(search:) with a 1 MB base32 word",
        _q(lambda c: search(MB)),
        slow=True,
    ),
    Case(
        "deep-variables",
        "malformed",
        "variables: a SpecFilter of 1,000 nested `not` (8 KB body)",
        single(lambda ctx: deep_variables(1000)),
    ),
    Case("body-number", "malformed", "body: 123", single(lambda ctx: raw_post(b"123"))),
    Case("body-null", "malformed", "body: null", single(lambda ctx: raw_post(b"null"))),
    Case("body-string", "malformed", 'body: "x"', single(lambda ctx: raw_post(b'"x"'))),
    Case(
        "unknown-operation",
        "malformed",
        "operationName naming no operation of the document",
        single(lambda ctx: post("query A { tags { name } }", operationName="B")),
    ),
    Case(
        "batch",
        "malformed",
        "a batch: a JSON list of two requests",
        single(lambda ctx: raw_post(json.dumps([{"query": "{ tags { name } }"}] * 2).encode())),
    ),
    Case(
        "variables-list",
        "malformed",
        "variables: [1, 2, 3] (not an object)",
        single(lambda ctx: post("{ tags { name } }", [1, 2, 3])),
    ),
    Case(
        "mutation-get",
        "malformed",
        "GET /graphql?query=mutation { __typename }",
        single(lambda ctx: get({"query": "mutation { __typename }"})),
    ),
    Case(
        "two-operations",
        "malformed",
        "two named operations, no operationName",
        single(lambda ctx: post("query A { tags { name } } query B { stacks { name } }")),
    ),
    Case(
        "body-50mb",
        "http",
        '50 MB body: { __typename } and an ignored JSON "padding" string (streamed)',
        single(lambda ctx: padded_json(50 * MB)),
    ),
    Case(
        "body-200mb",
        "http",
        '200 MB body: { __typename } and an ignored JSON "padding" string (streamed)',
        single(lambda ctx: padded_json(200 * MB)),
        slow=True,
    ),
    Case(
        "comment-10mb",
        "http",
        "extra (not in the issue): a 10 MB query that is one comment, then { __typename }",
        single(lambda ctx: comment_query(10 * MB)),
        slow=True,
    ),
    Case(
        "idle-connections",
        "http",
        "--connections (500) connections that send nothing",
        idle_connections,
    ),
    Case(
        "trickle-headers",
        "http",
        "--connections/10 (50) connections sending the request line and headers at 1 B/s",
        trickle_headers,
    ),
    Case(
        "trickle-body",
        "http",
        "--connections/10 (50) POSTs with a whole head, then a 4 KB body at 1 B/s",
        trickle_body,
    ),
    Case(
        "cursor-1mb",
        "http",
        'specs(first: 1, after: "<1 MB>") { totalCount }: is the cursor echoed?',
        cursor_echo(MB),
    ),
    Case(
        "cursor-500kb",
        "http",
        'specs(first: 1, after: "<500 KB>") { totalCount } (under the body limit): echoed?',
        cursor_echo(500_000),
    ),
]


def selected(args: argparse.Namespace) -> list[Case]:
    chosen = []
    for case in CASES:
        names = {case.name, case.group}
        if args.only and not any(n in names or case.name.startswith(n) for n in args.only):
            continue
        if any(n in names or case.name.startswith(n) for n in args.skip):
            continue
        if args.quick and case.slow:
            continue
        chosen.append(case)
    return chosen


# --------------------------------------------------------------------------------------
# The run.


def loadavg() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def log(message: str) -> None:
    print(f"[hostile] {message}", file=sys.stderr, flush=True)


def ensure_index(args: argparse.Namespace) -> Path:
    """The demo index of `--specs` specs, generated and built with the venv when missing."""
    if args.index.exists():
        return args.index
    cachegql = str(args.venv / "bin" / "cachegql")
    pages = args.pages or WORK / f"pages-{args.specs}"
    if not (pages / ".complete").exists():
        shutil.rmtree(pages, ignore_errors=True)
        log(f"generating {args.specs} specs of demo pages into {pages}")
        subprocess.run(
            [cachegql, "demo-data", "--specs", str(args.specs), "--out", str(pages)], check=True
        )
        (pages / ".complete").touch()
    log(f"indexing {pages} into {args.index}")
    subprocess.run([cachegql, "index", str(pages), "--out", str(args.index), "-q"], check=True)
    return args.index


def unique_prefix(port: int) -> str:
    """A 7-character hash prefix that names exactly one spec."""
    answer = exchange(port, post("{ specs(first: 100) { nodes { hash } } }"), 30)
    hashes = [n["hash"] for n in json.loads(answer.body or b"{}")["data"]["specs"]["nodes"]]
    for full in hashes[len(hashes) // 2 :]:
        check = exchange(port, post(f'{{ spec(hash: "{full[:7]}") {{ hash }} }}'), 30)
        spec = (json.loads(check.body or b"{}").get("data") or {}).get("spec")
        if spec and spec["hash"] == full:
            return full[:7]
    raise RuntimeError("no unique 7-character hash prefix among the first 100 specs")


@dataclass
class Runner:
    args: argparse.Namespace
    server: Server
    sampler: RssSampler
    canaries: Canaries
    ctx: Context

    def run(self, case: Case) -> dict[str, Any]:
        args, server = self.args, self.server
        restarted_before = ""
        if not server.responsive(5):
            restarted_before = "not responsive before the case"
            self.restart(restarted_before)
        log_offset = server.log_size()
        load = loadavg()
        rss_before = server.rss_mb()
        cpu_before = server.cpu_seconds()
        pids_before = server.pids()
        started = time.monotonic()
        try:
            outcome = case.run(self.ctx)
        except Exception as exc:  # a bug of this script, or an OS limit: the run goes on
            outcome = Outcome(status="-", notes=[f"benchmark error: {exc!r}"[:300]])
        ended = time.monotonic()
        time.sleep(args.after_delay)
        rss_after = server.rss_mb()
        after = time.monotonic()
        cpu = server.cpu_seconds() - cpu_before
        peak = max(self.sampler.peak(started, after), rss_before, rss_after)
        alive = server.alive()
        pids_changed = alive and sorted(server.pids()) != sorted(pids_before)
        settle_started = time.monotonic()
        settled = False
        while alive and time.monotonic() - settle_started < args.settle:
            if server.responsive(2):
                settled = True
                break
            time.sleep(0.5)
        settle_s = time.monotonic() - settle_started
        # A case shorter than a second is judged on the canaries of its first second.
        canary = self.canaries.during(started, max(ended, started + 1.0))
        lingering = self.canaries.during(ended, after, sent_within=True)
        problems = _log_problems(server.log_since(log_offset)) if alive else []
        reason = ""
        if not alive:
            reason = "dead after the case"
        elif not settled:
            reason = f"still busy {args.settle:.0f} s after the case"
        elif rss_after - server.fresh_rss_mb > args.bloat_mb:
            reason = f"RSS {rss_after:.0f} MB, {rss_after - server.fresh_rss_mb:.0f} MB over fresh"
        if reason:
            self.restart(reason)
        notes = list(outcome.notes)
        if outcome.message:
            notes.append(f"message: {outcome.message[:100]}")
        if peak > 0.8 * args.memory_cap_gb * 1024:
            notes.append(f"peak RSS near the {args.memory_cap_gb:g} GB address-space cap")
        if pids_changed:
            notes.append("server processes changed (a worker died and was replaced?)")
        worst_after = max(c["worst_ms"] for c in lingering.values())
        if worst_after > 1000:
            notes.append(
                f"canaries sent in the {args.after_delay:.0f} s after the case waited up to "
                f"{worst_after / 1000:.1f} s"
            )
        if settle_s > 1:
            notes.append(f"server answered probes again {settle_s:.0f} s after the case ended")
        notes += problems
        if reason:
            notes.append(f"restarted: {reason}")
        return {
            "name": case.name,
            "group": case.group,
            "description": case.description,
            "status": outcome.status,
            "content_type": outcome.content_type,
            "codes": outcome.codes,
            "message": outcome.message,
            "seconds": outcome.seconds,
            "timed_out": outcome.timed_out,
            "timeout_s": self.ctx.timeout,
            "server_cpu_s": round(cpu, 1),
            "request_bytes": outcome.request_bytes,
            "answer_bytes": outcome.answer_bytes,
            "rss_mb": {
                "before": round(rss_before, 1),
                "peak": round(peak, 1),
                "after": round(rss_after, 1),
            },
            "canaries": canary,
            "canary_worst_ms": max(c["worst_ms"] for c in canary.values()),
            "canaries_after": lingering,
            "canary_after_worst_ms": max(c["worst_ms"] for c in lingering.values()),
            "survived": alive,
            "settled_after_s": round(settle_s, 1) if settled else None,
            "restarted": reason or None,
            "restarted_before": restarted_before or None,
            "loadavg_at_start": load,
            "notes": notes,
            "extra": outcome.extra,
        }

    def restart(self, reason: str) -> None:
        log(f"restarting the server: {reason}")
        self.server.stop()
        seconds = self.server.start()
        log(f"server up again in {seconds:.1f} s, RSS {self.server.fresh_rss_mb:.0f} MB")


def _log_problems(text: str) -> list[str]:
    """The server log's error lines and the last line of each traceback, shortened."""
    found: list[str] = []
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("Traceback"):
            last = next(
                (x for x in lines[i + 1 :] if x and not x.startswith((" ", "Traceback"))), ""
            )
            found.append(f"server log: {last[:160]}")
        elif line.startswith(("ERROR", "CRITICAL")) or "Killed" in line:
            found.append(f"server log: {line[:160]}")
    unique = list(dict.fromkeys(found))
    return unique[:3] + ([f"(+{len(unique) - 3} more log problems)"] if len(unique) > 3 else [])


# --------------------------------------------------------------------------------------
# Output.


def _duration(result: dict[str, Any]) -> str:
    if result["timed_out"]:
        return f"> {result['timeout_s']:.0f} s"
    seconds = result["seconds"]
    return f"{seconds * 1000:.0f} ms" if seconds < 1 else f"{seconds:.1f} s"


def _wait(ms: float, canaries: dict[str, Any]) -> str:
    text = f"{ms:.0f} ms" if ms < 1000 else f"{ms / 1000:.1f} s"
    worst = max(canaries, key=lambda k: canaries[k]["worst_ms"])
    errors = sorted({e for c in canaries.values() for e in c["errors"]})
    return f"{text} ({worst})" + (f", errors: {', '.join(errors)}" if errors else "")


def _bytes(size: int) -> str:
    if size >= MB:
        return f"{size / MB:.1f} MB"
    return f"{size / 1024:.1f} KB" if size >= 1024 else f"{size} B"


def markdown(report: dict[str, Any]) -> str:
    config, machine_info = report["config"], report["machine"]
    lines = [
        f"cachegql hostile requests: {config['venv']}, {config['workers']} worker(s), "
        f"index {config['index']} ({config['specs']:,} specs), memory cap "
        f"{config['memory_cap_gb']} GB, client timeout {config['timeout']} s",
        "",
        f"{machine_info['cpu']} ({machine_info['cores']} cores, {machine_info['memory_gib']} GiB), "
        f"Python {machine_info['python']}, {machine_info['date']}; load average at start "
        f"{machine_info['loadavg_start']}, at end {machine_info.get('loadavg_end', '?')}; "
        f"server start {report['server_start_s']} s, fresh RSS {report['fresh_rss_mb']} MB; "
        f"canaries every {config['canary_interval'] * 1000:.0f} ms: GET /healthz, "
        f'`spec(hash: "{report["hash7"]}")`, `specs(first: 5)`. Server CPU counts from the '
        f"case's start to {config['after_delay']:.0f} s after its end, the canaries' own "
        "requests included (see `quiet`); RSS is the server's processes' sum; load: the "
        "1-minute load average at the case's start.",
        "",
        "| case | status / code | duration | server CPU | canary worst wait | "
        "RSS before → peak → after (MB) | request | answer | load | notes |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in report["results"]:
        code = ", ".join(r["codes"]) or "-"
        rss = r["rss_mb"]
        notes = "; ".join(r["notes"]).replace("|", "\\|").replace("\n", " ")
        if not r["survived"]:
            notes = "**server died**; " + notes
        lines.append(
            f"| `{r['name']}` {r['description'].replace('|', '/')} | {r['status']} / {code} "
            f"| {_duration(r)} | {r['server_cpu_s']} s | "
            f"{_wait(r['canary_worst_ms'], r['canaries'])} | "
            f"{rss['before']:.0f} → {rss['peak']:.0f} → {rss['after']:.0f} | "
            f"{_bytes(r['request_bytes'])} | {_bytes(r['answer_bytes'])} | "
            f"{r['loadavg_at_start'].split()[0]} | {notes} |"
        )
    return "\n".join(lines)


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--venv", type=Path, help="the install to measure (has bin/cachegql)")
    parser.add_argument("--index", type=Path, default=WORK / "index-hostile-200000")
    parser.add_argument("--pages", type=Path, help="demo pages to index when --index is missing")
    parser.add_argument("--specs", type=int, default=200_000, help="size of the demo data")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument(
        "--serve-flag", action="append", default=[], help="extra `cachegql serve` argument"
    )
    parser.add_argument("--memory-cap-gb", type=float, default=10.0, help="RLIMIT_AS of the server")
    parser.add_argument("--timeout", type=float, default=60.0, help="client timeout per request")
    parser.add_argument(
        "--hold",
        default="15,60",
        help="checkpoints (s) of the connection cases: open connections are counted at each",
    )
    parser.add_argument("--connections", type=int, default=500, help="idle connections (max 1000)")
    parser.add_argument("--after-delay", type=float, default=3.0, help="seconds before RSS after")
    parser.add_argument(
        "--settle", type=float, default=30.0, help="seconds to wait for a busy server"
    )
    parser.add_argument("--bloat-mb", type=float, default=300.0, help="restart above fresh + this")
    parser.add_argument("--canary-interval", type=float, default=0.05)
    parser.add_argument("--only", action="append", default=[], help="case or group (repeatable)")
    parser.add_argument("--skip", action="append", default=[], help="case or group (repeatable)")
    parser.add_argument(
        "--quick", action="store_true", help="no slow cases, 15 s timeout, holds of 5 and 15 s"
    )
    parser.add_argument("--list", action="store_true", help="list the cases and exit")
    parser.add_argument("--json", type=Path, help="results file (default: bench/work/hostile-*)")
    parser.add_argument(
        "--logs", type=Path, help="folder of the server's logs (default: bench/work/hostile-logs-*)"
    )
    parser.add_argument("--markdown", type=Path, help="also write the table here")
    args = parser.parse_args(argv)
    if args.quick:
        args.timeout, args.hold = min(args.timeout, 15.0), "5,15"
    args.hold = tuple(sorted(float(x) for x in args.hold.split(",")))
    args.connections = max(1, min(args.connections, 1000))
    if not args.list and args.venv is None:
        parser.error("--venv is required")
    return args


def main(argv: list[str]) -> int:
    if argv[:1] == ["_canary"]:
        return canary_main(argv[1:])
    args = parse_args(argv)
    cases = selected(args)
    if args.list:
        for case in CASES:
            print(
                f"{case.name:20} {case.group:10} {'(slow) ' if case.slow else ''}{case.description}"
            )
        return 0
    if not cases:
        print("no case selected (see --list)", file=sys.stderr)
        return 2
    args.venv = args.venv.resolve()
    args.index = args.index.resolve()
    stamp = time.strftime("%Y%m%dT%H%M%S")
    args.logs = args.logs or WORK / f"hostile-logs-{stamp}"
    args.logs.mkdir(parents=True, exist_ok=True)
    info = {**machine(), "loadavg_start": loadavg()}
    log(f"load average {info['loadavg_start']}; {len(cases)} cases")
    index = ensure_index(args)
    server = Server(args, index)
    start_s = server.start()
    log(f"server ready in {start_s:.1f} s, RSS {server.fresh_rss_mb:.0f} MB")
    hash7 = unique_prefix(args.port)
    canaries = Canaries(args.port, hash7, args.canary_interval)
    sampler = RssSampler(server)
    sampler.start()
    ctx = Context(args.port, args.timeout, hash7, args.quick, args.connections, args.hold)
    runner = Runner(args, server, sampler, canaries, ctx)
    report: dict[str, Any] = {
        "machine": info,
        "config": {
            "venv": str(args.venv),
            "index": str(index),
            "specs": args.specs,
            "workers": args.workers,
            "serve_command": server.command,
            "memory_cap_gb": args.memory_cap_gb,
            "timeout": args.timeout,
            "hold": args.hold,
            "connections": args.connections,
            "canary_interval": args.canary_interval,
            "after_delay": args.after_delay,
            "settle": args.settle,
            "bloat_mb": args.bloat_mb,
            "quick": args.quick,
            "argv": sys.argv,
        },
        "hash7": hash7,
        "server_start_s": round(start_s, 2),
        "fresh_rss_mb": round(server.fresh_rss_mb, 1),
        "results": [],
    }
    out = args.json or WORK / f"hostile-{stamp}.json"
    try:
        time.sleep(1)  # the canaries' first requests
        for case in cases:
            log(f"{case.name}: {case.description}")
            result = runner.run(case)
            report["results"].append(result)
            log(
                f"  -> {result['status']} {','.join(result['codes'])} {_duration(result)}, "
                f"canary worst {result['canary_worst_ms']:.0f} ms, RSS "
                f"{result['rss_mb']['before']:.0f}/{result['rss_mb']['peak']:.0f}/"
                f"{result['rss_mb']['after']:.0f} MB; {'; '.join(result['notes'])[:300]}"
            )
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text(json.dumps(report, indent=1) + "\n")  # partial results survive
    finally:
        sampler.stopping.set()
        canaries.stop()
        server.stop()
    info["loadavg_end"] = loadavg()
    info["finished"] = time.strftime("%Y-%m-%d %H:%M:%S")
    out.write_text(json.dumps(report, indent=1) + "\n")
    text = markdown(report)
    if args.markdown:
        args.markdown.parent.mkdir(parents=True, exist_ok=True)
        args.markdown.write_text(text + "\n")
    print(text)
    log(f"results in {out}; server logs in {args.logs}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
