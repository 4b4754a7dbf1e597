"""Documents alike but for their strings share one prepared operation (schema/literal_shapes.py),
and answer exactly as each document alone does through strawberry's stock path."""

from __future__ import annotations

import asyncio
from typing import Any

import orjson
import pytest
from graphql import GraphQLError, StringValueNode, Visitor, parse, print_ast, visit
from hypothesis import given, settings
from hypothesis import strategies as st
from strawberry.schema.schema import StrawberryGraphQLCoreExecutionContext

from cachegql.schema import Answer, Context, build_schema
from cachegql.schema.literal_shapes import (
    MAX_SHAPED_STRINGS,
    Shapes,
    StringLiterals,
    as_variables,
    string_literals,
    with_strings,
)
from tests.conftest import GraphQLClient, Pair


@pytest.fixture(scope="module")
def hashes(pair: Pair) -> list[str]:
    snapshot = pair.store.snapshot(None)
    return [record.hash for record in snapshot.specs(list(range(6)))]


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ('{ spec(hash: "abc") { hash } }', ('{ spec(hash: "") { hash } }', ("abc",))),
        ('{ a: f(x: "") b: f(x: "é\tz") }', ('{ a: f(x: "") b: f(x: "") }', ("", "é\tz"))),
        ('{ f(x: "a", y: ["b", "c d"]) }', ('{ f(x: "", y: ["", ""]) }', ("a", "b", "c d"))),
        # Comments stay, quotes and all; a `#` in a string is the string's.
        ('{ f(x: "a") } # "b"', ('{ f(x: "") } # "b"', ("a",))),
        ('# ask "q"\n{ f(x: "c#d") }', ('# ask "q"\n{ f(x: "") }', ("c#d",))),
    ],
)
def test_a_documents_strings_are_read_in_order_and_emptied(
    query: str, expected: tuple[str, tuple[str, ...]]
) -> None:
    assert string_literals(query) == StringLiterals(*expected)


@pytest.mark.parametrize(
    "query",
    [
        "{ tags { name } }",  # no string
        '{ f(x: "a\\"b") }',  # an escape
        '{ f(x: "a\\"#b") }',  # an escape, then what would be a comment
        '{ f(x: """a""") }',  # a block string
        '{ f(x: "a\nb") }',  # a line break, which no string holds
        '{ f(x: "a\x01b") }',  # a control character
        '{ f(x: "a\x01" y: "b") }',  # the same, where the next quotes would pair
        '{ f(x: "a\ud800") }',  # half a surrogate pair
        '{ f(x: "a) }',  # not closed
    ],
)
def test_a_document_whose_quotes_could_be_read_otherwise_has_no_shape(query: str) -> None:
    assert string_literals(query) is None


def _as_variables(query: str, name: str | None = None) -> str | None:
    literals = string_literals(query)
    assert literals is not None
    document = as_variables(query, name, literals)
    return None if document is None else print_ast(document)


def test_each_string_becomes_a_variable_declared_by_the_operation() -> None:
    text = _as_variables(
        'query Q($n: Int) { specs(query: "zlib", filter: { os: { in: ["a", "b"] } }, '
        'first: $n) { nodes { hash } } p: package(name: "zlib") { name } }',
        "Q",
    )
    assert text is not None
    assert (
        "query Q($n: Int, $_literal0: String!, $_literal1: String!, $_literal2: String!, " in text
    )
    assert "query: $_literal0" in text and "in: [$_literal1, $_literal2]" in text
    assert "package(name: $_literal3)" in text and '"' not in text


def test_strings_of_a_fragment_after_the_operation_are_declared_too() -> None:
    text = _as_variables(
        '{ spec(hash: "a") { ...F } } '
        'fragment F on Spec { dependents(filter: { os: { eq: "x" } }) { totalCount } }'
    )
    assert text is not None
    assert text.startswith("query ($_literal0: String!, $_literal1: String!) {")
    assert "eq: $_literal1" in text


