"""Literal values graphql-core refuses, said with the argument they were given to.

graphql-core checks each literal argument value against its type as it validates a
document (`ValuesOfCorrectTypeRule`) and says what is wrong with the value alone:
"String cannot represent a non string value: 5", and a location. A client that shows
the message without the query (a log line, a toast, a test's assertion) cannot tell
which of its values it was. `NamedLiteralValuesRule` runs the same check and names the
argument, the field or directive it was given to, and where within an input object the
value is: "Argument 'filter' of 'specs', at or[1].os.eq: String cannot represent a non
string value: 3". A variable's default value is said as graphql-core says it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from graphql import (
    SKIP,
    ArgumentNode,
    DirectiveNode,
    FieldNode,
    GraphQLError,
    GraphQLInputType,
    ValidationContext,
    ValueNode,
    ValuesOfCorrectTypeRule,
    VisitorAction,
    validate_input_literal,
)
from strawberry.extensions import SchemaExtension

__all__ = ["NamedLiteralErrors", "NamedLiteralValuesRule"]


class NamedLiteralValuesRule(ValuesOfCorrectTypeRule):
    """graphql-core's check of literal values, its refusals naming where the value was."""

    def __init__(self, context: ValidationContext) -> None:
        super().__init__(context)
        self.owners: list[str] = []
        """The fields and directives entered, innermost last: `spec`, `@include`."""
        self.argument: str | None = None

    def enter_field(self, node: FieldNode, *_args: Any) -> None:
        self.owners.append(node.name.value)

    def leave_field(self, node: FieldNode, *_args: Any) -> None:
        self.owners.pop()

    def enter_directive(self, node: DirectiveNode, *_args: Any) -> None:
        self.owners.append(f"@{node.name.value}")

    def leave_directive(self, node: DirectiveNode, *_args: Any) -> None:
        self.owners.pop()

    def enter_argument(self, node: ArgumentNode, *_args: Any) -> None:
        self.argument = node.name.value

    def leave_argument(self, node: ArgumentNode, *_args: Any) -> None:
        self.argument = None

    def is_valid_value_node(
        self, node: ValueNode, input_type: GraphQLInputType | None
    ) -> VisitorAction:
        if input_type:
            validate_input_literal(
                node, input_type, self._report, None, None, self.context.hide_suggestions
            )
        return SKIP  # its values within were checked with it

    def _report(self, error: GraphQLError, path: list[str | int]) -> None:
        if self.argument is not None and self.owners:
            within = "".join(f"[{s}]" if isinstance(s, int) else f".{s}" for s in path)
            at = f", at {within.removeprefix('.')}" if within else ""
            owner = self.owners[-1]
            error.message = f"Argument '{self.argument}' of '{owner}'{at}: {error.message}"
        self.report_error(error)


class NamedLiteralErrors(SchemaExtension):
    """Validates documents with `NamedLiteralValuesRule` in place of graphql-core's rule."""

    def on_operation(self) -> Iterator[None]:
        context = self.execution_context
        context.validation_rules = tuple(
            NamedLiteralValuesRule if rule is ValuesOfCorrectTypeRule else rule
            for rule in context.validation_rules
        )
        yield
