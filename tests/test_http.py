"""GraphQL over HTTP as the spec says, and the HTTP around it, against the real server:
media types, status codes, GET and its caching headers, persisted queries, CORS, gzip,
readiness and the published schema."""

from __future__ import annotations

import gzip
import hashlib
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest

from cachegql.schema import export_sdl
from cachegql.server.app import Settings, create_app
from tests.conftest import LiveServer

GQL_RESPONSE = "application/graphql-response+json"
JSON = "application/json"
ORIGIN = "https://frontend.example"
TAGS = "{ tags { name numSpecs } }"


@pytest.fixture(scope="module")
def http(pages_index: Path) -> Iterator[httpx.Client]:
    settings = Settings(
        index=pages_index, reload_interval=0, cors_origins=(ORIGIN,), cache_max_age=120
    )
    with LiveServer(create_app(settings)) as url, httpx.Client(base_url=url, timeout=30) as client:
        yield client


def _post(http: httpx.Client, body: Any, accept: str = JSON, **headers: str) -> httpx.Response:
    content = body if isinstance(body, bytes) else orjson.dumps(body)
    return http.post(
        "/graphql",
        content=content,
        headers={"content-type": JSON, "accept": accept, **headers},
    )


def _code(response: httpx.Response) -> str:
    code: str = response.json()["errors"][0]["extensions"]["code"]
    return code


def test_media_type_follows_accept(http: httpx.Client) -> None:
    for accept, media in [
        (GQL_RESPONSE, GQL_RESPONSE),
        (JSON, JSON),
        ("", JSON),
        ("*/*", JSON),
        (f"{JSON};q=0.5, {GQL_RESPONSE}", GQL_RESPONSE),
        (f"{GQL_RESPONSE};q=0.1, {JSON}", JSON),
        (f"{JSON};q=high, {GQL_RESPONSE}", GQL_RESPONSE),  # a q that is no number is 0
    ]:
        response = _post(http, {"query": TAGS}, accept)
        assert response.status_code == 200, accept
        assert response.headers["content-type"] == f"{media}; charset=utf-8", accept
        assert response.json()["data"]["tags"], accept


def test_unacceptable_media_and_bodies_are_refused_with_a_code(http: httpx.Client) -> None:
    refused = _post(http, {"query": TAGS}, "application/xml")
    assert refused.status_code == 406 and _code(refused) == "BAD_USER_INPUT"
    assert GQL_RESPONSE in refused.json()["errors"][0]["message"]
    form = http.post("/graphql", content=b"query=1", headers={"content-type": "text/plain"})
    assert form.status_code == 415 and "application/json" in form.json()["errors"][0]["message"]
    latin = http.post(
        "/graphql", content=b"{}", headers={"content-type": "application/json; charset=latin-1"}
    )
    assert latin.status_code == 415


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"{not json", "the body is not valid JSON"),
        (b'{"query": "\xff"}', "the body is not valid JSON: not UTF-8 text"),
        (b"[]", "batched requests"),
        (b'"text"', "JSON object"),
        ({"query": 1}, "'query' must be a string"),
        ({"query": TAGS, "variables": [1]}, "'variables' must be a JSON object"),
        ({"query": TAGS, "operationName": 3}, "'operationName' must be a string"),
        ({"query": TAGS, "extensions": "x"}, "'extensions' must be a JSON object"),
        ({}, "no GraphQL query"),
    ],
)
def test_malformed_requests_are_400_in_either_media(
    http: httpx.Client, body: Any, message: str
) -> None:
    for accept in (JSON, GQL_RESPONSE):
        response = _post(http, body, accept)
        assert response.status_code == 400, accept
        assert message in response.json()["errors"][0]["message"]
        assert _code(response) == "BAD_USER_INPUT"
        assert "data" not in response.json()


