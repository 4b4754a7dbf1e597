"""The embedded demo data: deterministic, shaped like the real pages, served out of the box."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from cachegql.demo import DemoConfig, write_pages
from cachegql.server.default_data import DEFAULT_CONFIG, default_index, default_store
from tests import oracle
from tests.conftest import CLI, GraphQLClient, serving

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
HASH = re.compile(r"^[a-z2-7]{32}$")


def _tree(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def test_the_same_seed_writes_the_same_pages(tmp_path: Path) -> None:
    config = DemoConfig(packages=40, specs=600, seed=7)
    write_pages(config, tmp_path / "a")
    write_pages(config, tmp_path / "b")
    write_pages(DemoConfig(packages=40, specs=600, seed=8), tmp_path / "c")
    first = _tree(tmp_path / "a")
    assert first and first == _tree(tmp_path / "b")
    assert first != _tree(tmp_path / "c")


@pytest.fixture(scope="module")
def demo_specs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, dict[str, Any]]]:
    out = tmp_path_factory.mktemp("demo-pages")
    assert write_pages(DEFAULT_CONFIG, out)[1] == DEFAULT_CONFIG.specs
    return oracle.read_specs([out])


def test_the_default_data_has_its_advertised_size(
    demo_specs: dict[str, dict[str, dict[str, Any]]],
) -> None:
    assert sorted(demo_specs) == sorted(DEFAULT_CONFIG.tags)
    specs = [s for tag in demo_specs.values() for s in tag.values()]
    assert len(specs) == DEFAULT_CONFIG.specs == 5000
    assert len({s["name"] for s in specs}) == DEFAULT_CONFIG.packages == 200


def test_demo_specs_look_like_the_real_ones(
    demo_specs: dict[str, dict[str, dict[str, Any]]],
) -> None:
    specs = [s for tag in demo_specs.values() for s in tag.values()]
    assert all(HASH.match(s["hash"]) for s in specs)
    assert all("root" in s["stacks"] for s in specs)
    stacks = {stack for s in specs for stack in s["stacks"]}
    assert 25 <= len(stacks) <= 35, sorted(stacks)
    compilers = {s["compiler"] for s in specs}
    assert "none" in compilers
    assert any("@=" in c for c in compilers) and any(re.search(r"@\d", c) for c in compilers)
    variants = [v for s in specs for v in s["variants"]]
    forms = Counter(_variant_form(v) for v in variants)
    assert set(forms) >= {"+x", "~x", "k=v", "k=a,b", "k:=v"}, forms
    assert {s["platform"] for s in specs} >= {"linux", "darwin"}
    # A few packages carry many specs, most carry few (as in the real cache).
    per_package = sorted(Counter(s["name"] for s in specs).values())
    assert per_package[len(per_package) // 2] < 20 < per_package[-1]


def _variant_form(raw: str) -> str:
    if raw[0] in "+~":
        return raw[0] + "x"
    separator = ":=" if ":=" in raw else "="
    value = raw.split(separator, 1)[1]
    return f"k{separator}" + ("a,b" if "," in value else "v")


def _readme_queries() -> list[str]:
    text = README.read_text()
    section = text[text.index("## Example queries") :]
    block = section[section.index("```graphql") + len("```graphql") : section.index("```\n", 20)]
    return [q.strip() for q in re.split(r"\n# [^\n]*\n", "\n" + block) if q.strip()]


@pytest.fixture(scope="module")
def default_gql(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GraphQLClient]:
    with serving(default_index(tmp_path_factory.mktemp("cache"))) as client:
        yield client


@pytest.mark.parametrize("query", _readme_queries())
def test_the_readme_examples_answer_on_the_default_data(
    default_gql: GraphQLClient, query: str
) -> None:
    data = default_gql.data(query)
    (answer,) = data.values()
    assert answer, f"empty answer: {data}"
    if isinstance(answer, dict) and "totalCount" in answer:
        assert answer["totalCount"] > 0 and answer["nodes"], data
    if isinstance(answer, dict) and "nodes" in answer:
        assert answer["nodes"], data


def test_the_default_index_is_built_once(tmp_path: Path) -> None:
    first = default_index(tmp_path, DemoConfig(packages=20, specs=200))
    manifest = first / "manifest.json"
    built = manifest.stat().st_mtime_ns
    assert default_index(tmp_path, DemoConfig(packages=20, specs=200)) == first
    assert manifest.stat().st_mtime_ns == built


def test_the_default_index_is_reused_without_writing(tmp_path: Path) -> None:
    """As in the Docker image: built by root, served by a user who cannot write there.
    (A folder where the lock file was makes opening it fail, for root too.)"""
    config = DemoConfig(packages=20, specs=200)
    built = default_index(tmp_path, config)
    lock = built.with_name(built.name + ".lock")
    lock.unlink()
    lock.mkdir()
    before = sorted((p, p.stat().st_mtime_ns) for p in tmp_path.rglob("*"))
    assert default_index(tmp_path, config) == built
    assert sorted((p, p.stat().st_mtime_ns) for p in tmp_path.rglob("*")) == before


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def test_serve_without_an_index_answers_on_the_embedded_data(tmp_path: Path) -> None:
    """The README's first command: `cachegql serve` with nothing else answers at /graphql."""
    port = _free_port()
    env = {**os.environ, "CACHEGQL_CACHE_DIR": str(tmp_path)}
    command = [CLI, "serve", "--port", str(port)]
    log = tmp_path / "serve.log"
    with log.open("wb") as stderr:
        process = subprocess.Popen(
            command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=stderr
        )
    try:
        body = _first_answer(f"http://127.0.0.1:{port}", process, log)
        tags = {t["name"]: t["numSpecs"] for t in body["data"]["tags"]}
        assert set(tags) == set(DEFAULT_CONFIG.tags)
        assert sum(tags.values()) == DEFAULT_CONFIG.specs
    finally:
        process.terminate()
        process.wait(timeout=10)


