"""The table of spec fields and the API's declarations agree, and every field works end to end.

`index/fields.py` declares each spec field once; the index derives its lists from it, and
`schema/` declares the GraphQL side by hand. These tests fail when a declaration is
missing, rather than a request failing at run time.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from graphql import GraphQLInputObjectType, GraphQLObjectType

from cachegql.demo import MirrorConfig, write_mirror
from cachegql.index import BUCKET_FIELDS, FACETS, SPEC_FIELDS, SpecField, build_index
from cachegql.schema import build_schema
from tests import mirror_oracle as mo
from tests import oracle
from tests.conftest import GraphQLClient, serving

SCHEMA = build_schema()._schema


def _fields(type_name: str) -> set[str]:
    """The Python names of a GraphQL type's fields (strawberry keeps them on each field)."""
    graphql_type = SCHEMA.get_type(type_name)
    assert isinstance(graphql_type, GraphQLObjectType | GraphQLInputObjectType)
    names = set()
    for field in graphql_type.fields.values():
        definition = (field.extensions or {})["strawberry-definition"]
        names.add(definition.python_name)
    return names


def test_every_spec_field_is_a_spec_filter() -> None:
    assert {f.name for f in SPEC_FIELDS} <= _fields("SpecFilter")


def test_every_facet_is_a_field_of_spec_facets() -> None:
    assert set(FACETS) == _fields("SpecFacets")


def test_every_bucket_is_a_field_of_stack() -> None:
    assert {f.facet for f in BUCKET_FIELDS} <= _fields("Stack")


def test_every_record_attribute_is_a_field_of_spec() -> None:
    attributes = {f.name for f in SPEC_FIELDS if f.attribute} - {"package"}  # Spec.name
    assert attributes <= _fields("Spec")


Source = tuple[GraphQLClient, list[dict[str, Any]]]


@pytest.fixture(scope="module")
def mirror(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[GraphQLClient, list[dict[str, Any]]]]:
    """A small generated build cache (it has namespaces, which pages lack), served, and
    its specs as the independent oracle reads them."""
    root = tmp_path_factory.mktemp("mirror")
    summary = write_mirror(MirrorConfig(specs=400, packages=100, stacks=3, seed=7), root)
    build_index([summary.mirror], root / "ix", tag="develop")
    manifest = json.loads((summary.mirror / "v3/manifests/index/index.manifest.json").read_text())
    blob = manifest["data"][0]["checksum"]
    dag = mo.load_index(summary.mirror / "blobs" / "sha256" / blob[:2] / blob)
    specs = [_as_page_spec(dag.expected(h)) for h in dag.binaries()]
    with serving(root / "ix") as client:
        yield client, specs


def _as_page_spec(spec: mo.ExpectedSpec) -> dict[str, Any]:
    """The oracle's answer in the shape `_text` reads."""
    return {
        "hash": spec.hash,
        "name": spec.name,
        "versions": [spec.version],
        "compiler": spec.compiler.normalized,
        "compiler_name": spec.compiler.name,
        "os": spec.os,
        "platform": spec.platform,
        "target": spec.target,
        "namespace": spec.namespace,
    }


@pytest.mark.parametrize("field", SPEC_FIELDS, ids=lambda f: f.name)
def test_each_field_filters_and_facets_over_http(
    gql: GraphQLClient,
    field: SpecField,
    expected: dict[str, dict[str, dict[str, Any]]],
    mirror: Source,
) -> None:
    """Filtering a field on a value finds exactly the specs with that value, and its
    facet counts them; for every field of the table, on pages (where the field is
    recorded) and on a build cache, against the independent readings of both."""
    sources = [(mirror[0], mirror[1])]
    if field.required:
        sources.append((gql, list(expected["develop"].values())))
    for client, specs in sources:
        _check_field(client, field, specs)


def _check_field(client: GraphQLClient, field: SpecField, specs: list[dict[str, Any]]) -> None:
    value = _text(field, specs[len(specs) // 2])
    matching = [s for s in specs if _text(field, s) == value]
    want = sorted(s["hash"] for s in matching)
    facet = f"facets {{ {field.facet} {{ value count }} }}" if field.facet else ""
    condition = f"{{ {_camel(field.name)}: {{ eq: $value }} }}"
    data = client.data(
        f"""query($value: String!) {{
              specs(tag: "develop", first: 100, filter: {condition})
              {{ totalCount nodes {{ hash }} {facet} }} }}""",
        value=value,
    )["specs"]
    count = len(matching)
    assert data["totalCount"] == count > 0
    if count <= 100:
        assert sorted(n["hash"] for n in data["nodes"]) == want
    if field.facet:
        assert data["facets"][field.facet] == [{"value": value, "count": count}]


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


def _text(field: SpecField, spec: dict[str, Any]) -> str:
    """The field's value for a spec as the oracle read it."""
    texts = {
        "package": spec["name"],
        "version": spec["versions"][0],
        "compiler": oracle.compiler_normalized(spec["compiler"]),
        "compiler_name": spec.get("compiler_name") or spec["compiler"].partition("@")[0],
    }
    return texts[field.name] if field.name in texts else str(spec[field.name])
