"""Which compiled operations are cheap enough for the event loop, known before they run.

An operation's price (`limits.price`) bounds what it can return, not the work of its
filters: a 20-spec page of a selective filter and one of a filter matching half the
tag cost the same. The rows its connections read bound that work, and the index says
how many before running (`cachegql.index.spec_reads`: the posting list of the most
selective condition). An operation runs on the event loop when both are small:
`INLINE_MAX_PRICE` (what it writes) and `INLINE_MAX_READS` (what it reads), measured
with `bench/inline_price.py` at 1M specs so that the slowest operation within both
takes a few milliseconds.

Only operations whose every connection is a root `specs` or `packages` are estimated;
anything else (a nested connection such as `package { specs }`, `nearest`, `tagDiff`)
has no estimate and runs in a worker thread, unless the runner's own rule (a short
document without connections) runs it inline.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from graphql import (
    FieldNode,
    FragmentDefinitionNode,
    GraphQLField,
    GraphQLObjectType,
    GraphQLSchema,
    OperationDefinitionNode,
    TypeInfo,
    TypeInfoVisitor,
    Visitor,
    get_named_type,
    visit,
)
from graphql.execution.values import VariableValues
from strawberry.schema.schema_converter import GraphQLCoreConverter

from cachegql.index import package_reads, spec_reads
from cachegql.schema.arguments import convert_field_arguments, has_variables
from cachegql.schema.compiled import Arguments
from cachegql.schema.context import Context
from cachegql.schema.inputs import package_criteria, spec_criteria
from cachegql.schema.limits import CONNECTION_TYPES
from cachegql.schema.selections import collect_fields

__all__ = [
    "INLINE_MAX_CHARS",
    "INLINE_MAX_PRICE",
    "INLINE_MAX_READS",
    "INLINE_MAX_VALUES",
    "Reads",
    "runs_inline",
    "small_request",
]

INLINE_MAX_READS = 20_000
"""Rows an operation run on the event loop may read, summed over its connections."""
INLINE_MAX_PRICE = 12_000
"""The price an operation run on the event loop may have: `stacks` with its buckets."""

INLINE_MAX_CHARS = 2_000
INLINE_MAX_VALUES = 100
"""Only a request of at most this many characters of query and values in its variables is
priced and estimated on the event loop: pricing a document and coercing its variables take
time in their size (a 30,000-entry `or` as a variable, tens of ms), the rest a thread's."""

_Estimate = Callable[[Context, dict[str, Any], int], int]
ESTIMATED: dict[str, _Estimate] = {
    "specs": lambda context, a, enough: spec_reads(
        context.store.snapshot(a.get("tag")),
        context.converted(a.get("filter"), spec_criteria),
        query=a.get("query"),
        search=a.get("search"),
        enough=enough,
    ),
    "packages": lambda context, a, enough: package_reads(
        context.store.snapshot(a.get("tag")),
        context.converted(a.get("filter"), package_criteria),
        search=a.get("search"),
        enough=enough,
    ),
}
"""The root connections estimated, with the rows each reads given its arguments (a
search counted only until it is known to read too many for the event loop)."""
CHEAP_ROOTS = frozenset({"spec", "package", "stack", "stacks", "tags", "__typename"})
"""Root fields that read precomputed data or look one key up: no rows to estimate."""


class Reads:
    """The rows one operation reads, for a request's variables; None when unknown."""

    def __init__(
        self,
        schema: GraphQLSchema,
        query_type: GraphQLObjectType,
        operation: OperationDefinitionNode,
        fragments: dict[str, FragmentDefinitionNode],
        converter: GraphQLCoreConverter,
    ) -> None:
        self.converter = converter
        # Each root: its name, field and node, and its arguments when they are fixed.
        self.roots: list[tuple[str, GraphQLField, FieldNode, dict[str, Any] | None]] | None
        self.roots = []
        estimated: set[int] = set()
        grouped = collect_fields(query_type, [operation.selection_set], fragments)
        for nodes in grouped.values():
            name = nodes[0].name.value
            if name in CHEAP_ROOTS:
                continue
            field = query_type.fields.get(name)
            if name not in ESTIMATED or field is None:
                self.roots = None
                return
            fixed = None
            if not has_variables(nodes[0]):
                try:
                    fixed = convert_field_arguments(field, nodes[0], None, converter)
                except Exception:
                    self.roots = None  # the plan does not cover it either
                    return
            # Each node of a merged field runs once, with the first node's arguments.
            self.roots.append((name, field, nodes[0], fixed))
            estimated.update(id(node) for node in nodes)
        definitions = [operation, *fragments.values()]
        if any(id(node) not in estimated for node in _connections(schema, definitions)):
            self.roots = None

    def __call__(
        self, variables: VariableValues, context: Context, arguments: Arguments
    ) -> int | None:
        """The rows read, or more than `INLINE_MAX_READS` once known to be (the roots
        after are not estimated); the arguments of each root estimated (converted on the
        way, or fixed) are kept in `arguments` for the plan (`compiled.Plan.run`), which
        then converts its filter once (`Context.converted`)."""
        if self.roots is None:
            return None
        total = 0
        for name, field, node, fixed in self.roots:
            try:
                converted = fixed
                if converted is None:
                    converted = convert_field_arguments(field, node, variables, self.converter)
                arguments[id(node)] = converted
                total += ESTIMATED[name](context, converted, INLINE_MAX_READS - total)
            except Exception:
                return None  # an unknown tag, a malformed variant: the plan reports it
            if total > INLINE_MAX_READS:
                return total
        return total


def runs_inline(
    cost: int, reads: Reads, variables: VariableValues, context: Context, arguments: Arguments
) -> bool:
    """Whether an operation of this price and these reads runs on the event loop."""
    if cost > INLINE_MAX_PRICE:
        return False
    rows = reads(variables, context, arguments)
    return rows is not None and rows <= INLINE_MAX_READS


def small_request(query: str, variables: dict[str, Any] | None) -> bool:
    """Whether the query and its variables are small enough to price on the event loop:
    the variables' values are counted until there are too many, never all of them."""
    if len(query) > INLINE_MAX_CHARS:
        return False
    if not variables:
        return True
    left = INLINE_MAX_VALUES
    pending: list[Any] = [variables]
    while pending:
        value = pending.pop()
        if isinstance(value, dict):
            pending.extend(value.values())
        elif isinstance(value, list):
            pending.extend(value)
        elif isinstance(value, str) and len(value) > INLINE_MAX_CHARS:
            return False
        left -= 1
        if left < 0 or len(pending) > INLINE_MAX_VALUES:
            return False
    return True


def _connections(schema: GraphQLSchema, definitions: list[Any]) -> list[FieldNode]:
    """Every field of these definitions, at any depth, that returns a connection (by its
    type: `SpecFacets.packages` is a list of buckets, not a connection)."""
    found: list[FieldNode] = []
    info = TypeInfo(schema)

    class Finder(Visitor):
        def enter_field(self, node: FieldNode, *_: Any) -> None:
            field = info.get_field_def()
            if field is not None and get_named_type(field.type).name in CONNECTION_TYPES:
                found.append(node)

    for definition in definitions:
        visit(definition, TypeInfoVisitor(info, Finder()))
    return found
