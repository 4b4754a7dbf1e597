"""Reading a parsed GraphQL document without running it: argument values (a variable's
as sent), the named type under a field's wrappers, a selection's depth, its operations."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from graphql import (
    BooleanValueNode,
    DocumentNode,
    EnumValueNode,
    FieldNode,
    FloatValueNode,
    GraphQLList,
    GraphQLNamedType,
    GraphQLNonNull,
    GraphQLOutputType,
    InlineFragmentNode,
    IntValueNode,
    ListValueNode,
    NullValueNode,
    ObjectValueNode,
    OperationDefinitionNode,
    SelectionSetNode,
    StringValueNode,
    ValueNode,
    VariableNode,
)

__all__ = ["argument_value", "named_type", "operations_of", "selection_depth"]


def argument_value(node: ValueNode, variables: Mapping[str, Any]) -> Any:
    """A literal's value, or a variable's as sent (unchecked: validation checks it)."""
    if isinstance(node, VariableNode):
        return variables.get(node.name.value)
    if isinstance(node, IntValueNode):
        try:
            return int(node.value)
        except ValueError:
            return None
    if isinstance(node, (StringValueNode, EnumValueNode)):
        return node.value
    if isinstance(node, (FloatValueNode, BooleanValueNode, NullValueNode)):
        return None
    if isinstance(node, ListValueNode):
        return [argument_value(item, variables) for item in node.values]
    if isinstance(node, ObjectValueNode):
        return {f.name.value: argument_value(f.value, variables) for f in node.fields}
    return None


def named_type(kind: GraphQLOutputType) -> tuple[GraphQLNamedType, bool]:
    """The named type under the non-null and list wrappers, and whether a list was among them."""
    is_list = False
    while isinstance(kind, (GraphQLNonNull, GraphQLList)):
        is_list = is_list or isinstance(kind, GraphQLList)
        kind = kind.of_type
    return kind, is_list


def selection_depth(node: FieldNode) -> int:
    """Depth of a selection, inline fragments included (introspection only: spreads of
    named fragments there are bounded by graphql-core's rule)."""
    deepest = 0
    stack: list[tuple[SelectionSetNode | None, int]] = [(node.selection_set, 0)]
    while stack:
        selections, level = stack.pop()
        if selections is None:
            deepest = max(deepest, level)
            continue
        for selection in selections.selections:
            if isinstance(selection, FieldNode):
                stack.append((selection.selection_set, level + 1))
            elif isinstance(selection, InlineFragmentNode):
                stack.append((selection.selection_set, level))
    return deepest


def operations_of(document: DocumentNode) -> Iterator[OperationDefinitionNode]:
    """The operations of a document, in order (its fragments left out)."""
    for definition in document.definitions:
        if isinstance(definition, OperationDefinitionNode):
            yield definition
