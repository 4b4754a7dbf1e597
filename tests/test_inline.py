"""Cheap operations run on the event loop, known as cheap before they run.

The index's estimate of the rows a filter reads (`cachegql.index.spec_reads`) must bound
what the filter matches, on the real index of the test pages; the schema runs inline
what is priced and estimated under its thresholds (`cachegql.schema.inline`), and
everything else in the runner's threads. That inline answers are the stock path's bytes
is the Differential's to check (every API test goes through the server); that nothing
inline keeps others waiting is `tests/test_hostile.py`'s `inline-largest` case.
"""

from __future__ import annotations

import asyncio
import itertools
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest

from cachegql.index import (
    UNBOUNDED_READS,
    IndexStore,
    PackageCriteria,
    Snapshot,
    SpecCriteria,
    StringMatch,
    find_packages,
    find_specs,
    package_reads,
    spec_reads,
)
from cachegql.schema import Context, build_schema
from cachegql.schema import inline as inline_module

T = TypeVar("T")
FIELDS = ("package", "target", "os", "compiler", "version", "platform")


@pytest.fixture(scope="module")
def store(pages_index: Path) -> Iterator[IndexStore]:
    opened = IndexStore(pages_index)
    yield opened
    opened.close()


def _criteria(store: IndexStore) -> Iterator[SpecCriteria]:
    """Filters of every shape the estimate knows, over values the pages hold."""
    snapshot = store.snapshot()
    leaves: list[SpecCriteria] = [SpecCriteria()]
    for field in FIELDS:
        values = [v for v in snapshot.columns[field].values if v][:4]
        leaves.extend(SpecCriteria(fields=((field, StringMatch(eq=v)),)) for v in values)
        leaves.append(SpecCriteria(fields=((field, StringMatch(in_=tuple(values[:3]))),)))
        leaves.append(SpecCriteria(fields=((field, StringMatch(ne=values[0])),)))
        leaves.append(SpecCriteria(fields=((field, StringMatch(prefix=values[0][:2])),)))
    leaves.append(SpecCriteria(fields=(("package", StringMatch(eq="no-such-package")),)))
    for stack in snapshot.dictionaries["stacks"].values[:3]:
        leaves.append(SpecCriteria(stack=StringMatch(eq=stack)))
    for prefix in ("a", "b2", snapshot.hash_of(0)[:5]):
        leaves.append(SpecCriteria(hash_prefix=prefix))
    yield from leaves
    for left, right in itertools.islice(itertools.combinations(leaves, 2), 0, None, 7):
        yield SpecCriteria(all_of=(left, right))
        yield SpecCriteria(any_of=(left, right))
        yield SpecCriteria(all_of=(left,), not_=right)


def test_the_estimate_bounds_the_rows_a_filter_matches(store: IndexStore) -> None:
    snapshot = store.snapshot()
    checked = 0
    for criteria in _criteria(store):
        matched = len(find_specs(snapshot, criteria))
        assert spec_reads(snapshot, criteria) >= matched, criteria
        checked += 1
    assert checked > 100
    # An `eq` reads its posting list: the estimate is the matches themselves.
    package = snapshot.columns["package"].values[1]
    one = SpecCriteria(fields=(("package", StringMatch(eq=package)),))
    assert spec_reads(snapshot, one) == len(find_specs(snapshot, one)) > 0
    # Spec syntax is not estimated: it reads the whole tag.
    assert spec_reads(snapshot, one, query="zlib") == snapshot.num_specs


def _searches(snapshot: Snapshot) -> list[str]:
    """Search texts of every kind of term: whole names, words, prefixes, typos, several
    words, variants, hash prefixes, words that match nothing."""
    names = [v for v in snapshot.dictionaries["package"].values if v][:40]
    words = sorted({w for name in names for w in re.findall(r"[a-z0-9]+", name)})
    atoms = [a for a in snapshot.dictionaries["atoms"].values if "=" in a][:6]
    texts = names[:10] + words + [w[:3] for w in words] + [w[:-1] + "x" for w in words]
    texts += [f"{a} {b}" for a, b in itertools.islice(itertools.combinations(words, 2), 0, 60, 3)]
    texts += [f"+{a.split('=')[0]}" if a.endswith("=true") else a for a in atoms]
    texts += [snapshot.hash_of(3)[:6], f"/{snapshot.hash_of(5)[:4]}", "nothing-matches-this"]
    return texts


