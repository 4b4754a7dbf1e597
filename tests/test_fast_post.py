"""The usual POST in one pass (`server/fast_post.py`): the same answers, headers, request
ids, metrics and access lines as the stack of layers it stands in for."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any, cast

import httpx
import pytest
from starlette.applications import Starlette
from starlette.types import Message, Receive, Scope, Send

from cachegql.server.access_log import AccessLog
from cachegql.server.admission import Admission
from cachegql.server.app import Settings, create_app
from cachegql.server.body import BODY_RECEIVED, BodyLimit
from cachegql.server.fast_post import FastPost
from cachegql.server.front import GraphQLFirst
from cachegql.server.graphql_http import GraphQLEndpoint
from cachegql.server.response_cache import ResponseCache

ORIGIN = "https://example.org"
LARGE = {"query": "query Large { specs(first: 50) { nodes { hash name version } } }"}
JSON = {"content-type": "application/json"}
# (body, extra headers): each is answered by the one pass, and compared with the layers.
CASES: dict[str, tuple[bytes, dict[str, str]]] = {
    "a query": (json.dumps({"query": "query Tags { tags { name } }"}).encode(), {}),
    "a large answer, gzip accepted": (json.dumps(LARGE).encode(), {"accept-encoding": "gzip"}),
    "a large answer, not gzipped": (json.dumps(LARGE).encode(), {"accept-encoding": "identity"}),
    "a field error": (b'{"query": "{ spec(hash: \\"1\\") { hash } }"}', {}),
    "a document error, graphql-response+json": (
        b'{"query": "{ nope }"}',
        {"accept": "application/graphql-response+json"},
    ),
    "bad JSON": (b'{"query": ', {}),
    "a batch": (b'[{"query": "{ tags { name } }"}]', {}),
    "variables not an object": (b'{"query": "{ tags { name } }", "variables": 3}', {}),
    "a charset other than UTF-8": (
        b'{"query": "{ tags { name } }"}',
        {"content-type": "application/json; charset=latin-1"},
    ),
    "a subscription": (b'{"query": "subscription { tags { name } }"}', {}),
    "a persisted query not found": (
        b'{"extensions": {"persistedQuery": {"version": 1, "sha256Hash": "%s"}}}' % (b"a" * 64),
        {},
    ),
}


def _app(
    index: Path, cache_mb: float, access_log: bool = False, cors: tuple[str, ...] = ()
) -> Starlette:
    return create_app(
        Settings(
            index=index,
            reload_interval=0,
            access_log=access_log,
            log_format="json",
            cors_origins=cors,
            gzip_min_bytes=200,
            response_cache_mb=cache_mb,
        )
    )


def _front(app: Starlette) -> GraphQLFirst:
    front = app.middleware_stack
    assert isinstance(front, GraphQLFirst) and isinstance(front.post, FastPost)
    return front


def _scope(body: bytes, headers: dict[str, str]) -> Scope:
    raw = {"content-type": "application/json", "content-length": str(len(body)), **headers}
    return {
        "type": "http",
        "method": "POST",
        "path": "/graphql",
        "query_string": b"",
        "headers": [(k.encode(), v.encode()) for k, v in raw.items()],
        "state": {},
    }


def _post(app: Any, body: bytes, headers: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
    """Status, headers (without the request id) and body of one POST answered by `app`."""
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    asyncio.run(app(_scope(body, headers), receive, send))
    start, rest = sent[0], sent[1:]
    names = [name for name, _ in start["headers"]]
    assert names.count(b"x-request-id") == 1
    kept = {k.decode(): v.decode() for k, v in start["headers"] if k != b"x-request-id"}
    assert len(kept) == len(start["headers"]) - 1  # no header twice
    return start["status"], kept, b"".join(m.get("body", b"") for m in rest)


@pytest.mark.parametrize("cache_mb", [64.0, 0.0], ids=["cached", "uncached"])
def test_the_one_pass_answers_as_the_layers_do(pages_index: Path, cache_mb: float) -> None:
    front = _front(_app(pages_index, cache_mb))
    fast = front.post
    assert isinstance(fast, FastPost)
    for name, (body, headers) in CASES.items():
        assert fast._eligible(_scope(body, headers)) is not None, name
        first = _post(fast, body, headers)  # a miss if cached
        layered = _post(front.graphql, body, headers)  # a hit of what the one pass kept
        again = _post(fast, body, headers)  # a hit in the one pass
        assert first == layered == again, name
    hits = front.post.cache.hits if cache_mb else 0  # type: ignore[attr-defined]
    # The answers without errors, twice each, and the large one once more (gzip is not
    # part of the key): 2 + 2 + 3.
    assert hits == (7 if cache_mb else 0)


@pytest.fixture
def lines() -> Iterator[list[dict[str, Any]]]:
    logger = logging.getLogger("cachegql.access")
    saved = logger.level, logger.propagate, list(logger.handlers)
    kept: list[dict[str, Any]] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            kept.append(json.loads(record.getMessage()))

    logger.handlers = [Keep(logging.INFO)]
    logger.setLevel(logging.INFO)
    logger.propagate = False
    try:
        yield kept
    finally:
        logger.setLevel(saved[0])
        logger.propagate = saved[1]
        logger.handlers = saved[2]


def test_a_hit_has_its_request_id_metrics_and_access_line(
    pages_index: Path, lines: list[dict[str, Any]]
) -> None:
    app = _app(pages_index, 64.0, access_log=True)
    query = {"query": "query Tags { tags { name } }"}
    transport = httpx.ASGITransport(app=app)

    async def run() -> tuple[list[httpx.Response], str]:
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            miss = await client.post("/graphql", json=query, headers={"x-request-id": "one"})
            hit = await client.post("/graphql", json=query, headers={"x-request-id": "two"})
            new = await client.post("/graphql", json=query)
            metrics = (await client.get("/metrics")).text
            return [miss, hit, new], metrics

    (miss, hit, new), metrics = asyncio.run(run())
    assert miss.json() == hit.json() == new.json()
    assert [miss.headers["x-request-id"], hit.headers["x-request-id"]] == ["one", "two"]
    assert len(new.headers["x-request-id"]) == 32
    graphql = [line for line in lines if line["path"] == "/graphql"]
    assert [(line["request_id"], line["cache"]) for line in graphql] == [
        ("one", "miss"),
        ("two", "hit"),
        (new.headers["x-request-id"], "hit"),
    ]
    for line, answer in zip(graphql, (miss, hit, new), strict=True):
        assert line["status"] == 200 and line["operation"] == "Tags" and line["method"] == "POST"
        assert line["bytes"] == len(answer.content) and line["duration_ms"] >= 0
    assert 'cachegql_response_cache_requests_total{result="hit"} 2.0' in metrics
    assert 'cachegql_response_cache_requests_total{result="miss"} 1.0' in metrics
    assert (
        'cachegql_requests_total{operation="Tags",outcome="ok",path="/graphql",status="2xx"} 3.0'
    ) in metrics
    assert app.state.admission.in_progress == 0


def test_with_cors_every_post_goes_through_the_layers(pages_index: Path) -> None:
    app = _app(pages_index, 64.0, cors=(ORIGIN,))
    front = app.middleware_stack
    assert isinstance(front, GraphQLFirst) and front.post is front.graphql
    answer = _post(front, b'{"query": "{ tags { name } }"}', {"origin": ORIGIN})
    assert answer[0] == 200 and answer[1]["access-control-allow-origin"] == ORIGIN


def test_what_the_one_pass_does_not_take_goes_through_the_layers(pages_index: Path) -> None:
    app = _app(pages_index, 64.0)

    async def chunked() -> Any:
        yield b'{"query": "{ tags '
        yield b'{ name } }"}'

    async def run() -> list[httpx.Response]:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            return [
                await client.post("/graphql", content=chunked(), headers=JSON),
                await client.post("/graphql", content=b"query=x", headers={"accept": "text/x"}),
            ]

    streamed, unacceptable = asyncio.run(run())
    assert streamed.status_code == 200 and streamed.json()["data"]["tags"]
    assert unacceptable.status_code == 406


class _Failing:
    """An endpoint that fails: what the one pass answers when its app raises."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        raise RuntimeError("broken")

    async def answer_post(self, *args: Any) -> Any:
        raise RuntimeError("broken")