@pytest.mark.parametrize(
    ("query", "name"),
    [
        ('query($q: String = "x") { specs(query: $q) { totalCount } }', None),  # a default
        ('{ package(name: "a") { name } } query B { package(name: "b") { name } }', None),
        ('query A { package(name: "a") { name } }', "B"),  # another operation's name
        ('query($_literal0: String) { package(name: "a") { name } }', None),
        ('query($ _literal0: String) { package(name: "a") { name } }', None),
        ('{ package(name: "a" { name } }', None),  # no document
        ('"words" query Q { package(name: "a") { name } }', None),  # a description
    ],
)
def test_strings_that_could_mean_otherwise_leave_a_document_unshaped(
    query: str, name: str | None
) -> None:
    assert _as_variables(query, name) is None


def test_strings_the_parser_does_not_find_leave_a_document_unshaped() -> None:
    query = '{ package(name: "a") { name } }'
    literals = string_literals(query)
    assert literals is not None
    assert as_variables(query, None, literals._replace(values=("b",))) is None


def test_a_document_of_too_many_strings_has_no_shape() -> None:
    strings = ", ".join(['"a"'] * MAX_SHAPED_STRINGS)
    assert string_literals(f"{{ f(x: [{strings}]) }}") is not None
    assert string_literals(f'{{ f(x: [{strings}, "b"]) }}') is None


_ALPHABET = st.sampled_from(list('ab "\\#\t\n\r\x01\x7féz\ufeff{}$@'))


_SEPARATOR = st.sampled_from([" ", "\n", ' # a "comment" \n', " #\r"])


@given(st.lists(st.tuples(st.text(_ALPHABET, max_size=6), _SEPARATOR), min_size=1, max_size=3))
@settings(max_examples=500, deadline=None)
def test_strings_found_are_the_parsers_whenever_a_shape_is_given(
    parts: list[tuple[str, str]],
) -> None:
    """Wherever the expression gives a shape and the parser reads the document, both find
    the same strings, and the shape is the text with exactly those emptied."""
    arguments = "".join(f'a{n}: "{part}"{gap}' for n, (part, gap) in enumerate(parts))
    query = "{ f(" + arguments + ") }"
    literals = string_literals(query)
    if literals is None:
        return
    try:
        document = parse(query)
    except GraphQLError:  # no shape is prepared from such a document (`as_variables`)
        return
    strings = _Strings()
    visit(document, strings)
    assert list(literals.values) == [value for value, _, _ in strings.found]
    shape: list[str] = []
    end = 0
    for _, start, stop in strings.found:
        shape += (query[end:start], '""')
        end = stop
    assert literals.shape == "".join(shape) + query[end:]


class _Strings(Visitor):
    def __init__(self) -> None:
        super().__init__()
        self.found: list[tuple[str, int, int]] = []

    def enter_string_value(self, node: StringValueNode, *_: Any) -> None:
        assert node.loc is not None
        self.found.append((node.value, node.loc.start, node.loc.end))


def test_given_variables_are_kept_and_strings_added() -> None:
    merged = with_strings({"n": 3, "_literal0": "sent"}, ("a", "b"))
    assert merged == {"n": 3, "_literal0": "a", "_literal1": "b"}


def _literals(query: str) -> StringLiterals:
    literals = string_literals(query)
    assert literals is not None
    return literals


def test_a_shape_is_seen_once_then_prepared_or_refused() -> None:
    shapes: Shapes[str] = Shapes(8)
    seen, refused = _literals('{ f(x: "a") }'), _literals('{ g(x: "a") }')
    assert not shapes.seen_once(seen, None)
    for literals in (seen, refused):
        shapes.saw(literals, None)
        assert shapes.seen_once(literals, None) and shapes.find(literals, None, None) is None
    shapes.keep(seen, None, "prepared")
    shapes.keep(refused, None, None)
    shapes.saw(seen, None)  # a shape known stays as it is
    assert not shapes.seen_once(seen, None) and not shapes.seen_once(refused, None)
    assert shapes.find(_literals('{ f(x: "b") }'), None, {"n": 1}) == (
        "prepared",
        {"n": 1, "_literal0": "b"},
    )
    assert shapes.find(refused, None, None) is None
    assert shapes.find(seen, "Other", None) is None  # by the operation's name too
    assert shapes.taken == 1


def test_shapes_are_kept_for_the_last_few() -> None:
    shapes: Shapes[str] = Shapes(2)
    for n in range(3):
        shapes.keep(_literals(f'{{ f{n}(x: "a") }}'), None, f"prepared {n}")
    assert len(shapes) == 2
    assert shapes.find(_literals('{ f0(x: "b") }'), None, None) is None
    assert shapes.find(_literals('{ f2(x: "b") }'), None, None) is not None


