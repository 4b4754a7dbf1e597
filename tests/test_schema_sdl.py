"""The exported SDL is current, and it breaks nothing of the API contract clients rely on."""

from __future__ import annotations

from pathlib import Path

from graphql import build_schema, find_breaking_changes

from cachegql.schema import export_sdl
from tests.conftest import FIXTURES, shared_or_skip

SDL = Path(__file__).resolve().parents[1] / "schema" / "schema.graphql"
CONTRACT = FIXTURES / "api-contract.graphql"


def test_checked_in_sdl_is_current() -> None:
    assert SDL.read_text() == export_sdl(), "schema/schema.graphql is stale: run `make schema`"


def test_no_breaking_change_against_the_contract() -> None:
    changes = find_breaking_changes(
        build_schema(CONTRACT.read_text()), build_schema(SDL.read_text())
    )
    assert [f"{c.type.name}: {c.description}" for c in changes] == []


def test_every_contract_type_and_field_exists() -> None:
    contract = build_schema(CONTRACT.read_text())
    ours = build_schema(SDL.read_text())
    for name, kind in contract.type_map.items():
        if name.startswith("__"):
            continue
        assert name in ours.type_map, name
        fields = getattr(kind, "fields", None) or {}
        assert set(fields) <= set(getattr(ours.type_map[name], "fields", {})), name


def test_contract_copy_matches_shared() -> None:
    """tests/fixtures keeps a copy so that unit tests run without ../shared."""
    shared = shared_or_skip()
    assert CONTRACT.read_text() == (shared / "api-contract.graphql").read_text()
