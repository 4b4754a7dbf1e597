"""Documents alike but for their strings, prepared once.

A client that writes its values into the query's text (curl, a test, a page building its
query) sends a new document with each hash or package name, and preparing a document
(parsing, validating, compiling its plan: `direct`) costs 50 to 60 times what answering
it by a prepared plan does: 0.9 ms against 21 µs for a hash lookup at 1M specs.

So a document's *shape* is its text with each string literal emptied (`"22xi27u"` as
`""`). The first document of a shape is prepared alone, as any document is; the second
prepares the shape: the document as variables, its strings `$_literal0`, `$_literal1`,
..., declared `String!`. When that operation validates and compiles into a plan, it
answers that document and every later one of the shape, each one's strings given as
those variables, none parsed, validated or compiled again. A shape seen once costs a
client whose every document has a shape of its own (new aliases each time) nothing more
than its preparation; one that cannot be prepared is remembered as such (`Shapes`), and
its documents are prepared one by one, as before.

That gives what the document itself would give, because everything but the strings is
the same text, and validation accepts a `String!` variable only where any string is
valid (the schema's `String` arguments and input fields: it has no `ID`, enum or other
scalar taking strings), not for an `Int` or a list given one value. The operation with
variables is the stricter of the two: two fields that would merge with equal strings do
not with two variables, and the shape is then not prepared. A document whose strings
could be read otherwise has no shape: one with a block string, or a string holding an
escape (`\\`), a line break or other control character or half a surrogate pair (left to
the parser, whatever it makes of them), a string in a variable's default value or a
description, more than `MAX_SHAPED_STRINGS` strings, or more than one operation. Comments
stay in the shape: documents whose comments differ are of different shapes. Anything the
plan does not answer (an error, a cost over the limit) is answered by the stock path from
the document as sent, so errors and their locations are the document's own.
"""

from __future__ import annotations

import dataclasses
import re
from collections import OrderedDict
from collections.abc import Mapping
from threading import Lock
from typing import Any, Generic, NamedTuple, TypeVar

from graphql import (
    DocumentNode,
    GraphQLError,
    NamedTypeNode,
    NameNode,
    NonNullTypeNode,
    OperationDefinitionNode,
    StringValueNode,
    VariableDefinitionNode,
    VariableNode,
    Visitor,
    parse,
    visit,
)

from cachegql.schema.limits import MAX_TOKENS

__all__ = [
    "LITERAL_PREFIX",
    "MAX_SHAPED_STRINGS",
    "Shapes",
    "StringLiterals",
    "as_variables",
    "string_literals",
    "with_strings",
]

LITERAL_PREFIX = "_literal"
"""The variables a shape's strings become: `$_literal0`, `$_literal1`, ..."""

MAX_SHAPED_STRINGS = 64
"""Strings a shape may have: a document with more (a long `in` list) is prepared alone,
as a few hundred variables cost more to validate than the same strings do."""

# A plain string, or a comment (to the end of its line), met from the left as the lexer
# meets them: a `#` within a string is the string's, a quote within a comment the
# comment's. A plain string holds any character but a quote, a backslash, a control
# character other than tab, or half a surrogate pair (the parser refuses line breaks and
# lone surrogates; the rest are left to it too, rather than follow its rules here).
_STRING_OR_COMMENT = re.compile(r'"([^"\\\x00-\x08\x0a-\x1f\ud800-\udfff]*)"|#[^\n\r]*')


class StringLiterals(NamedTuple):
    """A document's text with each string emptied, and the strings, in order."""

    shape: str
    values: tuple[str, ...]


def string_literals(query: str) -> StringLiterals | None:
    """The shape and strings of `query` (its comments kept in the shape); None where it
    has no string, or where a quote could be read otherwise than as a plain string's (see
    the module's docstring)."""
    if '"' not in query or '"""' in query:
        return None
    pieces: list[str] = []
    values: list[str] = []
    end = 0
    for match in _STRING_OR_COMMENT.finditer(query):
        between = query[end : match.start()]
        # A quote between matches is one no match took: a string that is not plain.
        if '"' in between:
            return None
        value = match.group(1)
        if value is None:  # a comment
            pieces += (between, match.group())
        else:
            pieces += (between, '""')
            values.append(value)
            if len(values) > MAX_SHAPED_STRINGS:
                return None
        end = match.end()
    rest = query[end:]
    if '"' in rest or not values:
        return None
    pieces.append(rest)
    return StringLiterals("".join(pieces), tuple(values))


