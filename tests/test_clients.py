"""Real clients against the real server over HTTP: the graphql-http audit, graphql-js's
introspection and Apollo Client with persisted queries (node, tests/node), Python's gql
and graphql-core, and curl.

The node clients are installed by `make test` (`npm ci` in tests/node). Without node,
npm or curl these tests skip with a message, and fail under CI=true, where they must run.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import graphql
import orjson
import pytest
from gql import Client
from gql import gql as parse_request
from gql.transport.exceptions import TransportQueryError
from gql.transport.httpx import HTTPXTransport

from cachegql.schema import export_sdl
from cachegql.server.app import Settings, create_app
from tests.conftest import LiveServer, skip_unless_ci

NODE_DIR = Path(__file__).parent / "node"
ORIGIN = "https://frontend.example"


def _tool_or_skip(name: str, ready: bool = True, hint: str = "") -> str:
    path = shutil.which(name)
    if path and ready:
        return path
    skip_unless_ci(f"client suite: {name} {'not found' if not path else hint}")


def _node() -> str:
    installed = (NODE_DIR / "node_modules" / "graphql-http").is_dir()
    return _tool_or_skip("node", installed, "is here but tests/node is not installed: make test")


@pytest.fixture(scope="module")
def server(pages_index: Path) -> Iterator[tuple[str, Any]]:
    app = create_app(Settings(index=pages_index, reload_interval=0, cors_origins=(ORIGIN,)))
    with LiveServer(app) as url:
        yield url, app


def _run_node(script: str, url: str) -> Any:
    done = subprocess.run(
        [_node(), script, url], cwd=NODE_DIR, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return orjson.loads(done.stdout)


def test_graphql_http_audit_has_no_errors_or_warnings(server: tuple[str, Any]) -> None:
    url, _ = server
    results = _run_node("audit.mjs", f"{url}/graphql")
    assert len(results) >= 50  # the audit ran, all of it
    assert [r for r in results if r["status"] != "ok"] == []


def test_graphql_js_introspection_with_every_option(server: tuple[str, Any]) -> None:
    url, _ = server
    answer = _run_node("introspect.mjs", f"{url}/graphql")
    assert answer.get("errors") is None and answer["status"] == 200
    ours = graphql.build_schema(export_sdl())
    assert answer["types"] == len(ours.type_map)
    assert answer["queryFields"] == sorted(ours.query_type.fields)  # type: ignore[union-attr]


def test_apollo_client_with_persisted_queries_over_get(server: tuple[str, Any]) -> None:
    url, app = server
    persisted = app.state.endpoint.persisted
    before = len(persisted)
    first, second = _run_node("apollo.mjs", f"{url}/graphql")
    assert first == second and first["error"] is None
    assert [t["name"] for t in first["data"]["tags"]] == ["develop", "v0.22.0"]
    # the first client's hash was not known (the query was then sent and remembered);
    # the second client's hash-only GET was answered from it
    assert len(persisted) == before + 1


@pytest.mark.parametrize(
    "options",
    [
        {},
        {
            "specified_by_url": True,
            "directive_is_repeatable": True,
            "schema_description": True,
            "input_value_deprecation": True,
            "one_of": True,
        },
    ],
)
def test_graphql_core_introspection(server: tuple[str, Any], options: dict[str, bool]) -> None:
    url, _ = server
    query = graphql.get_introspection_query(**options)
    with Client(transport=HTTPXTransport(url=f"{url}/graphql", timeout=30)) as session:
        result = session.execute(parse_request(query))
    fetched = graphql.build_client_schema(result)
    assert _printed(fetched) == _printed(graphql.build_schema(export_sdl()))


def _printed(schema: graphql.GraphQLSchema) -> str:
    return graphql.print_schema(graphql.lexicographic_sort_schema(schema))


def test_python_gql_validates_against_the_fetched_schema(server: tuple[str, Any]) -> None:
    url, _ = server
    transport = HTTPXTransport(url=f"{url}/graphql", timeout=30)
    client = Client(transport=transport, fetch_schema_from_transport=True)
    with client as session:
        request = parse_request("query One($h: String!) { spec(hash: $h) { name version } }")
        request.variable_values = {"h": "22xi3lv"}
        assert session.execute(request) == {"spec": {"name": "cudnn", "version": "9.8.0.87-12"}}
        with pytest.raises(graphql.GraphQLError, match="Cannot query field 'nope'"):
            session.execute(parse_request("{ nope }"))  # refused by gql, before sending
        with pytest.raises(TransportQueryError) as refused:
            session.execute(parse_request('{ package(name: "hdf5", tag: "v9") { name } }'))
    assert refused.value.errors
    assert refused.value.errors[0]["extensions"]["code"] == "BAD_USER_INPUT"


def test_an_introspection_bomb_is_refused(server: tuple[str, Any]) -> None:
    url, _ = server
    chain = "name " + "ofType { " * 30 + "name" + " }" * 30
    with Client(transport=HTTPXTransport(url=f"{url}/graphql", timeout=30)) as session:
        with pytest.raises(TransportQueryError) as deep:
            session.execute(parse_request(f'{{ __type(name: "Query") {{ {chain} }} }}'))
        assert deep.value.errors
        assert deep.value.errors[0]["extensions"]["code"] == "QUERY_TOO_COMPLEX"
        nested = "__schema { types { fields { type { fields { type { fields { name } } } } } } }"
        with pytest.raises(TransportQueryError) as wide:
            session.execute(parse_request(f"{{ {nested} }}"))
        assert wide.value.errors and "introspection" in wide.value.errors[0]["message"].lower()


def _curl(*args: str) -> tuple[dict[str, str], bytes, int]:
    """curl's answer: the headers (lower-cased names), the body, the status."""
    done = subprocess.run(
        [_tool_or_skip("curl"), "--silent", "--show-error", "--include", *args],
        capture_output=True,
        timeout=60,
        check=True,
    )
    head, _, body = done.stdout.partition(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    return headers, body, int(lines[0].split()[1])


def test_curl_sees_caching_headers_304_and_gzip(server: tuple[str, Any]) -> None:
    url, _ = server
    target = f"{url}/graphql?query=%7Bspecs(first:100)%7Bnodes%7Bhash%20name%7D%7D%7D"
    headers, body, status = _curl("--compressed", target)
    assert status == 200 and headers["content-encoding"] == "gzip"
    assert headers["cache-control"] == "public, max-age=60"
    assert orjson.loads(body)["data"]["specs"]["nodes"]
    again, empty, not_modified = _curl("-H", f"If-None-Match: {headers['etag']}", target)
    assert (not_modified, empty, again["etag"]) == (304, b"", headers["etag"])


def test_curl_sees_cors_preflight_and_statuses(server: tuple[str, Any]) -> None:
    url, _ = server
    headers, _, status = _curl(
        "-X", "OPTIONS", f"{url}/graphql",
        "-H", f"Origin: {ORIGIN}",
        "-H", "Access-Control-Request-Method: POST",
        "-H", "Access-Control-Request-Headers: content-type",
    )  # fmt: skip
    assert status == 200 and headers["access-control-allow-origin"] == ORIGIN
    query = '{"query": "{ tags { name } }"}'
    _, body, status = _curl(
        f"{url}/graphql", "-H", "Content-Type: application/json", "-H", "Accept: text/csv",
        "--data", query,
    )  # fmt: skip
    assert status == 406 and orjson.loads(body)["errors"][0]["extensions"]["code"]
    headers, body, status = _curl(
        f"{url}/graphql", "-H", "Content-Type: application/json",
        "-H", "Accept: application/graphql-response+json", "--data", '{"query": "{ tags {"}',
    )  # fmt: skip
    assert status == 400 and headers["content-type"].startswith("application/graphql-response")
    _, body, status = _curl(f"{url}/readyz")
    assert status == 200 and orjson.loads(body)["status"] == "ready"
    headers, body, _ = _curl(f"{url}/graphql/schema.graphql")
    assert body.decode() == export_sdl()


def test_persisted_query_hash_is_sha256_of_the_text(server: tuple[str, Any]) -> None:
    """What Apollo's link sends, built by hand with curl: text and hash, then hash only."""
    url, _ = server
    query = "query ByCurl { tags { numSpecs } }"
    sha = hashlib.sha256(query.encode()).hexdigest()
    extensions = {"persistedQuery": {"version": 1, "sha256Hash": sha}}
    post = orjson.dumps({"query": query, "extensions": extensions}).decode()
    _, registered, _ = _curl(f"{url}/graphql", "-H", "Content-Type: application/json", "-d", post)
    _, by_hash, status = _curl(
        "--get",
        f"{url}/graphql",
        "--data-urlencode",
        f"extensions={orjson.dumps(extensions).decode()}",
    )
    assert status == 200 and orjson.loads(by_hash) == orjson.loads(registered)