def test_the_search_estimate_bounds_what_a_search_matches(pages_index: Path) -> None:
    """Unbounded until the words were searched once (the estimate never reads the text
    index: it runs on the event loop); then at least what the search matches, with or
    without a filter, of specs and of packages."""
    opened = IndexStore(pages_index)  # fresh: nothing searched yet
    try:
        snapshot = opened.snapshot()
        package = snapshot.columns["package"].values[1]
        filters = [None, SpecCriteria(fields=(("package", StringMatch(eq=package)),))]
        texts = _searches(snapshot)
        assert spec_reads(snapshot, None, search=texts[0]) == UNBOUNDED_READS
        assert package_reads(snapshot, None, search=texts[0]) == UNBOUNDED_READS
        bounded = 0
        for text in texts:
            for criteria in filters:
                matched = len(find_specs(snapshot, criteria, search=text))
                reads = spec_reads(snapshot, criteria, search=text)
                assert matched <= reads < UNBOUNDED_READS, (text, criteria)
                bounded += matched > 0
            found = len(find_packages(snapshot, None, search=text))
            assert found <= package_reads(snapshot, None, search=text) < UNBOUNDED_READS, text
        assert bounded > len(texts) // 2
        # A search of the whole tag's rows reads at least all of them.
        every = snapshot.dictionaries["package"].values[1:]
        everything = " ".join(every[:1])
        assert spec_reads(snapshot, None, search=everything) >= len(
            find_specs(snapshot, None, search=everything)
        )
    finally:
        opened.close()


def test_the_package_estimate_bounds_what_it_matches(store: IndexStore) -> None:
    snapshot = store.snapshot()
    names = [v for v in snapshot.dictionaries["package"].values if v][:3]
    for criteria in (
        PackageCriteria(),
        PackageCriteria(name=StringMatch(eq=names[0])),
        PackageCriteria(name=StringMatch(in_=tuple(names))),
        PackageCriteria(has_spec=SpecCriteria(fields=(("os", StringMatch(prefix="u")),))),
        PackageCriteria(any_of=(PackageCriteria(name=StringMatch(eq=names[1])),)),
    ):
        assert package_reads(snapshot, criteria) >= len(find_packages(snapshot, criteria))


def _recorded(schema_calls: list[bool]) -> Callable[..., Any]:
    async def runner(query: str | None, operation: Callable[[], T], inline: bool = False) -> T:
        schema_calls.append(inline)
        return operation()

    return runner


def _inline(
    store: IndexStore, query: str, variables: dict[str, Any] | None = None, inline: bool = True
) -> bool:
    """Whether the server would run `query` inline once its plan is prepared (the first
    request prepares it, in a thread)."""
    calls: list[bool] = []
    schema = build_schema(runner=_recorded(calls), inline=inline)
    for _ in range(2):
        answer = asyncio.run(schema.answer(query, variables, Context(store)))
        assert answer.execution == "compiled", answer
    assert calls[0] is False  # not prepared yet: never parsed or validated on the loop
    return calls[1]


def test_what_runs_on_the_event_loop(store: IndexStore) -> None:
    snapshot = store.snapshot()
    package = snapshot.columns["package"].values[1]
    page = (
        "query($p: String!) { specs(filter: { package: { eq: $p } }, first: 20) { totalCount "
        "nodes { hash } facets { oss { value count } packages(first: 20) { value count } } } }"
    )
    # A selective page, its facets' `packages` a list of buckets (not a connection).
    assert _inline(store, page, {"p": package})
    assert not _inline(store, page, {"p": package}, inline=False)  # `serve --no-inline`
    assert _inline(store, "{ specs(first: 5) { nodes { hash } } }")
    assert _inline(store, '{ packages(filter: { name: { eq: "zlib" } }) { totalCount } }')
    # A full-text search, once its words were read (the first request, in a thread), by
    # the rows it brings.
    assert _inline(store, '{ specs(search: "zlib") { totalCount } }')
    assert _inline(store, '{ packages(search: "zlib", first: 5) { nodes { name } } }')
    # A nested connection: in a thread.
    assert not _inline(store, f'{{ package(name: "{package}") {{ specs {{ totalCount }} }} }}')
    # Variables too large to price and coerce on the loop: in a thread, whatever they read.
    by_filter = "query($f: SpecFilter) { specs(filter: $f) { totalCount } }"
    assert _inline(store, by_filter, {"f": {"or": [{"package": {"eq": package}}] * 2}})
    many = {"or": [{"package": {"eq": package}}] * (inline_module.INLINE_MAX_VALUES + 1)}
    assert not _inline(store, by_filter, {"f": many})
    # Priced over the limit: 100 specs of 130 fields each.
    fields = " ".join(f"h{i}: hash" for i in range(130))
    assert inline_module.INLINE_MAX_PRICE < 100 * 130
    assert not _inline(store, f"{{ specs(first: 100) {{ nodes {{ {fields} }} }} }}")


