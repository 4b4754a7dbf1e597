"""A field's arguments as its resolver function receives them, and whether a field's
arguments hold variables (then they are converted per request, not once).

Strawberry's `convert_arguments` finds its way through the argument's types again for
every value: 0.5 ms for a `SpecFilter` of three conditions, more than the index takes to
answer it. Here each field's conversion is planned once (`_plan`: a function per type,
doing what `convert_argument` does for it) and then only called; a type the plan does
not cover (`Maybe`, a `GlobalID`, an input with its own `from_input`) makes the field's
arguments go through strawberry's function as before. The GraphQL values it converts come
from a template per field node where variables fill it (`argument_values`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import MISSING
from threading import Lock
from typing import Any

from graphql import FieldNode, GraphQLField, ListValueNode, ObjectValueNode, ValueNode, VariableNode
from graphql.execution.values import VariableValues
from strawberry.relay.types import GlobalID
from strawberry.schema.config import StrawberryConfig
from strawberry.schema.schema_converter import GraphQLCoreConverter
from strawberry.types.arguments import (
    StrawberryArgument,
    _is_leaf_type,
    _is_optional_leaf_type,
    convert_arguments,
)
from strawberry.types.base import (
    StrawberryList,
    StrawberryMaybe,
    StrawberryOptional,
    has_object_definition,
)
from strawberry.types.enum import has_enum_definition
from strawberry.types.lazy_type import LazyType
from strawberry.types.unset import UNSET

from cachegql.schema.argument_values import argument_values

__all__ = ["convert_field_arguments", "has_variables"]


def convert_field_arguments(
    field: GraphQLField,
    node: FieldNode,
    variables: VariableValues | None,
    converter: GraphQLCoreConverter,
) -> dict[str, Any]:
    """The arguments of a field's resolver function, as strawberry converts them."""
    definition = field.extensions[GraphQLCoreConverter.DEFINITION_BACKREF]
    values = argument_values(field, node, variables)
    planned = _planned(definition.arguments, converter)
    if planned is None:
        return convert_arguments(
            values,
            definition.arguments,
            scalar_registry=converter.scalar_registry,
            config=converter.config,
        )
    return {python: convert(values[name]) for name, python, convert in planned if name in values}


Convert = Callable[[Any], Any]
Registry = Mapping[object, Any]
_Planned = list[tuple[str, str, Convert]] | None
_PLANS: dict[int, tuple[list[StrawberryArgument], _Planned]] = {}
_LOCK = Lock()


class _UnplannedError(Exception):
    """A type whose conversion is left to strawberry."""


def _planned(arguments: list[StrawberryArgument], converter: GraphQLCoreConverter) -> _Planned:
    """Each argument's GraphQL name, Python name and conversion; None: strawberry's."""
    known = _PLANS.get(id(arguments))
    if known is not None and known[0] is arguments:
        return known[1]
    config, registry = converter.config, converter.scalar_registry
    try:
        classes: dict[type, Convert] = {}
        planned: _Planned = [
            (
                config.name_converter.from_argument(argument),
                str(argument.python_name),
                _plan(argument.type, registry, config, classes),
            )
            for argument in arguments
        ]
    except _UnplannedError:
        planned = None
    with _LOCK:  # the arguments are kept with their plan: their id stays theirs
        _PLANS[id(arguments)] = (arguments, planned)
    return planned


def _plan(
    type_: Any,
    registry: Mapping[object, Any],
    config: StrawberryConfig,
    classes: dict[type, Convert],
) -> Convert:
    """What `strawberry.types.arguments.convert_argument` does to a value of `type_`."""
    if isinstance(type_, StrawberryMaybe):
        raise _UnplannedError
    if isinstance(type_, StrawberryOptional):
        return _plan(type_.of_type, registry, config, classes)
    if isinstance(type_, StrawberryList):
        of_type = type_.of_type
        skip = (GlobalID,)
        if _is_leaf_type(of_type, registry, skip) or _is_optional_leaf_type(
            of_type, registry, skip
        ):
            # Copied: graphql-core gives every request the same default list.
            return lambda value: value if value is None or value is UNSET else list(value)
        item = _plan(of_type, registry, config, classes)
        return lambda value: value if value is None or value is UNSET else [item(v) for v in value]
    if _is_leaf_type(type_, registry):
        if type_ is GlobalID:
            raise _UnplannedError
        return _same
    if isinstance(type_, LazyType):
        return _plan(type_.resolve_type(), registry, config, classes)
    if has_enum_definition(type_):
        return _plan(type_.__strawberry_definition__, registry, config, classes)
    if has_object_definition(type_):
        return _input(type_, registry, config, classes)
    raise _UnplannedError


def _input(
    cls: type,
    registry: Mapping[object, Any],
    config: StrawberryConfig,
    classes: dict[type, Convert],
) -> Convert:
    """An input object: its fields given, converted, the others None unless defaulted."""
    if cls not in classes:
        definition = cls.__strawberry_definition__  # type: ignore[attr-defined]
        if definition.from_input is not None:
            raise _UnplannedError
        classes[cls] = _same  # replaced below: the fields of a filter nest the filter
        defaults: dict[str, Any] = {}
        if definition.is_input:
            defaults = {
                f.python_name: None
                for f in definition.fields
                if f.default_value is MISSING and f.default_factory is MISSING
            }
        fields = [
            (
                config.name_converter.from_field(f),
                f.python_name,
                _plan(f.resolve_type(type_definition=definition), registry, config, classes),
            )
            for f in definition.fields
        ]

        def convert(value: Any) -> Any:
            if value is None or value is UNSET:
                return value
            kwargs = dict(defaults)
            for name, python, field_convert in fields:
                if name in value:
                    kwargs[python] = field_convert(value[name])
            return cls(**kwargs)

        classes[cls] = convert
    return lambda value: classes[cls](value)


def _same(value: Any) -> Any:
    return value


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