def test_an_exception_is_a_500_with_the_request_id(pages_index: Path) -> None:
    observed: list[int] = []
    failing = _Failing()
    cache = ResponseCache(failing, build_id=lambda: "b", max_bytes=1 << 20)
    limit = BodyLimit(cache)
    admission = Admission(limit)
    log = AccessLog(
        admission, enabled=False, observe=lambda scope, info, status, s: observed.append(status)
    )
    fast = FastPost(
        log,
        log=log,
        admission=admission,
        limit=limit,
        cache=cache,
        endpoint=cast(GraphQLEndpoint, failing),
        gzip_min_bytes=0,
    )
    body = b'{"query": "{ tags { name } }"}'
    sent: list[Message] = []

    async def receive() -> Message:
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: Message) -> None:
        sent.append(message)

    scope = _scope(body, {"x-request-id": "broken-1"})
    with pytest.raises(RuntimeError):
        asyncio.run(fast(scope, receive, send))
    assert sent[0]["status"] == 500 and (b"x-request-id", b"broken-1") in sent[0]["headers"]
    assert observed == [500] and admission.in_progress == 0


def _limited(index: Path) -> GraphQLFirst:
    """An app with a small body limit, a short body timeout and a request cap."""
    return _front(
        create_app(
            Settings(
                index=index,
                reload_interval=0,
                access_log=False,
                max_body_bytes=1000,
                read_timeout=0.3,
                max_requests=4,
            )
        )
    )