_MANY_WORDS = '{ specs(search: "' + " zlib" * 30 + '", first: 100) { nodes { hash } } }'
TEMPLATES = [
    "{ spec(hash: %s) { hash name version compiler { name version } os target } }",
    "fragment F on Spec { hash name dependents(filter: { os: { ne: %s } }) { totalCount } } "
    "query { spec(hash: %s) { ...F } }",
    "{ specs(filter: { hash: { eq: %s } }, first: 3) { totalCount nodes { hash name } "
    "facets { oss { value count } } } }",
    "query Named($n: Int) { a: spec(hash: %s) { ...F } b: specs(query: %s, first: $n) "
    "{ nodes { ...F } } } fragment F on Spec { hash name }",
    '{ specs(filter: { or: [{ hash: { eq: %s } }, { os: { eq: "nowhere" } }] }, first: 2) '
    "{ totalCount nodes { hash } } }",
    # As GraphiQL's first document: comments, a quote in one, a `#` in a string.
    '# cachegql: "Spack" build caches\n#\n{ spec(hash: %s) { hash name } '
    'specs(query: %s, filter: { os: { ne: "#" } }, first: 1) { totalCount } }',
]


def _filled(template: str, values: list[str]) -> str:
    return template % tuple(orjson.dumps(value).decode() for value in values)


@pytest.mark.parametrize("template", TEMPLATES)
def test_documents_of_one_shape_answer_as_each_alone(
    pair: Pair, hashes: list[str], template: str
) -> None:
    shapes = pair.compiled.direct.shapes  # type: ignore[union-attr]
    places = template.count("%s")
    variables = {"n": 2} if "$n" in template else {}
    for number, digest in enumerate(hashes):
        taken = shapes.taken
        query = _filled(template, [digest] + [f"/{digest[:9]}"] * (places - 1))
        assert pair.outcome(query, **variables) == "compiled"
        # The first prepared alone, the second prepares the shape, the rest take it.
        assert shapes.taken == taken + (number >= 2), "not answered by its shape"


@pytest.mark.parametrize(
    "value",
    [
        "no-such-hash",  # found nowhere
        "",  # empty
        "é",  # not ASCII
        "'; --",  # not a hash at all
        "a" * 5000,  # long
    ],
)
def test_any_string_in_a_known_shape_answers_as_the_stock_path(
    pair: Pair, hashes: list[str], value: str
) -> None:
    schema = build_schema()
    shapes = schema.direct.shapes  # type: ignore[union-attr]
    template = TEMPLATES[0]
    for digest in hashes[:2]:
        schema.answer_sync(_filled(template, [digest]), None, Context(pair.store))
    query = _filled(template, [value])
    answer = schema.answer_sync(query, None, Context(pair.store))
    assert shapes.taken == 1
    assert _bytes(answer) == pair.stock_answer(query, {})


def _bytes(answer: Answer) -> bytes:
    """An answer as the endpoint writes it (`Pair.stock_answer`)."""
    if answer.body is not None:
        return answer.body
    assert answer.result is not None
    if not answer.result.errors:
        return orjson.dumps({"data": answer.result.data})
    errors = [e.formatted for e in answer.result.errors]
    return orjson.dumps({"data": answer.result.data, "errors": errors})


@pytest.mark.parametrize(
    ("template", "sent", "code"),
    [
        # A spec query the syntax refuses: the plan declines, the stock path says where.
        ('{ specs(query: "%s", first: 2) { totalCount } }', "@@", "BAD_USER_INPUT"),
        # A search of many words, each priced: over the limit (1,903 against 1,500).
        (
            '{ specs(search: "%s", first: 100) { nodes { hash } } }',
            " zlib" * 30,
            "QUERY_TOO_COMPLEX",
        ),
    ],
)
def test_a_shape_that_cannot_answer_leaves_the_document_to_the_stock_path(
    pair: Pair, template: str, sent: str, code: str
) -> None:
    schema = build_schema(max_cost=1_500)
    shapes = schema.direct.shapes  # type: ignore[union-attr]
    for known in ("zlib", "cmake"):  # the first prepared alone, the second its shape
        answer = schema.answer_sync(template % known, None, Context(pair.store))
        assert answer.execution == "compiled"
    answer = schema.answer_sync(template % sent, None, Context(pair.store))
    assert shapes.taken == 1 and answer.execution != "compiled"
    assert len(schema.direct) == 1, "only the first document prepared alone"  # type: ignore[arg-type]
    stock = build_schema(
        max_cost=1_500, execution=StrawberryGraphQLCoreExecutionContext, compiled=False
    ).execute_sync(template % sent, context_value=Context(pair.store))
    assert stock.errors and answer.result is not None and answer.result.errors
    assert [e.formatted for e in answer.result.errors] == [e.formatted for e in stock.errors]
    assert answer.result.errors[0].locations, "the document's own locations"
    extensions = answer.result.errors[0].extensions
    assert extensions is not None and extensions["code"] == code


