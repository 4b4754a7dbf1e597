"""The table of spec fields and the API's declarations agree, and every field works end to end.

`index/fields.py` declares each spec field once; the index derives its lists from it, and
`schema/` declares the GraphQL side by hand. These tests fail when a declaration is
missing, rather than a request failing at run time.
"""

from __future__ import annotations

from typing import Any

import pytest
from graphql import GraphQLInputObjectType, GraphQLObjectType

from cachegql.index import BUCKET_FIELDS, FACETS, SPEC_FIELDS, SpecField
from cachegql.schema import build_schema
from tests import oracle
from tests.conftest import GraphQLClient

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


@pytest.mark.parametrize("field", SPEC_FIELDS, ids=lambda f: f.name)
def test_each_field_filters_and_facets_over_http(
    gql: GraphQLClient, field: SpecField, expected: dict[str, dict[str, dict[str, Any]]]
) -> None:
    """Filtering a field on a value finds exactly the specs with that value, and its
    facet counts them; checked for every field of the table against the oracle."""
    specs = list(expected["develop"].values())
    value = _text(field, specs[0])
    want = sorted(s["hash"] for s in specs if _text(field, s) == value)
    facet = f"facets {{ {field.facet} {{ value count }} }}" if field.facet else ""
    condition = f"{{ {_camel(field.name)}: {{ eq: $value }} }}"
    data = gql.data(
        f"""query($value: String!) {{
              specs(tag: "develop", first: 100, filter: {condition})
              {{ totalCount nodes {{ hash }} {facet} }} }}""",
        value=value,
    )["specs"]
    assert data["totalCount"] == len(want) <= 100
    assert sorted(n["hash"] for n in data["nodes"]) == want
    if field.facet:
        assert data["facets"][field.facet] == [{"value": value, "count": len(want)}]


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


def _text(field: SpecField, spec: dict[str, Any]) -> str:
    """The field's value for a spec as the oracle read it from the page."""
    texts = {
        "package": spec["name"],
        "version": spec["versions"][0],
        "compiler": oracle.compiler_normalized(spec["compiler"]),
        "compiler_name": spec["compiler"].partition("@")[0],
    }
    return texts[field.name] if field.name in texts else str(spec[field.name])
