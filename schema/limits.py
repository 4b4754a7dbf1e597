"""Refuse queries that would cost too much: too deep, or too many objects when nested."""

from __future__ import annotations

from typing import Any

from graphql import (
    FieldNode,
    FragmentSpreadNode,
    GraphQLError,
    InlineFragmentNode,
    IntValueNode,
    OperationDefinitionNode,
    SelectionSetNode,
    ValidationContext,
    ValidationRule,
    VariableNode,
)

from schema.errors import QUERY_TOO_COMPLEX
from schema.pagination import DEFAULT_MAX_FIRST

MAX_DEPTH = 12
MAX_OBJECTS = 20_000
CONNECTION_FIELDS = frozenset({"specs", "packages"})
DEFAULT_FIRST = 20


def complexity_rule(
    max_depth: int = MAX_DEPTH, max_objects: int = MAX_OBJECTS, max_first: int = DEFAULT_MAX_FIRST
) -> type[ValidationRule]:
    """A validation rule bounding depth and the number of objects a query can return."""

    class ComplexityRule(ValidationRule):
        def enter_operation_definition(self, node: OperationDefinitionNode, *_: Any) -> None:
            variables = {}
            for definition in node.variable_definitions or ():
                name = definition.variable.name.value
                variables[name] = definition.default_value
            depth, objects = _measure(self.context, node.selection_set, 1, set(), max_first)
            if depth > max_depth:
                self.report_error(
                    _error(f"the query is {depth} levels deep; the limit is {max_depth}", node)
                )
            elif objects > max_objects:
                self.report_error(
                    _error(
                        f"the query could return about {objects} objects; "
                        f"the limit is {max_objects}: "
                        "ask for fewer items per page ('first') in nested connections",
                        node,
                    )
                )

    return ComplexityRule


def _error(message: str, node: OperationDefinitionNode) -> GraphQLError:
    return GraphQLError(message, node, extensions={"code": QUERY_TOO_COMPLEX})


def _measure(
    context: ValidationContext,
    selection_set: SelectionSetNode | None,
    multiplier: int,
    seen_fragments: set[str],
    max_first: int,
) -> tuple[int, int]:
    """(depth, objects) of a selection set reached `multiplier` times."""
    if selection_set is None:
        return 0, 0
    depth, objects = 0, 0
    for selection in selection_set.selections:
        if isinstance(selection, FieldNode):
            inner = multiplier
            if selection.name.value in CONNECTION_FIELDS:
                inner *= _first(selection, context, max_first)
            sub_depth, sub_objects = _measure(
                context, selection.selection_set, inner, seen_fragments, max_first
            )
            depth = max(depth, sub_depth + 1)
            objects += multiplier + sub_objects
        elif isinstance(selection, InlineFragmentNode):
            sub_depth, sub_objects = _measure(
                context, selection.selection_set, multiplier, seen_fragments, max_first
            )
            depth, objects = max(depth, sub_depth), objects + sub_objects
        elif isinstance(selection, FragmentSpreadNode):
            name = selection.name.value
            fragment = context.get_fragment(name)
            if fragment is None or name in seen_fragments:
                continue  # unknown or cyclic fragments are reported by the standard rules
            sub_depth, sub_objects = _measure(
                context, fragment.selection_set, multiplier, seen_fragments | {name}, max_first
            )
            depth, objects = max(depth, sub_depth), objects + sub_objects
    return depth, objects


def _first(field: FieldNode, context: ValidationContext, max_first: int) -> int:
    for argument in field.arguments or ():
        if argument.name.value != "first":
            continue
        if isinstance(argument.value, IntValueNode):
            return max(0, min(int(argument.value.value), max_first))
        if isinstance(argument.value, VariableNode):
            return max_first  # unknown at validation time: assume the cap
    return DEFAULT_FIRST