def test_a_request_cancelled_mid_body_gives_its_slot_back(pages_index: Path) -> None:
    """A client gone or a server stopping mid-body cancels the read: the request's
    admission slot is given back, or a few such would leave the worker answering 503."""
    front = _limited(pages_index)
    fast = front.post
    assert isinstance(fast, FastPost)

    async def send(message: Message) -> None:
        raise AssertionError(f"nothing is answered: {message}")

    async def run() -> None:
        started = asyncio.Event()

        async def receive() -> Message:
            if not started.is_set():
                started.set()
                return {"type": "http.request", "body": b'{"query": ', "more_body": True}
            await asyncio.Event().wait()  # the rest never comes
            raise AssertionError("unreachable")

        task = asyncio.create_task(fast(_scope(b"x" * 40, {}), receive, send))
        await started.wait()
        await asyncio.sleep(0.01)
        assert fast.admission.in_progress == 1
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    for _ in range(6):  # more than the cap of 4
        asyncio.run(run())
    assert fast.admission.in_progress == 0


def _answered(front: GraphQLFirst, scope: Scope, chunks: list[bytes]) -> list[Message]:
    """What `front` sends for a POST whose body comes in `chunks`."""
    sent: list[Message] = []
    pending: list[Message] = [
        {"type": "http.request", "body": c, "more_body": i < len(chunks) - 1}
        for i, c in enumerate(chunks)
    ]

    async def receive() -> Message:
        return pending.pop(0) if pending else {"type": "http.disconnect"}

    async def send(message: Message) -> None:
        sent.append(message)

    async def post() -> None:
        await front.post(scope, receive, send)

    asyncio.run(post())
    return sent


def test_a_body_longer_than_declared_is_counted_as_read(pages_index: Path) -> None:
    """The size limit holds on the bytes that come, not on Content-Length alone."""
    front = _limited(pages_index)
    body = b'{"query": "{ tags { name } }", "x": "' + b"y" * 5000 + b'"}'
    scope = _scope(body[:10], {})  # declares 10 bytes
    for chunks in ([body], [body[:2500], body[2500:]]):
        sent = _answered(front, scope, chunks)
        assert sent[0]["status"] == 413, len(chunks)
        assert b"1,000 bytes" in sent[1]["body"]


def test_a_body_too_slow_is_a_408_counted_with_its_wait(pages_index: Path) -> None:
    front = _limited(pages_index)
    fast = front.post
    assert isinstance(fast, FastPost)
    observed: list[tuple[int, float]] = []
    fast.log.observe = lambda scope, info, status, seconds: observed.append((status, seconds))
    sent: list[Message] = []

    async def receive() -> Message:
        await asyncio.Event().wait()
        raise AssertionError("unreachable")

    async def send(message: Message) -> None:
        sent.append(message)

    asyncio.run(fast(_scope(b"x" * 40, {"x-request-id": "slow-1"}), receive, send))
    assert sent[0]["status"] == 408 and (b"x-request-id", b"slow-1") in sent[0]["headers"]
    assert b"did not arrive within 0.3 s" in sent[1]["body"]
    assert observed[0][0] == 408 and observed[0][1] >= 0.3
    assert fast.admission.in_progress == 0


def test_a_body_the_protocol_received_whole_is_read_without_a_deadline(pages_index: Path) -> None:
    """Marked by the protocol (`BODY_RECEIVED`), the body is read without arming the body
    limit's deadline, and answered as an unmarked one, whose deadline is armed."""
    settings = Settings(index=pages_index, reload_interval=0, access_log=False)
    front = _front(create_app(replace(settings, response_cache_mb=0)))  # each one answered
    fast = front.post
    assert isinstance(fast, FastPost)
    deadlines = fast.limit.deadlines
    armed: list[int] = []
    run = deadlines.run

    def counted(step: Any) -> Any:
        armed.append(1)
        return run(step)

    deadlines.run = counted  # type: ignore[method-assign]
    body = b'{"query": "{ tags { name } }"}'

    def answer(marked: bool) -> list[Message]:
        sent: list[Message] = []

        async def receive() -> Message:
            return {"type": "http.request", "body": body, "more_body": False}

        async def send(message: Message) -> None:
            sent.append(message)

        scope = {**_scope(body, {"x-request-id": "same"}), BODY_RECEIVED: marked}
        asyncio.run(fast(scope, receive, send))
        return sent

    answers, arms = [], []
    for marked in (True, False):
        answers.append(answer(marked))
        arms.append(len(armed))
    assert arms == [0, 1]  # armed for the unmarked body only
    assert answers[0] == answers[1] and answers[0][0]["status"] == 200
