"""Ingest over folders and files: malformed pages are problems naming the file, the rest loads."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from cachegql.index import IndexStore, build_index, stacks
from cachegql.index.ingest import Ingested, StrictModeError, ingest
from tests.conftest import PAGES
from tests.page_factory import fake_hash, page_text, spec, write_page

GOOD_SPECS = 2


def _tables(result: Ingested) -> dict[str, int]:
    return {tag: len(table) for tag, table in result.tables.items()}


def _messages(result: Ingested) -> list[str]:
    return [str(p) for p in result.problems]


def _good_page(folder: Path) -> Path:
    """A valid page with GOOD_SPECS specs of package `good` in tag develop."""
    specs = [spec(f"good-{i}") for i in range(GOOD_SPECS)]
    return write_page(folder / "good" / "specs.md", page_text(specs, title='"good"'))


# The fixture tree


def test_fixture_folder_is_read_recursively(
    expected: dict[str, dict[str, dict[str, Any]]],
) -> None:
    """_cache/<tag>/<pkg>/specs.md and the loose .txt page all load; counts match the pages."""
    result = ingest([PAGES])
    assert _tables(result) == {tag: len(specs) for tag, specs in expected.items()}
    assert result.pages == 6  # hdf5, cudnn, py-torch-scatter, cmake, zlib x2 (legacy py-black: no)
    assert any(p.endswith("zlib-develop.txt") for p in result.sources)
    assert result.merged_duplicates == 0


def test_fixture_folder_reports_legacy_page_and_skips_readme() -> None:
    """The legacy page is the one problem; README.md is skipped silently."""
    result = ingest([PAGES])
    assert len(result.problems) == 1
    assert result.problems[0].path.endswith("py-black/specs.md")
    assert "legacy" in result.problems[0].message
    assert [Path(p.path).name for p in result.skipped] == ["README.md"]


def test_files_and_folders_mix_as_sources(tmp_path: Path) -> None:
    """A file named on its own and a folder both contribute."""
    folder = tmp_path / "pages"
    _good_page(folder)
    result = ingest([folder, PAGES / "loose" / "zlib-develop.txt"])
    assert result.pages == 2
    assert _tables(result) == {"develop": GOOD_SPECS + 3}
    assert result.problems == []


# Malformed pages: each one problem naming the file, the good page next to it still loads

_DETAILS = json.dumps([spec("bad")])
PAGE_ERRORS: dict[str, tuple[str | bytes, str]] = {
    "bad-json": (page_text(spec_details='[{"hash": "abc", '), "'spec_details' is not valid JSON"),
    "details-not-list": (page_text(spec_details='{"hash": "x"}'), "must be a JSON list"),
    "no-title": (page_text(title=None, spec_details=_DETAILS), "missing key 'title'"),
    "title-with-space": (page_text(title='"two words"', spec_details=_DETAILS), "'title'"),
    "no-categories": (
        page_text(categories=None, spec_details=_DETAILS),
        "missing key 'categories'",
    ),
    "categories-no-tag": (page_text(categories="[package]", spec_details=_DETAILS), "names no tag"),
    "categories-not-list": (
        page_text(categories="package, develop", spec_details=_DETAILS),
        "'categories' must be a list",
    ),
    "no-spec-details": (page_text(), "missing key 'spec_details'"),
    "not-utf8": (page_text([spec("bad")]).encode().replace(b"pkg", b"pk\xff"), "not UTF-8"),
    "empty": ("", "empty file"),
    "blank": (" \n\n", "empty file"),
    "not-closed": (page_text([spec("bad")]).removesuffix("---\n"), "not closed"),
    "bad-front-matter-line": (
        page_text([spec("bad")]).replace("layout: cache", "layout: cache\n!!!"),
        "expected 'key: value'",
    ),
}


@pytest.mark.parametrize(("text", "reason"), PAGE_ERRORS.values(), ids=PAGE_ERRORS.keys())
def test_malformed_page_is_a_problem_and_neighbours_load(
    tmp_path: Path, text: str | bytes, reason: str
) -> None:
    """One problem: its str starts with the file's path and says what is wrong."""
    folder = tmp_path / "pages"
    _good_page(folder)
    bad = write_page(folder / "bad" / "specs.md", text)
    result = ingest([folder])
    assert _messages(result) == [str(result.problems[0])]
    message = _messages(result)[0]
    assert message.startswith(f"{bad}: "), message
    assert reason in message
    assert result.pages == 1
    assert _tables(result) == {"develop": GOOD_SPECS}


