"""The price of a query, measured before it runs; a query over its budget is refused.

A query is priced by walking its operation once: each fragment is priced once per page
size it is met with and remembered, so a fan-out of fragment spreads costs what its text
costs to read, not what it expands to. The price, in units of about one answer value:

- a field costs 1 each time it is met (aliases and repeated fields count each time);
- a list field meets its selection once per item it can hold: `first` where it has one,
  else the longest such list in the index being served (`SizeBounds`: the most stacks,
  facet values, versions of a package, ... any tag has), as declared in `LIST_BOUNDS`;
- a connection (`specs`, `packages`, `dependents`, ...) costs a query over the index,
  `CONNECTION_COST`, plus the price of what it is asked to match: `CONDITION_COST` per
  condition of its filter (every field of every nested filter, every `and`/`or` entry),
  `IN_VALUE_COST` per value of an `in` list or `variants`, `CONDITION_COST` per word of
  `search` and per term of `query`; its `nodes` and `edges` meet their selection
  `first` times (capped at `max_first`; a variable without a value: the default, 20);
- a lookup by key at the root (`spec`, `package`, `stack`) costs `LOOKUP_COST`;
- `tagDiff` is a connection that runs its filter over two tags: it costs two queries and
  its filter twice (`QUERIES_PER_CONNECTION`); the `addedSpecs` and `removedSpecs` of each
  of its packages are connections (slices of the diff, priced as any other).

The total must stay within `max_cost` (configurable), and the depth within `MAX_DEPTH`:
else the query is refused with QUERY_TOO_COMPLEX, naming its price and the limit.
Introspection (`__schema`, `__type`) is measured apart: the standard introspection
queries of graphql-js, graphql-core and gql are 13 to 15 levels deep, mostly `ofType`
chains, and must answer for GraphiQL, codegen and Apollo to work. Their depth has its own
bound; graphql-core's `MaxIntrospectionDepthRule` refuses nested `fields { type { fields`.

The price is computed after parsing and before validation, so an expensive document is
refused before graphql-core's validation rules walk it; a document has a bounded number of
tokens (`MAX_TOKENS`), so pricing it is bounded too.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from graphql import (
    FieldNode,
    FragmentDefinitionNode,
    FragmentSpreadNode,
    GraphQLError,
    GraphQLNamedType,
    GraphQLObjectType,
    GraphQLSchema,
    InlineFragmentNode,
    OperationDefinitionNode,
    SelectionSetNode,
)
from strawberry.extensions import SchemaExtension
from strawberry.schema.exceptions import CannotGetOperationTypeError

from cachegql.index import BUCKET_FIELDS, FACETS, SizeBounds, size_bounds
from cachegql.schema.context import Context
from cachegql.schema.documents import argument_value, named_type, operations_of, selection_depth
from cachegql.schema.errors import QUERY_TOO_COMPLEX
from cachegql.schema.pagination import DEFAULT_FIRST, DEFAULT_MAX_FIRST
from cachegql.schema.question_limits import QUESTION_BOUNDS, QUESTION_LOOKUPS

__all__ = [
    "CONNECTION_FIELDS",
    "DEFAULT_MAX_COST",
    "LIST_BOUNDS",
    "MAX_DEPTH",
    "MAX_INTROSPECTION_DEPTH",
    "MAX_TOKENS",
    "CostLimit",
    "Price",
    "price",
]

MAX_DEPTH = 12
MAX_INTROSPECTION_DEPTH = 24
MAX_TOKENS = 5_000
"""Tokens a document may have: the GraphiQL introspection query has about 1,500."""
DEFAULT_MAX_COST = 1_000_000
CONNECTION_COST = 100
LOOKUP_COST = 10
CONDITION_COST = 50
IN_VALUE_COST = 5
INTROSPECTION_FIELDS = frozenset({"__schema", "__type"})
CONNECTION_FIELDS = frozenset(
    {"specs", "packages", "dependents", "tagDiff", "addedSpecs", "removedSpecs"}
)
CONNECTION_TYPES = frozenset({"SpecConnection", "PackageConnection", "TagDiffConnection"})
QUERIES_PER_CONNECTION: Mapping[str, int] = {"TagDiffConnection": 2}
"""Connections that query more than one tag: a tag diff filters both of its tags."""
LOOKUPS = frozenset({("Query", "spec"), ("Query", "package"), ("Query", "stack")}) | (
    QUESTION_LOOKUPS
)
"""Lookups at the root; nested ones (`Spec.package`, `Dependency.spec`) are read in one
batch per level of the answer, and cost what any field costs."""
FILTER_ARGUMENTS = frozenset({"filter"})
IN_LISTS = frozenset({"in", "variants"})

_Bound = Callable[[SizeBounds, int], int]
"""A list's longest length, from the index's bounds and the page size in effect."""


def _facet(name: str) -> _Bound:
    return lambda bounds, page: bounds.facet_values.get(name, 0)


def _per_package(name: str) -> _Bound:
    return lambda b, page: min(b.facet_values.get(name, 0), b.specs_per_package)


def _per_spec(name: str) -> _Bound:
    return lambda bounds, page: bounds.per_spec.get(name, 0)


def _page(bounds: SizeBounds, page: int) -> int:
    return page


LIST_BOUNDS: Mapping[tuple[str, str], _Bound] = {
    ("Query", "tags"): lambda bounds, page: bounds.tags,
    ("Query", "stacks"): _facet("stacks"),
    ("SpecConnection", "nodes"): _page,
    ("SpecConnection", "edges"): _page,
    ("PackageConnection", "nodes"): _page,
    ("PackageConnection", "edges"): _page,
    ("TagDiffConnection", "nodes"): _page,
    ("TagDiffConnection", "edges"): _page,
    **{("SpecFacets", facet): _facet(facet) for facet in FACETS},
    **{("Stack", f.facet): _facet(f.facet) for f in BUCKET_FIELDS if f.facet},
    **{
        ("Package", name): _per_package(name)
        for name in ("versions", "compilers", "oss", "platforms", "targets", "stacks")
    },
    ("Package", "numSpecsByStack"): _per_package("stacks"),
    ("Spec", "versions"): _per_spec("versions"),
    ("Spec", "stacks"): _per_spec("stacks"),
    ("Spec", "variants"): _per_spec("variants"),
    ("Spec", "dependencies"): _per_spec("dependencies"),
    ("Dependency", "deptypes"): lambda bounds, page: 4,
    ("Dependency", "virtuals"): lambda bounds, page: 16,
    **QUESTION_BOUNDS,
}
"""Every list field of the schema, with its longest length (tests/test_limits.py checks
that none is missing)."""


@dataclass(frozen=True, slots=True)
class Price:
    cost: int
    depth: int
    introspection_depth: int

    def refusal(self, max_cost: int) -> str | None:
        """Why a query of this price is refused; None when it is not."""
        if self.introspection_depth > MAX_INTROSPECTION_DEPTH:
            return (
                f"the introspection is {self.introspection_depth} levels deep; "
                f"the limit is {MAX_INTROSPECTION_DEPTH}"
            )
        if self.depth > MAX_DEPTH:
            return f"the query is {self.depth} levels deep; the limit is {MAX_DEPTH}"
        if self.cost > max_cost:
            return (
                f"the query costs {self.cost:,} (about one unit per value it can return, "
                f"more for each query over the index and each filter condition); the limit "
                f"is {max_cost:,}: ask for fewer items ('first'), fewer fields or aliases, "
                "or a smaller filter"
            )
        return None


def price(
    schema: GraphQLSchema,
    operation: OperationDefinitionNode,
    fragments: Mapping[str, FragmentDefinitionNode],
    variables: Mapping[str, Any],
    bounds: SizeBounds,
    max_first: int = DEFAULT_MAX_FIRST,
) -> Price:
    """The price of `operation` with these variable values (a variable not given has its
    default, as at run time), over an index of `bounds`."""
    root = schema.query_type
    if root is None or operation.operation.value != "query":
        return Price(0, 0, 0)
    defaults = {
        definition.variable.name.value: argument_value(definition.default_value, variables)
        for definition in operation.variable_definitions or ()
        if definition.default_value is not None and definition.variable.name.value not in variables
    }
    given = {**defaults, **variables} if defaults else variables
    walk = _Walk(schema, fragments, given, bounds, max_first)
    cost, depth = walk.selection_set(operation.selection_set, root, 1, frozenset())
    return Price(cost, depth, walk.introspection_depth)


class _Walk:
    def __init__(
        self,
        schema: GraphQLSchema,
        fragments: Mapping[str, FragmentDefinitionNode],
        variables: Mapping[str, Any],
        bounds: SizeBounds,
        max_first: int,
    ) -> None:
        self.schema = schema
        self.fragments = fragments
        self.variables = variables
        self.bounds = bounds
        self.max_first = max_first
        self.introspection_depth = 0
        self.memo: dict[tuple[str, int], tuple[int, int]] = {}

    def selection_set(
        self,
        selections: SelectionSetNode | None,
        parent: GraphQLNamedType,
        page: int,
        spreading: frozenset[str],
    ) -> tuple[int, int]:
        """(cost, depth) of one occurrence of `parent` with this selection; `page` is
        the page size of the enclosing connection."""
        if selections is None or not isinstance(parent, GraphQLObjectType):
            return 0, 0
        cost, depth = 0, 0
        for selection in selections.selections:
            if isinstance(selection, FieldNode):
                field_cost, field_depth = self.field(selection, parent, page, spreading)
                cost, depth = cost + field_cost, max(depth, field_depth)
            elif isinstance(selection, InlineFragmentNode):
                condition = selection.type_condition
                inner = self.schema.get_type(condition.name.value) if condition else parent
                if inner is not None:
                    sub = self.selection_set(selection.selection_set, inner, page, spreading)
                    cost, depth = cost + sub[0], max(depth, sub[1])
            elif isinstance(selection, FragmentSpreadNode):
                sub = self.spread(selection.name.value, page, spreading)
                cost, depth = cost + sub[0], max(depth, sub[1])
        return cost, depth

    def spread(self, name: str, page: int, spreading: frozenset[str]) -> tuple[int, int]:
        fragment = self.fragments.get(name)
        if fragment is None or name in spreading:
            return 0, 0  # unknown or cyclic: validation reports it
        key = (name, page)
        known = self.memo.get(key)
        if known is None:
            inner = self.schema.get_type(fragment.type_condition.name.value)
            if inner is None:
                return 0, 0
            known = self.selection_set(fragment.selection_set, inner, page, spreading | {name})
            self.memo[key] = known
        return known

    def field(
        self,
        node: FieldNode,
        parent: GraphQLObjectType,
        page: int,
        spreading: frozenset[str],
    ) -> tuple[int, int]:
        name = node.name.value
        if name in INTROSPECTION_FIELDS:
            self.introspection_depth = max(self.introspection_depth, selection_depth(node) + 1)
            return 1, 0
        definition = parent.fields.get(name)
        if definition is None:
            return 1, 0  # __typename, or unknown: validation reports it
        returned, is_list = named_type(definition.type)
        own = 1
        inner_page = page
        if returned.name in CONNECTION_TYPES:
            inner_page = self.first(node)
            queries = QUERIES_PER_CONNECTION.get(returned.name, 1)
            own += queries * (CONNECTION_COST + self.arguments_price(node))
        elif (parent.name, name) in LOOKUPS:
            own += LOOKUP_COST
        sub_cost, sub_depth = self.selection_set(
            node.selection_set, returned, inner_page, spreading
        )
        items = 1
        if is_list:
            bound = LIST_BOUNDS.get((parent.name, name))
            items = bound(self.bounds, page) if bound is not None else self.max_first
            items = min(items, self.first(node, default=items))
        return own + items * (1 + sub_cost), sub_depth + 1

    def first(self, node: FieldNode, default: int = DEFAULT_FIRST) -> int:
        """The `first` argument, capped; `default` when not given (a variable without a
        value included: the argument's default then holds)."""
        for argument in node.arguments or ():
            if argument.name.value == "first":
                value = argument_value(argument.value, self.variables)
                if value is None:
                    return default
                if isinstance(value, int) and not isinstance(value, bool):
                    return max(0, min(value, self.max_first))
                return self.max_first
        return default

    def arguments_price(self, node: FieldNode) -> int:
        total = 0
        for argument in node.arguments or ():
            name = argument.name.value
            value = argument_value(argument.value, self.variables)
            if name in FILTER_ARGUMENTS:
                total += _filter_price(value)
            elif name in ("search", "query") and isinstance(value, str):
                total += CONDITION_COST * max(1, len(value.split()))
        return total


def _filter_price(value: Any) -> int:
    """Each condition of a filter (each field of each nested object, each list entry)
    costs `CONDITION_COST`; each value of an `in` list or `variants`, `IN_VALUE_COST`."""
    total = 0
    stack: list[Any] = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            for key, inner in item.items():
                if key in IN_LISTS and isinstance(inner, list):
                    total += CONDITION_COST + IN_VALUE_COST * len(inner)
                else:
                    total += CONDITION_COST
                    stack.append(inner)
        elif isinstance(item, list):
            stack.extend(item)
    return total


class CostLimit(SchemaExtension):
    """Refuses, after parsing and before validation, a document of several operations
    without `operationName`, and an operation over its price or depth limits."""

    def __init__(self, max_cost: int = DEFAULT_MAX_COST) -> None:
        super().__init__()
        self.max_cost = max_cost

    def on_parse(self) -> Iterator[None]:
        yield
        context = self.execution_context
        document = context.graphql_document
        if document is None:
            return
        operations = list(operations_of(document))
        # strawberry would run the first of several operations; the spec says refuse.
        name: str | None = getattr(context, "_provided_operation_name", None)
        if name is None and len(operations) > 1:
            # Raised out of strawberry as it is: the server answers a request error.
            raise CannotGetOperationTypeError(None)
        chosen = [o for o in operations if name is None or (o.name and o.name.value == name)]
        request = context.context
        if not chosen or not isinstance(request, Context):
            return  # no such operation: strawberry says so
        fragments = {
            d.name.value: d for d in document.definitions if isinstance(d, FragmentDefinitionNode)
        }
        measured = price(
            context.schema._schema,
            chosen[0],
            fragments,
            context.variables or {},
            size_bounds(request.store),
            request.max_first,
        )
        refusal = measured.refusal(self.max_cost)
        if refusal is not None:
            raise GraphQLError(
                refusal,
                chosen[0],
                extensions={"code": QUERY_TOO_COMPLEX, "cost": measured.cost},
            )