def test_document_errors_are_400_only_under_graphql_response_json(http: httpx.Client) -> None:
    for query, message in [
        ("{ tags {", "Syntax Error"),
        ("{ nope }", "Cannot query field 'nope'"),
        ("query ($n: Int!) { packages(first: $n) { totalCount } }", "'$n'"),
    ]:
        legacy = _post(http, {"query": query}, JSON)
        modern = _post(http, {"query": query}, GQL_RESPONSE)
        assert legacy.status_code == 200 and modern.status_code == 400
        assert legacy.json() == modern.json()
        assert "data" not in modern.json()
        assert message in modern.json()["errors"][0]["message"]
        assert _code(modern) == "BAD_USER_INPUT"


def test_field_errors_are_200_with_data_in_both_media(http: httpx.Client) -> None:
    query = '{ package(name: "hdf5", tag: "v9") { name } tags { name } }'
    for accept in (JSON, GQL_RESPONSE):
        response = _post(http, {"query": query}, accept)
        body = response.json()
        assert response.status_code == 200
        assert body["data"]["tags"] and body["data"]["package"] is None
        assert body["errors"][0]["path"] == ["package"]


def test_operation_name_picks_one_of_several(http: httpx.Client) -> None:
    document = "query A { tags { name } } query B { tags { numSpecs } }"
    chosen = _post(http, {"query": document, "operationName": "B"}).json()
    assert set(chosen["data"]["tags"][0]) == {"numSpecs"}
    missing = _post(http, {"query": document, "operationName": "C"})
    assert missing.status_code == 400 and "'C'" in missing.text


def test_get_answers_queries_with_caching_headers(http: httpx.Client) -> None:
    params = {
        "query": "query Q($n: Int) { packages(first: $n) { nodes { name } } }",
        "variables": '{"n":2}',
    }
    response = http.get("/graphql", params=params, headers={"accept": GQL_RESPONSE})
    assert response.status_code == 200
    assert len(response.json()["data"]["packages"]["nodes"]) == 2
    assert response.headers["cache-control"] == "public, max-age=120"
    tag = response.headers["etag"]
    assert tag.startswith('W/"')
    again = http.get(
        "/graphql", params=params, headers={"accept": GQL_RESPONSE, "if-none-match": tag}
    )
    assert again.status_code == 304 and again.content == b"" and again.headers["etag"] == tag
    # the tag depends on the media type and the query string
    other_media = http.get("/graphql", params=params, headers={"accept": JSON})
    assert other_media.headers["etag"] != tag
    stale = http.get("/graphql", params=params, headers={"if-none-match": 'W/"other"'})
    assert stale.status_code == 200


def test_get_answers_with_errors_are_not_cached(http: httpx.Client) -> None:
    response = http.get("/graphql", params={"query": '{ package(name: "x", tag: "v9") { name } }'})
    assert response.status_code == 200 and response.json()["errors"]
    assert response.headers["cache-control"] == "no-store" and "etag" not in response.headers
    bad = http.get("/graphql", params={"query": "{ tags", "variables": "{"})
    assert bad.status_code == 400 and "'variables' is not valid JSON" in bad.text


def test_get_cannot_mutate_and_other_methods_are_refused(http: httpx.Client) -> None:
    response = http.get("/graphql", params={"query": "mutation { x }"})
    assert response.status_code == 405 and response.headers["allow"] == "GET, HEAD, POST"
    assert _code(response) == "BAD_USER_INPUT"
    for method in ("PUT", "DELETE", "PATCH", "OPTIONS"):
        # Every error of /graphql is a GraphQL error (docs/serving/http.md), these too.
        refused = http.request(method, "/graphql", content=b'{"query": "{ tags { name } }"}')
        assert refused.status_code == 405 and refused.headers["allow"] == "GET, HEAD, POST", method
        assert _code(refused) == "BAD_USER_INPUT"
        assert f"not {method}" in refused.json()["errors"][0]["message"]


def test_a_subscription_is_refused_for_what_it_is(http: httpx.Client) -> None:
    """Not with GET's 405 ("use POST"), POSTed or not: the schema serves queries only."""
    query = "subscription { tags { name } }"
    for response in (
        http.post("/graphql", json={"query": query}),
        http.get("/graphql", params={"query": query}),
    ):
        assert response.status_code == 400 and _code(response) == "BAD_USER_INPUT"
        message = response.json()["errors"][0]["message"]
        assert message == "subscriptions are not served: only queries"


