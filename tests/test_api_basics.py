"""The first part of the contract over HTTP: tags, package, packages, spec by hash, GraphiQL."""

from __future__ import annotations

import logging
from importlib.metadata import version
from pathlib import Path
from typing import Any

import httpx
import pytest

from cachegql.index import build_index
from cachegql.schema import INTERNAL_MESSAGE, INTERNAL_SERVER_ERROR
from cachegql.server.app import Settings, create_app
from tests import oracle
from tests.conftest import PAGES, GraphQLClient, LiveServer

Expected = dict[str, dict[str, dict[str, Any]]]


def test_tags_count_packages_and_specs_per_tag(gql: GraphQLClient, expected: Expected) -> None:
    tags = gql.data("{ tags { name numPackages numSpecs isDefault } }")["tags"]
    assert tags == [
        {
            "name": tag,
            "numPackages": len({s["name"] for s in specs.values()}),
            "numSpecs": len(specs),
            "isDefault": tag == "develop",
        }
        for tag, specs in sorted(expected.items())
    ]


def test_package_by_name_summarises_its_specs(gql: GraphQLClient, expected: Expected) -> None:
    data = gql.data(
        """{ package(name: "hdf5") { name tag versions compilers oss platforms targets stacks
             numSpecs numSpecsByStack { stack count } } }"""
    )["package"]
    specs = [s for s in expected["develop"].values() if s["name"] == "hdf5"]
    stacks = sorted({st for s in specs for st in s["stacks"]})
    assert data == {
        "name": "hdf5",
        "tag": "develop",
        "versions": ["develop", "1.14.5", "1.14.3", "1.12.2"],
        "compilers": sorted({oracle.compiler_normalized(s["compiler"]) for s in specs}),
        "oss": sorted({s["os"] for s in specs}),
        "platforms": sorted({s["platform"] for s in specs}),
        "targets": sorted({s["target"] for s in specs}),
        "stacks": stacks,
        "numSpecs": len(specs),
        "numSpecsByStack": [
            {"stack": st, "count": sum(st in s["stacks"] for s in specs)} for st in stacks
        ],
    }


def test_package_versions_use_spack_order(gql: GraphQLClient) -> None:
    versions = gql.data('{ package(name: "cudnn") { versions } }')["package"]["versions"]
    assert versions == ["9.8.0.87-12", "8.9.7.29-12", "8.9.7.29-11", "8.9.5.30-12"]


def test_package_compilers_are_normalized(gql: GraphQLClient) -> None:
    data = gql.data('{ package(name: "py-torch-scatter") { compilers } }')["package"]
    assert data["compilers"] == ["apple-clang@15.0.0", "gcc@11.4.0"]


def test_package_of_another_tag_and_unknown_package(gql: GraphQLClient) -> None:
    data = gql.data(
        """{ old: package(name: "cmake", tag: "v0.22.0") { tag numSpecs }
             none: package(name: "cmake") { name }
             nope: package(name: "no-such-package") { name } }"""
    )
    assert data == {"old": {"tag": "v0.22.0", "numSpecs": 1}, "none": None, "nope": None}


def test_unknown_tag_is_a_user_error(gql: GraphQLClient) -> None:
    error = gql.error('{ package(name: "hdf5", tag: "v9") { name } }')
    assert error["extensions"]["code"] == "BAD_USER_INPUT"
    assert "v9" in error["message"] and "develop" in error["message"]


def test_packages_are_ordered_by_name_and_paginate(gql: GraphQLClient, expected: Expected) -> None:
    names = sorted({s["name"] for s in expected["develop"].values()})
    seen: list[str] = []
    after = None
    while True:
        page = gql.data(
            """query($after: String) { packages(first: 2, after: $after) {
                 totalCount pageInfo { hasNextPage hasPreviousPage endCursor }
                 edges { cursor node { name } } nodes { name } } }""",
            after=after,
        )["packages"]
        assert page["totalCount"] == len(names)
        assert [e["node"] for e in page["edges"]] == page["nodes"]
        assert page["pageInfo"]["hasPreviousPage"] == bool(seen)
        seen.extend(n["name"] for n in page["nodes"])
        if not page["pageInfo"]["hasNextPage"]:
            break
        after = page["pageInfo"]["endCursor"]
    assert seen == names


def test_spec_by_full_hash_returns_every_field(gql: GraphQLClient, expected: Expected) -> None:
    spec = next(s for s in expected["develop"].values() if s["name"] == "py-torch-scatter")
    data = gql.data(
        """query($h: String!) { spec(hash: $h) { hash shortHash name tag version versions
             compiler { name version raw } os platform target variants { name value raw }
             stacks size tarball package { name } } }""",
        h=spec["hash"],
    )["spec"]
    compiler_name, _, compiler_version = spec["compiler"].partition("@=")
    assert data == {
        "hash": spec["hash"],
        "shortHash": spec["hash"][:7],
        "name": "py-torch-scatter",
        "tag": "develop",
        "version": spec["versions"][0],
        "versions": spec["versions"],
        "compiler": {"name": compiler_name, "version": compiler_version, "raw": spec["compiler"]},
        "os": spec["os"],
        "platform": spec["platform"],
        "target": spec["target"],
        "variants": [
            {"name": "build_system", "value": "python_pip", "raw": "build_system=python_pip"}
        ],
        "stacks": sorted(spec["stacks"]),
        "size": None if spec["size"] == "-" else spec["size"],
        "tarball": spec["tarball"],
        "package": {"name": "py-torch-scatter"},
    }


