"""An operation's variables coerced without graphql-core's walk, where it would keep them
as given.

graphql-core coerces a request's variables by looking each declared type up again from
its AST and walking the value against it: 6 µs of a 39 µs hash lookup sent with its
hash as a variable (a lookup with the hash written in its text takes 23 µs). Yet a value
already of its built-in scalar's Python type (a `str` for a `String`, an `int` of 32 bits
for an `Int`) comes out of that walk unchanged. So each operation's variables are looked
at once, when it is prepared; a request whose every variable is given, of that type (or
null where the type allows it), has them as given, and any other request (a variable
missing, a value of another type or of an input object, an `Int` sent as `1.0`) is
coerced by graphql-core, which then answers or refuses it exactly as before.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

from graphql import (
    GRAPHQL_MAX_INT,
    GRAPHQL_MIN_INT,
    GraphQLBoolean,
    GraphQLInt,
    GraphQLNonNull,
    GraphQLScalarType,
    GraphQLSchema,
    GraphQLString,
    OperationDefinitionNode,
    Undefined,
)
from graphql.execution.get_variable_signature import (
    GraphQLVariableSignature,
    get_variable_signature,
)
from graphql.execution.values import VariableValues, VariableValueSource

__all__ = ["VariablesAsGiven"]


def _is_int32(value: Any) -> bool:
    return type(value) is int and GRAPHQL_MIN_INT <= value <= GRAPHQL_MAX_INT


AS_GIVEN: dict[GraphQLScalarType, Callable[[Any], bool]] = {
    GraphQLString: lambda value: type(value) is str,
    GraphQLBoolean: lambda value: type(value) is bool,
    GraphQLInt: _is_int32,
}
"""The scalars whose coercion returns a value of this test unchanged (graphql-core's
`coerce_string`, `coerce_boolean`, `coerce_int`; the schema has no `ID`)."""


class _Variable(NamedTuple):
    name: str
    signature: GraphQLVariableSignature
    required: bool
    as_given: Callable[[Any], bool]


class VariablesAsGiven:
    """The variables of one operation, each of a scalar type of `AS_GIVEN`."""

    __slots__ = ("_variables",)

    def __init__(self, variables: list[_Variable]) -> None:
        self._variables = variables

    @classmethod
    def of(
        cls, schema: GraphQLSchema, operation: OperationDefinitionNode
    ) -> VariablesAsGiven | None:
        """None where a variable is of another type (or not an input type at all)."""
        variables = []
        for definition in operation.variable_definitions or ():
            signature = get_variable_signature(schema, definition)
            if not isinstance(signature, GraphQLVariableSignature):
                return None
            declared = signature.type
            required = isinstance(declared, GraphQLNonNull)
            named = declared.of_type if isinstance(declared, GraphQLNonNull) else declared
            as_given = AS_GIVEN.get(named) if isinstance(named, GraphQLScalarType) else None
            if as_given is None:
                return None
            variables.append(_Variable(signature.name, signature, required, as_given))
        return cls(variables)

    def __call__(self, inputs: dict[str, Any]) -> VariableValues | None:
        """The coerced variables, or None where graphql-core must coerce them."""
        sources: dict[str, VariableValueSource] = {}
        coerced: dict[str, Any] = {}
        for name, signature, required, as_given in self._variables:
            value = inputs.get(name, Undefined)
            if value is None:
                if required:
                    return None
            elif value is Undefined or not as_given(value):
                return None
            sources[name] = VariableValueSource(signature, value)
            coerced[name] = value
        return VariableValues(sources, coerced)