def test_head_is_answered_as_get_without_a_body(http: httpx.Client) -> None:
    params = {"query": "{ tags { name } }"}
    got, head = http.get("/graphql", params=params), http.head("/graphql", params=params)
    assert head.status_code == got.status_code == 200
    assert head.headers["etag"] == got.headers["etag"]
    assert head.headers["content-length"] == got.headers["content-length"]
    same = http.head("/graphql", params=params, headers={"if-none-match": got.headers["etag"]})
    assert same.status_code == 304  # as the GET's validation
    page = http.head("/graphql", headers={"accept": "text/html"})
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    # On the wire: the answer's head, and nothing after it (httpx reads no HEAD body).
    url = http.base_url
    with socket.create_connection((url.host, url.port), timeout=10) as raw:
        raw.sendall(
            b"HEAD /graphql?query=%7Btags%7Bname%7D%7D HTTP/1.1\r\nhost: x\r\n"
            b"connection: close\r\n\r\n"
        )
        sent = b"".join(iter(lambda: raw.recv(65536), b""))
    status, _, rest = sent.partition(b"\r\n\r\n")
    assert status.startswith(b"HTTP/1.1 200") and b"content-length: " in status.lower()
    assert rest == b""


def test_automatic_persisted_queries(http: httpx.Client) -> None:
    query = "query Persisted { tags { name } }"
    sha256 = hashlib.sha256(query.encode()).hexdigest()
    extensions = {"persistedQuery": {"version": 1, "sha256Hash": sha256}}
    unknown = _post(http, {"extensions": extensions})
    assert unknown.status_code == 200 and _code(unknown) == "PERSISTED_QUERY_NOT_FOUND"
    assert unknown.json()["errors"][0]["message"] == "PersistedQueryNotFound"
    unknown_modern = _post(http, {"extensions": extensions}, GQL_RESPONSE)
    assert unknown_modern.status_code == 400
    registered = _post(http, {"query": query, "extensions": extensions})
    assert registered.json()["data"]["tags"]
    by_hash = http.get("/graphql", params={"extensions": orjson.dumps(extensions).decode()}).json()
    assert by_hash == registered.json()
    wrong = _post(http, {"query": TAGS, "extensions": extensions})
    assert wrong.status_code == 400 and "does not match" in wrong.text
    for persisted, code in [
        ({"version": 2, "sha256Hash": sha256}, "PERSISTED_QUERY_NOT_SUPPORTED"),
        ({"version": 1, "sha256Hash": "xyz"}, "BAD_USER_INPUT"),
    ]:
        refused = _post(http, {"extensions": {"persistedQuery": persisted}})
        assert refused.status_code == 400 and _code(refused) == code


LARGE = {"query": "{ specs(first: 100) { nodes { hash name version variants { raw } } } }"}


def test_gzip_for_large_answers_only(http: httpx.Client) -> None:
    large = _post(http, LARGE, **{"accept-encoding": "gzip"})
    assert large.headers["content-encoding"] == "gzip"
    assert "Accept-Encoding" in large.headers["vary"]
    assert int(large.headers["content-length"]) < len(large.content) / 3
    assert len(large.json()["data"]["specs"]["nodes"]) > 10  # httpx decoded it
    small = _post(http, {"query": "{ tags { name } }"}, **{"accept-encoding": "gzip"})
    assert "content-encoding" not in small.headers


def test_repeats_are_sent_gzipped_from_the_cache_or_plain(http: httpx.Client) -> None:
    """The response cache keeps one answer and sends it gzipped or not, as asked; an
    answer that could be gzipped says it varies by Accept-Encoding either way."""
    plain = _post(http, LARGE, **{"accept-encoding": "identity"})
    hits = http.get("/healthz").json()["response_cache"]["hits"]
    zipped = [_post(http, LARGE, **{"accept-encoding": "gzip, deflate"}) for _ in range(2)]
    refused = _post(http, LARGE, **{"accept-encoding": "gzip;q=0"})
    assert http.get("/healthz").json()["response_cache"]["hits"] == hits + 3
    assert "content-encoding" not in plain.headers and "content-encoding" not in refused.headers
    assert "Accept-Encoding" in plain.headers["vary"]
    for answer in zipped:
        assert answer.headers["content-encoding"] == "gzip"
        assert answer.content == plain.content  # httpx decoded it
    assert zipped[0].headers["content-length"] == zipped[1].headers["content-length"]


