"""The fields an operation selects on an object type, fragments and aliases flattened.

What compiled plans (`compiled`) and the inline estimate (`inline`) walk: both cover
selections without directives, on object types only; anything else raises
`UncoveredError`, and the operation then takes graphql-core's path.
"""

from __future__ import annotations

from graphql import (
    FieldNode,
    FragmentDefinitionNode,
    FragmentSpreadNode,
    GraphQLObjectType,
    InlineFragmentNode,
    SelectionSetNode,
)

__all__ = ["UncoveredError", "collect_fields"]


class UncoveredError(Exception):
    """The compiler does not cover this operation."""


def collect_fields(
    object_type: GraphQLObjectType,
    selection_sets: list[SelectionSetNode],
    fragments: dict[str, FragmentDefinitionNode],
) -> dict[str, list[FieldNode]]:
    """The fields selected on `object_type`, by response name, in selection order."""
    grouped: dict[str, list[FieldNode]] = {}
    visited: set[str] = set()

    def applies(condition: str | None) -> bool:
        # Validated, a condition on another type names an interface or a union.
        if condition is not None and condition != object_type.name:
            raise UncoveredError
        return True

    def walk(selection_set: SelectionSetNode) -> None:
        for selection in selection_set.selections:
            if selection.directives:
                raise UncoveredError
            if isinstance(selection, FieldNode):
                key = (selection.alias or selection.name).value
                grouped.setdefault(key, []).append(selection)
            elif isinstance(selection, InlineFragmentNode):
                condition = selection.type_condition
                if applies(None if condition is None else condition.name.value):
                    walk(selection.selection_set)
            elif isinstance(selection, FragmentSpreadNode):
                name = selection.name.value
                if name in visited:
                    continue
                visited.add(name)
                fragment = fragments.get(name)
                if fragment is None or fragment.variable_definitions:
                    raise UncoveredError
                if applies(fragment.type_condition.name.value):
                    walk(fragment.selection_set)
            else:
                raise UncoveredError

    for selection_set in selection_sets:
        walk(selection_set)
    return grouped