def _first_answer(url: str, process: subprocess.Popen[bytes], log: Path) -> dict[str, Any]:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"serve exited: {log.read_text()}")
        try:
            response = httpx.post(
                f"{url}/graphql", json={"query": "{ tags { name numSpecs } }"}, timeout=5
            )
        except httpx.TransportError:
            time.sleep(0.1)
            continue
        assert response.status_code == 200, response.text
        body: dict[str, Any] = json.loads(response.text)
        return body
    raise AssertionError("serve did not answer within 60 s")


def test_the_default_store_is_opened_once_and_built_again_when_damaged(tmp_path: Path) -> None:
    config = DemoConfig(packages=20, specs=200)
    store = default_store(tmp_path, config)
    manifest = store.path / "manifest.json"
    built = manifest.stat().st_mtime_ns
    specs = sum(snapshot.num_specs for snapshot in store.snapshots.values())
    assert specs == 200
    store.close()
    column = next(p for p in store.path.resolve().rglob("*.npy") if p.stat().st_size > 128)
    column.write_bytes(column.read_bytes()[:-8])  # a truncated column: it cannot be opened
    store = default_store(tmp_path, config)
    assert sum(snapshot.num_specs for snapshot in store.snapshots.values()) == specs
    assert manifest.stat().st_mtime_ns != built
    store.close()


def test_the_demo_data_s_default_tag_is_checked_as_any_index_s(tmp_path: Path) -> None:
    """Refused in the words of any index, not taken for a damaged index and built again."""
    environment = {**os.environ, "CACHEGQL_CACHE_DIR": str(tmp_path)}
    default_index(tmp_path / "cachegql")  # where CACHEGQL_CACHE_DIR has it
    before = sorted((p, p.stat().st_mtime_ns) for p in tmp_path.rglob("*"))
    command = [CLI, "serve", "--default-tag", "nope", "--port", str(_free_port())]
    result = subprocess.run(command, capture_output=True, text=True, env=environment, timeout=60)
    assert result.returncode == 1, result.stderr
    assert "error: default tag 'nope' is not in the index; indexed tags:" in result.stderr
    assert "Traceback" not in result.stderr
    assert sorted((p, p.stat().st_mtime_ns) for p in tmp_path.rglob("*")) == before