def test_static_files_are_gzipped_as_they_stream(http: httpx.Client) -> None:
    page = http.get("/graphql", headers={"accept": "text/html"}).text
    (script,) = [p for p in page.split('"') if p.endswith("graphiql.min.js")]
    plain = http.get(script, headers={"accept-encoding": "identity"})
    with http.stream("GET", script, headers={"accept-encoding": "gzip"}) as zipped:
        raw = b"".join(zipped.iter_raw())
        assert zipped.headers["content-encoding"] == "gzip"
    assert len(raw) < len(plain.content) / 2
    assert gzip.decompress(raw) == plain.content


def test_cors_allows_the_configured_origin_only(http: httpx.Client) -> None:
    preflight = http.options(
        "/graphql",
        headers={
            "origin": ORIGIN,
            "access-control-request-method": "POST",
            "access-control-request-headers": "content-type",
        },
    )
    assert preflight.status_code == 200
    assert preflight.headers["access-control-allow-origin"] == ORIGIN
    assert "POST" in preflight.headers["access-control-allow-methods"]
    simple = _post(http, {"query": TAGS}, origin=ORIGIN)
    assert simple.headers["access-control-allow-origin"] == ORIGIN
    assert "ETag" in simple.headers["access-control-expose-headers"]
    foreign = _post(http, {"query": TAGS}, origin="https://elsewhere.example")
    assert "access-control-allow-origin" not in foreign.headers
    refused = http.options(
        "/graphql",
        headers={"origin": "https://elsewhere.example", "access-control-request-method": "POST"},
    )
    assert refused.status_code == 400


def test_no_cors_headers_unless_configured(gql_url: str) -> None:
    response = httpx.post(
        f"{gql_url}/graphql", json={"query": TAGS}, headers={"origin": ORIGIN}, timeout=30
    )
    assert response.status_code == 200
    assert "access-control-allow-origin" not in response.headers


@pytest.fixture(scope="module")
def gql_url(pages_index: Path) -> Iterator[str]:
    with LiveServer(create_app(Settings(index=pages_index, reload_interval=0))) as url:
        yield url


def test_readiness_and_the_published_schema(http: httpx.Client) -> None:
    ready = http.get("/readyz")
    assert ready.status_code == 200 and ready.json()["status"] == "ready"
    assert ready.json()["build"] == http.get("/healthz").json()["build"]
    sdl = http.get("/graphql/schema.graphql")
    assert sdl.headers["content-type"].startswith("application/graphql")
    assert sdl.text == export_sdl()


def test_every_answer_has_a_request_id(http: httpx.Client) -> None:
    first = _post(http, {"query": TAGS})
    second = _post(http, {"query": TAGS})
    assert first.headers["x-request-id"] != second.headers["x-request-id"]
    mine = _post(http, {"query": TAGS}, **{"x-request-id": "trace-42"})
    assert mine.headers["x-request-id"] == "trace-42"


def test_the_response_cache_is_keyed_by_the_negotiated_media_type(http: httpx.Client) -> None:
    """Apollo Client 4's Accept header and a plain one that choose the same media type
    share a cache entry; a different media type does not."""
    query = {"query": "query Keyed { tags { name numSpecs } }"}

    def stats() -> dict[str, int]:
        counts: dict[str, int] = http.get("/healthz").json()["response_cache"]
        return counts

    apollo = f"{GQL_RESPONSE},{JSON};q=0.9"
    first = _post(http, query, apollo)
    before = stats()
    same = _post(http, query, GQL_RESPONSE)
    assert stats()["hits"] == before["hits"] + 1 and same.content == first.content
    other = _post(http, query, JSON)
    assert stats()["misses"] == before["misses"] + 1
    assert other.headers["content-type"].startswith(JSON)