def test_the_rows_threshold_decides(store: IndexStore, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same page inline or not by the rows its filter reads, against the threshold."""
    snapshot = store.snapshot()
    package = snapshot.columns["package"].values[1]
    rows = len(find_specs(snapshot, SpecCriteria(fields=(("package", StringMatch(eq=package)),))))
    page = f'{{ specs(filter: {{ package: {{ eq: "{package}" }} }}) {{ totalCount }} }}'
    monkeypatch.setattr(inline_module, "INLINE_MAX_READS", rows)
    assert _inline(store, page)
    monkeypatch.setattr(inline_module, "INLINE_MAX_READS", rows - 1)
    assert not _inline(store, page)


def test_the_rows_a_search_brings_decide(
    store: IndexStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A search inline or not by the rows its words bring, against the threshold."""
    snapshot = store.snapshot()
    search = '{ specs(search: "zlib") { totalCount } }'
    find_specs(snapshot, None, search="zlib")  # its words read
    reads = spec_reads(snapshot, None, search="zlib")
    assert 0 < reads < UNBOUNDED_READS
    monkeypatch.setattr(inline_module, "INLINE_MAX_READS", reads)
    assert _inline(store, search)
    monkeypatch.setattr(inline_module, "INLINE_MAX_READS", reads - 1)
    assert not _inline(store, search)


def test_arguments_are_converted_as_strawberry_converts_them(store: IndexStore) -> None:
    """The planned conversion (`schema.arguments`) gives what strawberry's does, for every
    root field's arguments, nested filters, lists and defaults included."""
    from graphql import parse
    from graphql.execution.values import get_argument_values
    from strawberry.schema.schema_converter import GraphQLCoreConverter
    from strawberry.types.arguments import convert_arguments

    from cachegql.schema.arguments import convert_field_arguments

    schema = build_schema()
    converter = schema.schema_converter
    query_type = schema._schema.query_type
    assert query_type is not None
    documents = {
        "specs": '{ specs(filter: { package: { eq: "a", in: ["b"] }, or: [{ not: { os: '
        '{ ne: "x" } } }, { target: { prefix: "x" } }], variants: ["+mpi"], dependsOn: '
        '{ package: { eq: "zlib" } }, and: [{ hashPrefix: "ab" }], runsOn: "zen4", hash: '
        '{ in: [] } }, first: 3, after: "x") { totalCount } }',
        "packages": '{ packages(search: "zlib", filter: { hasSpec: { os: { eq: "x" } }, '
        'not: { name: { contains: "z" } }, stack: { eq: "s" } }) { totalCount } }',
        "nearest": '{ nearest(spec: "zlib") { spec { hash } } }',
        "tagDiff": '{ tagDiff(from: "a", to: "b", filter: { os: { eq: "x" } }) { added } }',
        "stacks": "{ stacks { name } }",
        "microarchitectures": '{ microarchitectures(family: "x86_64") { name } }',
    }
    for name, text in documents.items():
        operation = parse(text).definitions[0]
        node = operation.selection_set.selections[0]  # type: ignore[attr-defined]
        field = query_type.fields[name]
        definition = field.extensions[GraphQLCoreConverter.DEFINITION_BACKREF]
        stock = convert_arguments(
            get_argument_values(field, node),
            definition.arguments,
            scalar_registry=converter.scalar_registry,
            config=converter.config,
        )
        assert convert_field_arguments(field, node, None, converter) == stock, name
