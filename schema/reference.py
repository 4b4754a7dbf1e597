"""The GraphQL reference: the SDL rendered as one Markdown page.

A pure function of the SDL text (`schema/schema.graphql`, or `export_sdl()`), so the
documentation site generates its reference at build time instead of keeping a copy
that drifts (docs/hooks/reference.py calls it). Every type, field, argument, input
field and enum value gets an HTML id that is its schema coordinate (`Spec`,
`Query.specs`, `Query.specs(first:)`, `Order.NAME`): links point at them, and the
documentation test checks the built page for every coordinate of the live schema.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

from graphql import (
    GraphQLArgument,
    GraphQLEnumType,
    GraphQLField,
    GraphQLInputField,
    GraphQLInputObjectType,
    GraphQLInterfaceType,
    GraphQLList,
    GraphQLNamedType,
    GraphQLNonNull,
    GraphQLObjectType,
    GraphQLScalarType,
    GraphQLSchema,
    GraphQLType,
    GraphQLUnionType,
    build_schema,
    print_ast,
)

__all__ = ["coordinates", "render_reference"]

# The page's sections, in reading order: what a client asks first, then what it gets
# back, then what it sends, then the leaves.
SECTIONS: tuple[tuple[str, type[GraphQLNamedType]], ...] = (
    ("Objects", GraphQLObjectType),
    ("Interfaces", GraphQLInterfaceType),
    ("Unions", GraphQLUnionType),
    ("Input objects", GraphQLInputObjectType),
    ("Enums", GraphQLEnumType),
    ("Scalars", GraphQLScalarType),
)


def render_reference(sdl: str) -> str:
    """The Markdown of the reference page of the schema `sdl`."""
    schema = build_schema(sdl)
    roots = list(_root_types(schema))
    root_names = {t.name for t in roots}
    lines = [
        "# GraphQL reference",
        "",
        "Generated from `schema/schema.graphql` when the site is built: every type, field,",
        "argument and enum value of the API, with its description. The SDL itself is served at",
        "`/graphql/schema.graphql`.",
        "",
    ]
    for root in roots:
        lines += ["## Operations", ""] if root is roots[0] else []
        lines += _type_block(root)
    for title, kind in SECTIONS:
        named = [
            t
            for name, t in sorted(_used_types(schema))
            if isinstance(t, kind) and name not in root_names
        ]
        if named:
            lines += [f"## {title}", ""]
            for named_type in named:
                lines += _type_block(named_type)
    # Each block ends with a blank line of its own; nested ones leave runs of them.
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).rstrip() + "\n"


def coordinates(sdl: str) -> list[str]:
    """Every schema coordinate of `sdl` the reference must show: types, fields,
    arguments, input fields and enum values (introspection's own types aside)."""
    schema = build_schema(sdl)
    found: list[str] = []
    for name, named in sorted(_used_types(schema)):
        found.append(name)
        if isinstance(named, GraphQLObjectType | GraphQLInterfaceType):
            for field_name, field in named.fields.items():
                found.append(f"{name}.{field_name}")
                found += [f"{name}.{field_name}({arg}:)" for arg in field.args]
        elif isinstance(named, GraphQLInputObjectType):
            found += [f"{name}.{field_name}" for field_name in named.fields]
        elif isinstance(named, GraphQLEnumType):
            found += [f"{name}.{value}" for value in named.values]
    return found


def _root_types(schema: GraphQLSchema) -> Iterator[GraphQLObjectType]:
    for root in (schema.query_type, schema.mutation_type, schema.subscription_type):
        if root is not None:
            yield root


def _used_types(schema: GraphQLSchema) -> Iterable[tuple[str, GraphQLNamedType]]:
    # The type map also holds introspection's own types (`__Schema`...), which are
    # graphql's, not the API's.
    return ((n, t) for n, t in schema.type_map.items() if not n.startswith("__"))


def _type_block(named: GraphQLNamedType) -> list[str]:
    kind = _kind(named)
    lines = [f"### {named.name} {{ #{named.name} }}", "", f"*{kind}*", ""]
    lines += _paragraphs(named.description)
    if isinstance(named, GraphQLObjectType | GraphQLInterfaceType):
        if named.interfaces:
            lines += ["Implements " + ", ".join(_link(i.name) for i in named.interfaces), ""]
        for field_name, field in named.fields.items():
            lines += _field(named.name, field_name, field)
    elif isinstance(named, GraphQLInputObjectType):
        for field_name, input_field in named.fields.items():
            lines += _input_value(f"{named.name}.{field_name}", field_name, input_field, "")
    elif isinstance(named, GraphQLUnionType):
        lines += ["One of " + ", ".join(_link(t.name) for t in named.types), ""]
    elif isinstance(named, GraphQLEnumType):
        for value_name, value in named.values.items():
            lines += [f'- <span id="{named.name}.{value_name}"></span>`{value_name}`', ""]
            lines += _indented(_paragraphs(value.description), "    ")
            lines += _indented(_deprecation(value.deprecation_reason), "    ")
        lines.append("")
    return lines


def _kind(named: GraphQLNamedType) -> str:
    for title, kind in SECTIONS:
        if isinstance(named, kind):
            return title.lower().rstrip("s")
    return "type"  # pragma: no cover - graphql has no other kind of named type


def _field(owner: str, name: str, field: GraphQLField) -> list[str]:
    coordinate = f"{owner}.{name}"
    lines = [f'- <span id="{coordinate}"></span>**`{name}`**: {_type(field.type)}', ""]
    body = _paragraphs(field.description) + _deprecation(field.deprecation_reason)
    for arg_name, arg in field.args.items():
        body += _input_value(f"{coordinate}({arg_name}:)", arg_name, arg, "argument ")
    lines += _indented(body, "    ")
    return [*lines, ""]


def _input_value(
    coordinate: str, name: str, value: GraphQLArgument | GraphQLInputField, what: str
) -> list[str]:
    # Built from SDL, a default is kept as its literal (graphql-core 3.3): printed as written.
    literal = value.ast_node.default_value if value.ast_node is not None else None
    default = f" = `{print_ast(literal)}`" if literal is not None else ""
    lines = [f'- <span id="{coordinate}"></span>{what}`{name}`: {_type(value.type)}{default}', ""]
    body = _paragraphs(value.description) + _deprecation(value.deprecation_reason)
    return [*lines, *_indented(body, "    "), ""]


def _type(wrapped: GraphQLType) -> str:
    """A type reference with its wrappers, the named type linked to its entry."""
    if isinstance(wrapped, GraphQLNonNull):
        return _type(wrapped.of_type) + "!"
    if isinstance(wrapped, GraphQLList):
        # Escaped brackets: a list of a link is not a Markdown link itself.
        return "\\[" + _type(wrapped.of_type) + "\\]"
    assert isinstance(wrapped, GraphQLNamedType)
    return _link(wrapped.name)


def _link(name: str) -> str:
    return f"[`{name}`](#{name})"


def _paragraphs(text: str | None) -> list[str]:
    """A description as Markdown paragraphs: a block's lines joined, blocks kept apart
    (SDL descriptions break lines where Markdown would read a list or a heading)."""
    if not text:
        return []
    lines: list[str] = []
    for block in text.strip().split("\n\n"):
        lines += [" ".join(line.strip() for line in block.splitlines()), ""]
    return lines


def _deprecation(reason: str | None) -> list[str]:
    return [f"**Deprecated:** {reason}", ""] if reason is not None else []


def _indented(lines: list[str], prefix: str) -> list[str]:
    return [prefix + line if line else "" for line in lines]