SPEC_ERRORS: dict[str, tuple[dict[str, Any], str]] = {
    "versions-not-list": ({"versions": "1.0"}, "'versions' must be a list"),
    "versions-empty": ({"versions": []}, "'versions' must not be empty"),
    "hash-uppercase": ({"hash": "A" * 32}, "not 32 lowercase base32 characters"),
    "hash-not-base32": ({"hash": "0189" * 8}, "not 32 lowercase base32 characters"),
    "hash-short": ({"hash": "abc"}, "not 32 lowercase base32 characters"),
    "hash-missing": ({"hash": None}, "missing 'hash'"),
    "hash-number": ({"hash": 42}, "'hash' must be a string"),
    "size-abc": ({"size": "abc"}, "'size' must be a byte count or '-'"),
    "size-negative": ({"size": -1}, "'size' must be a byte count or '-'"),
    "size-too-large": ({"size": 1 << 63}, "'size' of 9223372036854775808 bytes is more than"),
    "size-too-large-text": ({"size": str(1 << 64)}, "is more than a file can be"),
    "os-missing": ({"os": None}, "'os' must be a non-empty string"),
    "target-empty": ({"target": ""}, "'target' must be a non-empty string"),
    "stacks-not-list": ({"stacks": "root"}, "'stacks' must be a list"),
    "variants-number": ({"variants": [1]}, "'variants' must be a list"),
    "variant-malformed": ({"variants": ["build_system="]}, "malformed variant"),
    "compiler-malformed": ({"compiler": "gcc@"}, "malformed compiler"),
    "tarball-number": ({"tarball": 7}, "'tarball' must be a string"),
}


@pytest.mark.parametrize(("fields", "reason"), SPEC_ERRORS.values(), ids=SPEC_ERRORS.keys())
def test_malformed_spec_is_a_problem_and_its_page_loads(
    tmp_path: Path, fields: dict[str, Any], reason: str
) -> None:
    """A spec of the wrong shape is skipped with a problem; the specs around it load."""
    folder = tmp_path / "pages"
    _good_page(folder)
    details = [spec("ok-1"), spec("bad", **fields), spec("ok-2")]
    bad = write_page(folder / "mixed" / "specs.md", page_text(details, title='"mixed"'))
    result = ingest([folder])
    assert len(result.problems) == 1, _messages(result)
    message = _messages(result)[0]
    assert message.startswith(f"{bad}: spec #2 skipped: "), message
    assert reason in message
    assert result.pages == 2
    assert _tables(result) == {"develop": GOOD_SPECS + 2}


def test_broken_page_with_any_name_in_a_folder_is_reported(tmp_path: Path) -> None:
    """A file that starts like a page (front matter, layout: cache) is a page whatever its name."""
    folder = tmp_path / "pages"
    _good_page(folder)
    text = page_text([spec("bad")]).encode().replace(b"pkg", b"pk\xff")
    bad = write_page(folder / "hdf5-develop.html", text)
    result = ingest([folder])
    offset = text.index(b"\xff")
    assert _messages(result) == [f"{bad}: not UTF-8 (invalid byte at offset {offset})"]
    assert _tables(result) == {"develop": GOOD_SPECS}


# Files that are not pages


NOT_PAGES: dict[str, str | bytes] = {
    "notes.txt": "some notes\n",
    "post.md": "---\ntitle: hello\nlayout: post\n---\nbody\n",
    "logo.png": b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\xff\xfe",
    "empty.txt": "",
    "unclosed.md": "---\ntitle: draft\n",
}


@pytest.mark.parametrize("name", NOT_PAGES)
def test_non_page_in_a_folder_is_skipped_not_a_problem(tmp_path: Path, name: str) -> None:
    """Files found in a folder that are not pages are skipped quietly."""
    folder = tmp_path / "pages"
    _good_page(folder)
    other = write_page(folder / "docs" / name, NOT_PAGES[name])
    result = ingest([folder])
    assert result.problems == []
    assert [p.path for p in result.skipped] == [str(other)]
    assert _tables(result) == {"develop": GOOD_SPECS}


@pytest.mark.parametrize("name", NOT_PAGES)
def test_non_page_named_explicitly_is_a_problem(tmp_path: Path, name: str) -> None:
    """The same file named as a source is a problem: the user said it was a page."""
    other = write_page(tmp_path / name, NOT_PAGES[name])
    result = ingest([other])
    assert len(result.problems) == 1
    assert str(result.problems[0]).startswith(f"{other}: ")
    assert result.skipped == []
    assert result.specs == 0


def test_not_a_page_problem_explains_why(tmp_path: Path) -> None:
    """A named markdown file of another layout is 'not a cache page', naming its layout."""
    post = write_page(tmp_path / "post.md", NOT_PAGES["post.md"])
    (problem,) = ingest([post]).problems
    assert str(problem) == f"{post}: not a cache page: front matter has layout 'post', not 'cache'"


def test_hidden_and_vcs_folders_are_not_walked(tmp_path: Path) -> None:
    """Pages under .git/ or other dot folders are not read."""
    folder = tmp_path / "pages"
    _good_page(folder)
    write_page(folder / ".git" / "x" / "specs.md", page_text([spec("hidden")]))
    write_page(folder / ".snapshots" / "specs.md", page_text([spec("hidden2")]))
    result = ingest([folder])
    assert _tables(result) == {"develop": GOOD_SPECS}