def test_spec_fields_for_none_compiler_and_multi_valued_variants(
    gql: GraphQLClient, expected: Expected
) -> None:
    cuda = next(s for s in expected["develop"].values() if "cuda_arch=70,80" in s["variants"])
    data = gql.data(
        """query($h: String!) { spec(hash: $h) {
             compiler { name version raw } variants { name value raw } tarball size } }""",
        h=cuda["hash"],
    )["spec"]
    assert {"name": "cuda_arch", "value": "70,80", "raw": "cuda_arch=70,80"} in data["variants"]
    assert {
        "name": "languages",
        "value": "c,c++,fortran",
        "raw": "languages='c,c++,fortran'",
    } in data["variants"]
    assert {"name": "cuda", "value": "true", "raw": "+cuda"} in data["variants"]
    assert [v["raw"] for v in data["variants"]] == cuda["variants"]
    assert data["tarball"] is None and data["size"] is None
    none = next(s for s in expected["develop"].values() if s["compiler"] == "none")
    compiler = gql.data(
        "query($h: String!) { spec(hash: $h) { compiler { name version raw } } }", h=none["hash"]
    )
    assert compiler["spec"]["compiler"] == {"name": "none", "version": None, "raw": "none"}


def test_spec_size_when_known(gql: GraphQLClient, expected: Expected) -> None:
    sized = next(s for s in expected["develop"].values() if s["size"] != "-")
    data = gql.data("query($h: String!) { spec(hash: $h) { size } }", h=sized["hash"])
    assert data["spec"]["size"] == sized["size"]


def test_spec_of_unknown_hash_is_null(gql: GraphQLClient) -> None:
    assert gql.data('{ spec(hash: "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa") { hash } }') == {"spec": None}


def test_graphiql_is_served_to_browsers(gql: GraphQLClient) -> None:
    response = gql.http.get("/graphql", headers={"accept": "text/html"})
    assert response.status_code == 200
    assert "graphiql" in response.text.lower()


def test_health_names_the_build(gql: GraphQLClient, expected: Expected) -> None:
    body = gql.http.get("/healthz").json()
    assert body["status"] == "ok"
    assert body["tags"] == {tag: len(specs) for tag, specs in expected.items()}
    assert body["version"] == version("cachegql")
    assert "/" not in str({k: v for k, v in body.items() if k != "response_cache"})  # no paths


def test_syntax_error_in_query_has_a_code(gql: GraphQLClient) -> None:
    error = gql.error("{ tags { name ")
    assert error["extensions"]["code"] == "BAD_USER_INPUT"


def test_wrong_argument_type_has_a_code(gql: GraphQLClient) -> None:
    error = gql.error('{ packages(first: "ten") { totalCount } }')
    assert error["extensions"]["code"] == "BAD_USER_INPUT"


def test_a_variable_given_null_for_a_non_null_argument_is_the_request_s_error(
    gql: GraphQLClient,
) -> None:
    """A nullable variable with a default passes validation in a non-null place; given
    null, graphql-core refuses the argument as the field runs: a client's error."""
    query = 'query($h: String = "aaaaaaa") { spec(hash: $h) { hash } }'
    error = gql.error(query, h=None)
    assert error["extensions"]["code"] == "BAD_USER_INPUT"
    assert error["message"].startswith("Argument 'hash' has invalid value")
    assert gql.data(query) == {"spec": None}  # its default used: no spec has that hash


def test_an_unexpected_exception_reaches_clients_only_as_its_code(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A fault in the served index (here a damaged stack summary, broken in the running
    server) is INTERNAL_SERVER_ERROR with a fixed message: what went wrong goes to the
    log, never to the client."""
    build_index([PAGES], tmp_path / "ix")
    app = create_app(Settings(index=tmp_path / "ix", reload_interval=0))
    summaries = app.state.holder.store.snapshot("develop").stack_summaries
    summaries[0] = {"name": "secret-stack-detail"}  # its counts are gone
    with LiveServer(app) as url, caplog.at_level(logging.ERROR, logger="cachegql.errors"):
        response = httpx.post(f"{url}/graphql", json={"query": "{ stacks { name numSpecs } }"})
    assert response.status_code == 200
    body = response.json()
    assert body["data"] is None
    assert body["errors"] == [
        {
            "message": INTERNAL_MESSAGE,
            "locations": [{"line": 1, "column": 3}],
            "path": ["stacks"],
            "extensions": {"code": INTERNAL_SERVER_ERROR},
        }
    ]
    assert "KeyError" not in response.text and "secret-stack-detail" not in response.text
    assert "KeyError" in caplog.text and "stacks" in caplog.text
