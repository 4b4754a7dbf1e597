"""Settings reach uvicorn's workers through the environment: every field survives the trip."""

from __future__ import annotations

import dataclasses
import logging
from pathlib import Path

import httpx
import pytest

from cachegql.server.app import app_from_env
from cachegql.server.settings import ENV_PREFIX, Settings
from tests.conftest import LiveServer


def _unusual(index: Path) -> Settings:
    """Settings with no field left at its default."""
    return Settings(
        index=index,
        default_tag="v0.22.0",
        max_first=7,
        reload_interval=0.0,
        response_cache_mb=1.5,
        cache_max_age=5,
        cors_origins=("https://a.example", "https://b.example"),
        gzip_min_bytes=10,
        persisted_queries=3,
        log_format="json",
        access_log=False,
        max_cost=12_345,
        time_budget=2.5,
        threads=3,
        max_body_bytes=4096,
        read_timeout=1.5,
        max_requests=9,
        compiled=False,
        inline=False,
    )


def test_every_field_survives_the_environment(
    pages_index: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = _unusual(pages_index)
    defaults = Settings(index=pages_index)
    changed = [
        f.name
        for f in dataclasses.fields(Settings)
        if getattr(settings, f.name) != getattr(defaults, f.name)
    ]
    assert changed == [f.name for f in dataclasses.fields(Settings)][1:]  # all but index
    env = settings.to_env()
    assert env[ENV_PREFIX + "CORS_ORIGINS"] == "https://a.example,https://b.example"
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert Settings.from_env() == settings


def test_settings_left_unset_override_the_environment(
    pages_index: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A `CACHEGQL_DEFAULT_TAG` already in the environment (a shell's, a container's) does
    not reach the workers of a `cachegql serve` given no `--default-tag`."""
    monkeypatch.setenv(ENV_PREFIX + "DEFAULT_TAG", "v0.22.0")
    for name, value in Settings(index=pages_index).to_env().items():
        monkeypatch.setenv(name, value)
    assert Settings.from_env() == Settings(index=pages_index)


def test_a_worker_serves_as_the_environment_says(
    pages_index: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in _unusual(pages_index).to_env().items():
        monkeypatch.setenv(name, value)
    access = logging.getLogger("cachegql.access")
    saved = access.level, access.propagate, list(access.handlers)
    try:
        with LiveServer(app_from_env()) as url:
            query = (
                '{ specs { totalCount } all: specs(tag: "develop", first: 50) { nodes { hash } } }'
            )
            answer = httpx.post(
                f"{url}/graphql", json={"query": query}, headers={"origin": "https://b.example"}
            )
            tags = httpx.get(f"{url}/healthz").json()["tags"]
    finally:
        access.setLevel(saved[0])
        access.propagate = saved[1]
        access.handlers[:] = saved[2]
    assert answer.headers["access-control-allow-origin"] == "https://b.example"
    data = answer.json()["data"]
    assert data["specs"]["totalCount"] == tags["v0.22.0"]  # the default tag
    assert len(data["all"]["nodes"]) == 7 < tags["develop"]  # max_first