# strict mode


def test_strict_raises_on_first_problem_naming_the_file(tmp_path: Path) -> None:
    """strict=True stops at the malformed page; the error carries its path and reason."""
    folder = tmp_path / "pages"
    _good_page(folder)
    bad = write_page(folder / "zz" / "specs.md", page_text(categories="[package]", specs=[spec()]))
    with pytest.raises(StrictModeError) as caught:
        ingest([folder], strict=True)
    assert caught.value.problem.path == str(bad)
    assert str(bad) in str(caught.value)
    assert "names no tag" in str(caught.value)


def test_strict_raises_on_a_bad_spec_and_on_meta_disagreement(tmp_path: Path) -> None:
    """A per-spec problem and a meta disagreement are problems too under strict."""
    bad_spec = write_page(tmp_path / "a.md", page_text([spec(size="abc")]))
    with pytest.raises(StrictModeError, match="'size' must be a byte count"):
        ingest([bad_spec], strict=True)
    meta = write_page(tmp_path / "b.md", page_text([spec()], meta='{"num_specs": 5}'))
    with pytest.raises(StrictModeError, match="num_specs"):
        ingest([meta], strict=True)


def test_strict_passes_clean_sources(tmp_path: Path) -> None:
    """No problem, no error: strict only changes what happens on a problem."""
    folder = tmp_path / "pages"
    _good_page(folder)
    write_page(folder / "notes.txt", "not a page, skipped even in strict mode\n")
    result = ingest([folder, PAGES / "loose" / "zlib-develop.txt"], strict=True)
    assert _tables(result) == {"develop": GOOD_SPECS + 3}


# Duplicate hashes


def test_identical_duplicate_is_merged_silently(tmp_path: Path) -> None:
    """Overlapping sources: the same spec twice in one tag is one spec and a merge count."""
    shared = spec("shared")
    write_page(tmp_path / "a" / "specs.md", page_text([shared, spec("only-a")]))
    write_page(tmp_path / "b" / "specs.md", page_text([spec("only-b"), shared]))
    result = ingest([tmp_path])
    assert result.problems == []
    assert result.merged_duplicates == 1
    assert _tables(result) == {"develop": 3}


def test_same_page_given_twice_merges_every_spec(tmp_path: Path) -> None:
    """The loose zlib page named twice: every spec merged, nothing reported."""
    loose = PAGES / "loose" / "zlib-develop.txt"
    copy = tmp_path / "zlib-copy.md"
    shutil.copy(loose, copy)
    result = ingest([loose, copy])
    assert result.problems == []
    assert result.merged_duplicates == 3
    assert _tables(result) == {"develop": 3}


def test_conflicting_duplicate_names_both_files_and_fields(tmp_path: Path) -> None:
    """Same hash, other compiler and version: a problem naming both files and fields."""
    first = write_page(tmp_path / "a" / "specs.md", page_text([spec("x")]))
    second = write_page(
        tmp_path / "b" / "specs.md",
        page_text([spec("x", compiler="gcc@12.3.0", versions=["2.0"])]),
    )
    result = ingest([tmp_path])
    assert result.merged_duplicates == 0
    assert len(result.problems) == 1
    message = str(result.problems[0])
    assert str(first) in message
    assert str(second) in message
    assert fake_hash("x") in message
    assert "versions" in message
    assert "compiler" in message
    assert "kept the first" in message
    table = result.tables["develop"]
    kept = table.record(table.rows_by_hash[fake_hash("x")])
    assert (kept.compiler.raw, kept.versions) == ("gcc@13.2.0", ("1.0.0",))
    assert len(table) == 1


def test_same_hash_in_two_tags_is_two_specs(tmp_path: Path) -> None:
    """Merging is per tag: the same hash under develop and v0.23.0 is kept in both."""
    write_page(tmp_path / "a.md", page_text([spec("x")]))
    write_page(tmp_path / "b.md", page_text([spec("x")], categories="[package, v0.23.0]"))
    result = ingest([tmp_path / "a.md", tmp_path / "b.md"])
    assert result.problems == []
    assert result.merged_duplicates == 0
    assert _tables(result) == {"develop": 1, "v0.23.0": 1}


def test_rejected_duplicate_leaves_no_stack_behind(tmp_path: Path) -> None:
    """The stacks of an index are those of the specs kept, not of a discarded duplicate."""
    write_page(tmp_path / "a" / "specs.md", page_text([spec("x", stacks=["root"])]))
    write_page(tmp_path / "b" / "specs.md", page_text([spec("x", stacks=["ghost", "root"])]))
    report = build_index([tmp_path], tmp_path / "ix")
    assert len(report.problems) == 1
    store = IndexStore(tmp_path / "ix")
    try:
        listed = {s.name: s.num_specs for s in stacks(store.snapshot("develop"))}
    finally:
        store.close()
    assert listed == {"root": 1}
