"""A field's coerced arguments, from a template of its literal where variables fill it.

graphql-core coerces a field's arguments by walking the literal against its input types
on every request: for `specs(filter: { package: { eq: $p } })` that is every field of
`SpecFilter` and `StringFilter` looked at, a third of a small page's time. Yet, whatever
the variables' values, the result is the same but for the variables' own places: where
a variable is given (and not null) graphql-core puts its coerced value as it is. So each
field node is coerced once with a marker for each variable, and a request's arguments
are that template with its variables' values put in place of the markers. Where a
variable is missing or null, graphql-core decides (a default, an omission, an error), so
it coerces those requests itself, as before.

Only operation variables are looked for: documents are parsed without graphql-core's
experimental fragment arguments, so a fragment's field has no variables of its own.
"""

from __future__ import annotations

from threading import Lock
from typing import Any, TypeAlias

from graphql import (
    FieldNode,
    GraphQLError,
    GraphQLField,
    ListValueNode,
    ObjectValueNode,
    ValueNode,
    VariableNode,
)
from graphql.execution.values import VariableValues, get_argument_values

__all__ = ["argument_values"]

MAX_TEMPLATES = 512
"""Templates kept, one per field node with arguments of the plans cached beside them
(documents and shapes, 256 of each: `direct`); past this, all are dropped and made again."""


class _Marker:
    """Where variable `name` goes in a template."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name


Shape: TypeAlias = "str | dict[Any, Shape]"
"""Where a template's markers are: a variable's name for a marker, else, for a dict or a
list, the shape of each entry (by key or index) that holds markers."""


class _Template:
    def __init__(self, values: dict[str, Any], names: frozenset[str], shape: Shape) -> None:
        self.values = values
        self.names = names
        self.shape = shape

    def fill(self, coerced: dict[str, Any]) -> dict[str, Any] | None:
        """The arguments for these variables; None if one is missing or null."""
        for name in self.names:
            if coerced.get(name) is None:
                return None
        filled: dict[str, Any] = _filled(self.values, self.shape, coerced)
        return filled


_TEMPLATES: dict[tuple[int, int], tuple[GraphQLField, FieldNode, _Template | None]] = {}
_LOCK = Lock()


def argument_values(
    field: GraphQLField, node: FieldNode, variables: VariableValues | None
) -> dict[str, Any]:
    """`get_argument_values(field, node, variables)`, from the node's template when the
    variables it uses are all given and not null."""
    if variables is None:
        return get_argument_values(field, node, variables)
    key = (id(field), id(node))
    known = _TEMPLATES.get(key)
    if known is None or known[0] is not field or known[1] is not node:
        known = (field, node, _template(field, node))
        with _LOCK:  # the field and node are kept with it: their ids stay theirs
            if len(_TEMPLATES) >= MAX_TEMPLATES:
                _TEMPLATES.clear()
            _TEMPLATES[key] = known
    template = known[2]
    filled = None if template is None else template.fill(variables.coerced)
    return get_argument_values(field, node, variables) if filled is None else filled


def _template(field: GraphQLField, node: FieldNode) -> _Template | None:
    """The node's arguments coerced with markers for variables; None where the markers do
    not all come out as they went in (a custom scalar's literal, an invalid literal)."""
    places: list[str] = []
    for argument in node.arguments or ():
        _variables(argument.value, places)
    names = frozenset(places)
    markers = {name: _Marker(name) for name in names}
    try:
        values = get_argument_values(field, node, VariableValues({}, markers))
    except GraphQLError:
        return None
    found: list[str] = []
    shape = _shape(values, found)
    if not isinstance(shape, dict) or sorted(found) != sorted(places):
        return None
    return _Template(values, names, shape)


def _variables(value: ValueNode, found: list[str]) -> None:
    """The names of the variables in a literal, once per place."""
    if isinstance(value, VariableNode):
        found.append(value.name.value)
    elif isinstance(value, ListValueNode):
        for item in value.values:
            _variables(item, found)
    elif isinstance(value, ObjectValueNode):
        for entry in value.fields:
            _variables(entry.value, found)


def _shape(value: Any, found: list[str]) -> Shape | None:
    """Where the markers in `value` are (None: nowhere), each one's name noted in `found`."""
    if isinstance(value, _Marker):
        found.append(value.name)
        return value.name
    entries: Any = ()
    if isinstance(value, dict):
        entries = value.items()
    elif isinstance(value, list):
        entries = enumerate(value)
    shape = {}
    for key, item in entries:
        inner = _shape(item, found)
        if inner is not None:
            shape[key] = inner
    return shape or None


def _filled(value: Any, shape: Shape, coerced: dict[str, Any]) -> Any:
    """`value` with its markers replaced by their variables' values: the dicts and lists
    on the way to a marker are copies, the rest is the template's own (as graphql-core
    gives every request the same default values, which resolvers only read)."""
    if isinstance(shape, str):
        return coerced[shape]
    copy = dict(value) if isinstance(value, dict) else list(value)
    for key, inner in shape.items():
        copy[key] = _filled(value[key], inner, coerced)
    return copy