def as_variables(
    query: str, operation_name: str | None, literals: StringLiterals
) -> DocumentNode | None:
    """`query` with each of its strings as a variable of its own (`LITERAL_PREFIX` and its
    place), declared `String!` by its only operation; None where the document is not one
    operation, a string is a variable's default value, the parser does not find the
    strings `literals` found, or a variable is named as those are. Whether each string
    sits where any string is valid is for validation to say: a `String!` variable is
    refused anywhere else (another type, a list given one value)."""
    try:
        document = parse(query, max_tokens=MAX_TOKENS, no_location=True)
    except GraphQLError:
        return None
    operations = [d for d in document.definitions if isinstance(d, OperationDefinitionNode)]
    if len(operations) != 1 or operation_name not in (None, _name_of(operations[0])):
        return None
    rewriter = _AsVariables()
    rewritten: DocumentNode = visit(document, rewriter)
    if not rewriter.plain or tuple(rewriter.values) != literals.values:
        return None
    # Declared once every string is named: fragments after the operation have some too.
    string = NonNullTypeNode(type=NamedTypeNode(name=NameNode(value="String")))
    declared = tuple(
        VariableDefinitionNode(
            variable=VariableNode(name=NameNode(value=_name(place))), type=string, directives=()
        )
        for place in range(len(rewriter.values))
    )
    definitions = tuple(
        dataclasses.replace(
            definition,
            variable_definitions=(*(definition.variable_definitions or ()), *declared),
        )
        if isinstance(definition, OperationDefinitionNode)
        else definition
        for definition in rewritten.definitions
    )
    return dataclasses.replace(rewritten, definitions=definitions)


def _name(place: int) -> str:
    return f"{LITERAL_PREFIX}{place}"


def _name_of(operation: OperationDefinitionNode) -> str | None:
    """The operation's name; None for an anonymous one."""
    return operation.name.value if operation.name is not None else None


class _AsVariables(Visitor):
    """Each string a variable, named in order; `plain` turns false at a string that is a
    variable's default value or a description, or at a variable named as the strings'
    are."""

    def __init__(self) -> None:
        super().__init__()
        self.values: list[str] = []
        self.plain = True
        self._in_definition = False

    def enter_variable_definition(self, *_: Any) -> None:
        self._in_definition = True

    def leave_variable_definition(self, *_: Any) -> None:
        self._in_definition = False

    def enter_variable(self, node: VariableNode, *_: Any) -> None:
        if node.name.value.startswith(LITERAL_PREFIX):
            self.plain = False

    def enter_string_value(
        self, node: StringValueNode, key: str | int | None, *_: Any
    ) -> VariableNode | None:
        if self._in_definition or key == "description":  # no value: a definition's words
            self.plain = False
            return None
        self.values.append(node.value)
        return VariableNode(name=NameNode(value=_name(len(self.values) - 1)))


PreparedT = TypeVar("PreparedT")


class Shapes(Generic[PreparedT]):
    """What is known of the last `size` shapes, by shape and operation name: seen once
    (a document of it prepared alone), prepared (its operation with variables), or not
    answered so (None: not tried again)."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._shapes: OrderedDict[tuple[str, str | None], _Known[PreparedT]] = OrderedDict()
        self._lock = Lock()
        self.taken = 0
        """How many documents found their shape's operation prepared before them."""

    def find(
        self,
        literals: StringLiterals,
        operation_name: str | None,
        variables: Mapping[str, Any] | None,
    ) -> tuple[PreparedT, dict[str, Any]] | None:
        """The operation of the shape of `literals`, and the variables to run it with:
        those given and the document's strings. None where the shape has none."""
        key = (literals.shape, operation_name)
        with self._lock:
            known = self._shapes.get(key)
            if known is None:
                return None
            self._shapes.move_to_end(key)  # in use, even refused: kept as such
            if known.prepared is None:
                return None
            self.taken += 1
        return known.prepared, with_strings(variables, literals.values)

    def saw(self, literals: StringLiterals, operation_name: str | None) -> None:
        """A document of the shape of `literals`, prepared alone: the next one prepares
        the shape."""
        with self._lock:
            self._add((literals.shape, operation_name), _Known(None, tried=False), new=True)

    def seen_once(self, literals: StringLiterals, operation_name: str | None) -> bool:
        """Whether a document of this shape was prepared alone, and the shape not yet."""
        with self._lock:
            known = self._shapes.get((literals.shape, operation_name))
        return known is not None and not known.tried

    def keep(
        self, literals: StringLiterals, operation_name: str | None, prepared: PreparedT | None
    ) -> None:
        """`prepared` (a document of the shape of `literals`, as variables) for its shape;
        None: the shape is not answered so."""
        with self._lock:
            self._add((literals.shape, operation_name), _Known(prepared, tried=True))

    def _add(
        self, key: tuple[str, str | None], known: _Known[PreparedT], new: bool = False
    ) -> None:
        if new and key in self._shapes:
            self._shapes.move_to_end(key)
            return
        self._shapes[key] = known
        self._shapes.move_to_end(key)
        while len(self._shapes) > self.size:
            self._shapes.popitem(last=False)

    def __len__(self) -> int:
        return len(self._shapes)


class _Known(NamedTuple, Generic[PreparedT]):
    prepared: PreparedT | None
    tried: bool


def with_strings(variables: Mapping[str, Any] | None, values: tuple[str, ...]) -> dict[str, Any]:
    """The variables given, with each string as its `LITERAL_PREFIX` variable."""
    merged = dict(variables or {})
    merged.update((_name(place), value) for place, value in enumerate(values))
    return merged
