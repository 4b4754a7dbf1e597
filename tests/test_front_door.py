"""The front door (`server/front.py`): GET and POST of /graphql skip starlette's own layers
and router but keep every middleware of the app; anything else is starlette's, as before."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from starlette.applications import Starlette

from cachegql.server.app import Settings, create_app
from cachegql.server.front import GraphQLFirst
from tests.conftest import LiveServer

ORIGIN = "https://example.org"
QUERY = {"query": "{ tags { name } }"}


@pytest.fixture(scope="module")
def app(pages_index: Path) -> Starlette:
    settings = Settings(
        index=pages_index,
        reload_interval=0,
        access_log=False,
        cors_origins=(ORIGIN,),
        gzip_min_bytes=200,
    )
    return create_app(settings)


@pytest.fixture(scope="module")
def client(app: Starlette) -> Iterator[httpx.Client]:
    with LiveServer(app) as url, httpx.Client(base_url=url) as opened:
        yield opened


def test_graphql_requests_take_the_front_door(app: Starlette, client: httpx.Client) -> None:
    assert isinstance(app.middleware_stack, GraphQLFirst)
    answer = client.post("/graphql", json=QUERY, headers={"x-request-id": "front-1"})
    assert answer.status_code == 200 and answer.json()["data"]["tags"]
    assert answer.headers["x-request-id"] == "front-1"  # the request id layer ran
    got = client.get("/graphql", params=QUERY, headers={"origin": ORIGIN})
    assert got.status_code == 200 and got.headers["etag"]
    assert got.headers["access-control-allow-origin"] == ORIGIN  # CORS ran
    metrics = client.get("/metrics").text  # counted under the route's template
    assert 'cachegql_requests_total{operation="",outcome="ok",path="/graphql",status="2xx"}' in (
        metrics
    )


def test_a_large_answer_is_gzipped_through_the_front_door(client: httpx.Client) -> None:
    query = {"query": "{ specs(first: 50) { nodes { hash name version } } }"}
    answer = client.post("/graphql", json=query, headers={"accept-encoding": "gzip"})
    assert answer.headers["content-encoding"] == "gzip"
    assert answer.json()["data"]["specs"]["nodes"]  # httpx decoded it
    raw = client.post("/graphql", json=query, headers={"accept-encoding": "identity"})
    assert "content-encoding" not in raw.headers and "Accept-Encoding" in raw.headers["vary"]


def test_other_methods_are_graphql_errors_other_paths_starlettes(client: httpx.Client) -> None:
    refused = client.put("/graphql", json=QUERY, headers={"origin": ORIGIN})
    assert refused.status_code == 405 and refused.headers["allow"] == "GET, HEAD, POST"
    assert refused.json()["errors"][0]["extensions"]["code"] == "BAD_USER_INPUT"
    assert refused.headers["access-control-allow-origin"] == ORIGIN  # through the stack
    assert client.get("/graphql/").status_code in (200, 307)  # the router's slash redirect
    preflight = client.options(
        "/graphql",
        headers={"origin": ORIGIN, "access-control-request-method": "POST"},
    )
    assert preflight.status_code == 200
    assert preflight.headers["access-control-allow-origin"] == ORIGIN
    assert client.get("/healthz").json()["status"] == "ok"
    assert client.get("/nowhere").status_code == 404