def test_a_shape_that_cannot_be_prepared_is_not_tried_again(pair: Pair) -> None:
    """Strings where a `String!` variable is refused (an `Int`, a list given one value),
    or fields that merge only with equal strings (as variables they do not): each
    document is prepared alone, the shape tried once."""
    for template in (
        '{ specs(filter: { os: { in: "%s" } }, first: 1) { totalCount } }',
        '{ a: spec(hash: "%s") { hash } a: spec(hash: "%s") { hash } }',
    ):
        schema = build_schema()
        direct = schema.direct
        assert direct is not None
        for number, value in enumerate(("2222222", "3333333", "4444444", "5555555"), start=1):
            query = template.replace("%s", value)
            literals = _literals(query)
            assert pair.outcome(query) == "compiled"
            assert schema.answer_sync(query, None, Context(pair.store)).execution == "compiled"
            assert len(direct) == number and direct.shapes.taken == 0
            assert len(direct.shapes) == 1 and direct.shapes.seen_once(literals, None) == (
                number == 1
            )
    schema = build_schema()
    for value in ("3", "4"):  # a document that is not valid makes no shape
        query = f'{{ specs(first: "{value}") {{ totalCount }} }}'
        assert schema.answer_sync(query, None, Context(pair.store)).execution == "invalid"
    assert len(schema.direct.shapes) == 0  # type: ignore[union-attr]


def test_documents_of_a_known_shape_are_not_prepared_again(pair: Pair, hashes: list[str]) -> None:
    """A document prepared alone is kept (`len(direct)`); those of a known shape are not."""
    schema = build_schema()
    direct = schema.direct
    assert direct is not None
    template = TEMPLATES[0]
    for number, digest in enumerate(hashes, start=1):
        answer = schema.answer_sync(_filled(template, [digest]), None, Context(pair.store))
        assert answer.execution == "compiled"
        # The first prepared alone (and kept), the second prepares the shape.
        assert (len(direct), len(direct.shapes), direct.shapes.taken) == (1, 1, max(0, number - 2))


def test_the_event_loops_path_takes_a_known_shape_too(pair: Pair, hashes: list[str]) -> None:
    """`answer` looks a document up without preparing it, to run a cheap one inline."""
    ran: list[bool] = []

    async def runner(query: str | None, operation: Any, inline: bool = False) -> Any:
        ran.append(inline)
        return operation()

    schema = build_schema(runner=runner)
    template = TEMPLATES[0]

    async def ask(digest: str) -> bytes | None:
        answer = await schema.answer(_filled(template, [digest]), None, Context(pair.store))
        return answer.body

    bodies = [asyncio.run(ask(digest)) for digest in hashes[:3]]
    assert ran == [False, False, True], "prepared in the runner twice, then known"
    assert bodies[2] == pair.stock_answer(_filled(template, [hashes[2]]), {})


def test_over_http_documents_of_one_shape_answer_as_the_stock_path(
    gql: GraphQLClient, hashes: list[str]
) -> None:
    """The served app (compared with the stock path by the client, `Differential`)."""
    template = TEMPLATES[3]
    for digest in hashes:
        data = gql.data(_filled(template, [digest, f"/{digest[:9]}"]), n=1)
        assert data["a"]["hash"] == digest and data["b"]["nodes"][0]["hash"] == digest
    error = gql.error(_filled(template, [hashes[0], "/@@"]), n=1)
    assert error["locations"] and error["extensions"]["code"]
