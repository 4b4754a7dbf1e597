"""Repeated identical requests are answered from the response cache, until a rebuild."""

from __future__ import annotations

import time
from pathlib import Path

import httpx

from cachegql.index import build_index
from cachegql.server.app import Settings, create_app
from tests.conftest import PAGES, LiveServer

QUERY = {"query": "query($t: String) { tags { name numSpecs } packages(tag: $t) { totalCount } }"}
LOOSE = PAGES / "loose" / "zlib-develop.txt"


def _cache(client: httpx.Client) -> dict[str, int]:
    stats: dict[str, int] = client.get("/healthz").json()["response_cache"]
    return stats


def test_repeats_hit_the_cache_and_a_rebuild_does_not(tmp_path: Path) -> None:
    out = tmp_path / "ix"
    build_index([LOOSE], out)
    app = create_app(Settings(index=out, reload_interval=0.05))
    with LiveServer(app) as url, httpx.Client(base_url=url, timeout=30) as client:
        first = client.post("/graphql", json=QUERY)
        again = client.post("/graphql", json=QUERY)
        assert first.content == again.content
        assert first.headers["content-type"] == again.headers["content-type"]
        assert _cache(client)["hits"] == 1 and _cache(client)["misses"] == 1

        other = client.post("/graphql", json={**QUERY, "variables": {"t": "develop"}})
        assert other.status_code == 200 and _cache(client)["misses"] == 2

        bad = {"query": '{ spec(hash: "1") { hash } }'}
        for _ in range(2):
            assert client.post("/graphql", json=bad).json()["errors"]
        assert _cache(client)["misses"] == 4  # answers with errors are not kept

        build_index([PAGES], out)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            rebuilt = client.post("/graphql", json=QUERY)
            if rebuilt.content != first.content:
                break
            time.sleep(0.05)
        assert rebuilt.content != first.content
        assert rebuilt.json()["data"]["packages"]["totalCount"] > 1


def test_the_cache_can_be_turned_off(tmp_path: Path) -> None:
    out = tmp_path / "ix"
    build_index([LOOSE], out)
    app = create_app(Settings(index=out, reload_interval=0, response_cache_mb=0))
    with LiveServer(app) as url, httpx.Client(base_url=url, timeout=30) as client:
        for _ in range(3):
            assert client.post("/graphql", json=QUERY).status_code == 200
        assert _cache(client)["hits"] == 0 and _cache(client)["entries"] == 0


def test_a_large_request_body_still_reaches_graphql(tmp_path: Path) -> None:
    out = tmp_path / "ix"
    build_index([LOOSE], out)
    app = create_app(Settings(index=out, reload_interval=0))
    padding = " " * 100_000  # beyond what the cache reads at once
    with LiveServer(app) as url, httpx.Client(base_url=url, timeout=30) as client:
        response = client.post("/graphql", json={"query": "{ tags { name } }" + padding})
        assert response.json() == {"data": {"tags": [{"name": "develop"}]}}
