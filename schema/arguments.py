"""A field's arguments as its resolver function receives them, and whether a field's
arguments hold variables (then they are converted per request, not once)."""

from __future__ import annotations

from typing import Any

from graphql import FieldNode, GraphQLField, ListValueNode, ObjectValueNode, ValueNode, VariableNode
from graphql.execution.values import VariableValues, get_argument_values
from strawberry.schema.schema_converter import GraphQLCoreConverter
from strawberry.types.arguments import convert_arguments

__all__ = ["convert_field_arguments", "has_variables"]


def convert_field_arguments(
    field: GraphQLField,
    node: FieldNode,
    variables: VariableValues | None,
    converter: GraphQLCoreConverter,
) -> dict[str, Any]:
    """The arguments of a field's resolver function, as strawberry converts them."""
    definition = field.extensions[GraphQLCoreConverter.DEFINITION_BACKREF]
    return convert_arguments(
        get_argument_values(field, node, variables),
        definition.arguments,
        scalar_registry=converter.scalar_registry,
        config=converter.config,
    )


def has_variables(node: FieldNode) -> bool:
    return any(_uses_variables(argument.value) for argument in node.arguments or ())


def _uses_variables(value: ValueNode) -> bool:
    if isinstance(value, VariableNode):
        return True
    if isinstance(value, ListValueNode):
        return any(_uses_variables(v) for v in value.values)
    if isinstance(value, ObjectValueNode):
        return any(_uses_variables(f.value) for f in value.fields)
    return False
