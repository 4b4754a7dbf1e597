"""The gzip middleware over HTTP, on answers of every shape: whole or streamed, with or
without a length, textual or not, already encoded or not, asked for or refused."""

from __future__ import annotations

import gzip
from collections.abc import AsyncIterator, Iterator

import httpx
import pytest
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from cachegql.server.compression import Compression, accepts_gzip
from tests.conftest import LiveServer

MINIMUM = 100
BIG = {"words": ["spack"] * 100}


async def _big(request: Request) -> Response:
    return JSONResponse(BIG)


async def _small(request: Request) -> Response:
    return JSONResponse({"ok": True})


async def _stream(request: Request) -> Response:
    async def lines() -> AsyncIterator[bytes]:
        for i in range(50):
            yield b"line %d of a streamed text answer\n" % i

    return StreamingResponse(lines(), media_type="text/plain")


async def _encoded(request: Request) -> Response:
    # mtime fixed: two answers a second apart must be the same bytes.
    return Response(gzip.compress(b"x" * 500, mtime=0), headers={"content-encoding": "gzip"})


async def _binary(request: Request) -> Response:
    return Response(b"\x89PNG" + bytes(500), media_type="image/png")


class _Unsized:
    """A raw ASGI answer without a Content-Length, in one message."""

    def __init__(self, size: int) -> None:
        self.size = size

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = [(b"content-type", b"text/plain")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": b"u" * self.size})


def _unsized(size: int) -> Route:
    return Route(f"/unsized/{size}", _Unsized(size))


@pytest.fixture(scope="module")
def client() -> Iterator[httpx.Client]:
    app = Starlette(
        routes=[
            Route("/big", _big),
            Route("/small", _small),
            Route("/stream", _stream),
            Route("/encoded", _encoded),
            Route("/binary", _binary),
            _unsized(10),
            _unsized(1000),
        ],
        middleware=[Middleware(Compression, minimum_size=MINIMUM)],
    )
    with LiveServer(app) as url, httpx.Client(base_url=url, timeout=10) as http:
        yield http


def _raw(client: httpx.Client, path: str, accept: str) -> tuple[httpx.Headers, bytes]:
    with client.stream("GET", path, headers={"accept-encoding": accept}) as response:
        return response.headers, b"".join(response.iter_raw())


@pytest.mark.parametrize("path", ["/big", "/stream", "/unsized/1000"])
def test_textual_answers_past_the_minimum_are_gzipped(client: httpx.Client, path: str) -> None:
    plain_headers, plain = _raw(client, path, "identity")
    headers, raw = _raw(client, path, "gzip")
    assert headers["content-encoding"] == "gzip" and headers["vary"] == "Accept-Encoding"
    assert gzip.decompress(raw) == plain and len(raw) < len(plain)
    assert "content-encoding" not in plain_headers
    assert plain_headers["vary"] == "Accept-Encoding"  # a cache must not give it to gzip clients


@pytest.mark.parametrize("path", ["/small", "/unsized/10", "/encoded", "/binary"])
def test_other_answers_pass_as_they_are(client: httpx.Client, path: str) -> None:
    plain_headers, plain = _raw(client, path, "identity")
    headers, raw = _raw(client, path, "gzip")
    assert raw == plain
    assert headers.get("content-encoding") == plain_headers.get("content-encoding")


@pytest.mark.parametrize(
    ("accept", "gzip_ok"),
    [
        (b"gzip", True),
        (b"deflate, gzip;q=0.5", True),
        (b"*", True),
        (b"gzip;q=0", False),
        (b"gzip; q=0.0, identity", False),
        (b"br, deflate", False),
        (None, False),
    ],
)
def test_accept_encoding(accept: bytes | None, gzip_ok: bool) -> None:
    headers = [(b"host", b"x")] + ([(b"accept-encoding", accept)] if accept else [])
    assert accepts_gzip(headers) is gzip_ok
