"""Read one cache.spack.io package page: YAML front matter with JSON `meta` and `spec_details`.

Pages are recognised by content, not by name: front matter between `---` lines with
`layout: cache`. The front matter is flat `key: value` lines (plus indented list
items on legacy pages), so it is read line by line rather than with a YAML parser,
which would be slow on the single-line JSON of a page with thousands of specs.

Whether a file is a page is decided from its first `HEAD_BYTES`: only a file that may
still be one is read whole, and only up to `MAX_PAGE_BYTES`, so a large file that is not
a page (a tarball, a database dump) costs a few kilobytes, never its size in memory.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

import orjson

from cachegql.index.fields import SPEC_FIELDS, SpecField
from cachegql.index.ingest.files import NotRegularFileError, open_regular, reason
from cachegql.index.ingest.page_specs import kind_of, spec_record
from cachegql.index.records import Problem, SpecRecord
from cachegql.index.spack.compilers import parse_compiler

__all__ = [
    "HEAD_BYTES",
    "MAX_PAGE_BYTES",
    "NotAPageError",
    "Page",
    "PageError",
    "UnreadFileError",
    "parse_page",
    "read_page",
]

# Enough to hold a page's first lines (`title`, `layout` and `categories` come first on
# every real page), which decide whether a file is a page.
HEAD_BYTES = 64 * 1024
# No page can be this large: real pages are tens of kilobytes (35 KB for openblas in
# develop), the largest page of the benchmark's 200,000 specs is 3.3 MB (6,442 specs).
# A page holds one package's specs in one tag: 64 MiB would be ~130,000 of them.
MAX_PAGE_BYTES = 64 * 1024 * 1024
_CHUNK_BYTES = 1 << 20
_BOM = "\ufeff"  # a UTF-8 byte order mark, as some editors start a file with

_KEY_LINE = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*):(?:\s(.*)|)$")


class NotAPageError(Exception):
    """The file is not a cache page at all (no front matter, or another layout)."""


class PageError(Exception):
    """The file is a cache page, but unusable; the message says why."""


class UnreadFileError(PageError):
    """The file was not read: unreadable, not a regular file, or too large to be a page.

    Whether it is a page cannot be known, so it is always worth telling.
    """


@dataclass
class Page:
    """A parsed page: its package, tag, valid specs, and what was wrong with the rest."""

    path: str
    package: str
    tag: str
    specs: list[SpecRecord]
    problems: list[Problem] = field(default_factory=list)


def read_page(path: Path) -> Page:
    """Read and parse the page at `path`; raise NotAPageError or PageError.

    Only a regular file is opened, and only a file whose start may be a page is read
    whole: UnreadFileError for anything else that prevents reading it.
    """
    try:
        with open_regular(path) as stream:
            data = _read_candidate(stream)
    except NotRegularFileError as exc:
        raise UnreadFileError(f"{exc.strerror}; skipped without reading it") from exc
    except OSError as exc:
        raise UnreadFileError(f"cannot read file: {reason(exc)}") from exc
    if not data.strip():
        raise PageError("empty file")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise PageError(f"not UTF-8 (invalid byte at offset {exc.start})") from exc
    return parse_page(text, str(path))


def _read_candidate(stream: BinaryIO) -> bytes:
    """The file's bytes, if its first `HEAD_BYTES` may start a page of at most
    `MAX_PAGE_BYTES`; else NotAPageError, PageError or UnreadFileError."""
    head = stream.read(HEAD_BYTES)
    if len(head) < HEAD_BYTES:
        return head  # the whole file
    _sniff(head)
    size = os.fstat(stream.fileno()).st_size
    if size <= MAX_PAGE_BYTES:
        rest = _read_at_most(stream, MAX_PAGE_BYTES + 1 - len(head))
        size = len(head) + len(rest)  # the file may have grown since
        if size <= MAX_PAGE_BYTES:
            return head + rest
    raise UnreadFileError(
        f"starts like a cache page but is {size / 2**20:,.0f} MiB, more than any page "
        f"can be ({MAX_PAGE_BYTES // 2**20} MiB); skipped without reading it"
    )


def _read_at_most(stream: BinaryIO, limit: int) -> bytes:
    """The rest of the stream up to `limit` bytes, read in chunks: a large `read(n)`
    would allocate `n` bytes whatever the file holds."""
    chunks = []
    while limit > 0 and (chunk := stream.read(min(limit, _CHUNK_BYTES))):
        chunks.append(chunk)
        limit -= len(chunk)
    return b"".join(chunks)


def _sniff(head: bytes) -> None:
    """Raise unless a file starting with `head` (and longer) may be a page.

    Its complete lines are read as `parse_page` reads them: no '---' first, a line
    that is not front matter, or front matter closed without `layout: cache` decide
    that it is not one. Front matter still open at the end of `head` may be a page.
    """
    lines = head.decode("utf-8", "replace").removeprefix(_BOM).split("\n")[:-1]
    _check_start(lines)
    front = _front_matter(lines)
    if front.closed and front.values.get("layout", "").strip() != "cache":
        raise NotAPageError(_other_layout(front.values.get("layout")))


def parse_page(text: str, path: str) -> Page:
    """Parse page text; `path` only names the page in problems.

    A UTF-8 byte order mark before the first '---' is ignored, as Jekyll ignores it.
    """
    lines = text.removeprefix(_BOM).split("\n")
    _check_start(lines)
    front = _front_matter(lines)
    if not front.closed:
        raise PageError("front matter is not closed by a '---' line")
    values = front.values
    if values.get("layout", "").strip() != "cache":
        raise NotAPageError(_other_layout(values.get("layout")))
    package = _title(_require(values, "title"))
    tag = _tag(_require(values, "categories"))
    if "spec_details" not in values:
        if "spec_names" in values or "spec_files" in values:
            raise PageError(
                "unsupported legacy format (spec_names without spec_details, as written "
                "before 2023); the page was skipped"
            )
        raise PageError("missing key 'spec_details'")
    details = _json(values["spec_details"], "spec_details")
    if not isinstance(details, list):
        raise PageError(f"'spec_details' must be a JSON list, not {kind_of(details)}")
    page = Page(path=path, package=package, tag=tag, specs=[])
    page.problems.extend(_repeated_keys(front, path))
    for position, item in enumerate(details):
        try:
            page.specs.append(spec_record(item, package, tag))
        except ValueError as exc:
            page.problems.append(Problem(path, f"spec #{position + 1} skipped: {exc}"))
    if "meta" in values:
        page.problems.extend(_meta_disagreements(values["meta"], details, page))
    return page


@dataclass
class _FrontMatter:
    """The `key: value` lines of a front matter (the last of a repeated key), the line
    numbers of each key, and whether its closing '---' was seen."""

    values: dict[str, str] = field(default_factory=dict)
    lines: dict[str, list[int]] = field(default_factory=dict)
    closed: bool = False


def _check_start(lines: list[str]) -> None:
    if not lines or lines[0].rstrip("\r") != "---":
        raise NotAPageError("no front matter (a page starts with a '---' line)")


def _front_matter(lines: list[str]) -> _FrontMatter:
    """Read front matter lines after the first '---', up to the closing '---' or the
    end of `lines`; a repeated key keeps its last value, as YAML (and Jekyll) do."""
    front = _FrontMatter()
    key = None
    for number, raw_line in enumerate(lines[1:], start=2):
        line = raw_line.rstrip("\r")
        if line == "---":
            front.closed = True
            break
        if match := _KEY_LINE.match(line):
            key = match.group(1)
            front.values[key] = match.group(2) or ""
            front.lines.setdefault(key, []).append(number)
        elif key is not None and (line.startswith((" ", "-", "\t")) or not line):
            front.values[key] += "\n" + line
        else:
            raise PageError(f"line {number}: expected 'key: value' in the front matter")
    return front


def _enumerate(numbers: list[int]) -> str:
    """`4, 9 and 12`."""
    *first, last = map(str, numbers)
    return f"{', '.join(first)} and {last}"


def _other_layout(layout: str | None) -> str:
    return f"front matter has layout {layout!r}, not 'cache'"


def _repeated_keys(front: _FrontMatter, path: str) -> list[Problem]:
    """A key given twice is a mistake (a bad merge, two pages pasted together): say so."""
    return [
        Problem(
            path,
            f"key {key!r} appears {len(numbers)} times in the front matter (lines "
            f"{_enumerate(numbers)}); only the last is used, as Jekyll reads the page",
        )
        for key, numbers in front.lines.items()
        if len(numbers) > 1
    ]


def _require(front: dict[str, str], key: str) -> str:
    if key not in front or not front[key].strip():
        raise PageError(f"missing key {key!r}")
    return front[key].strip()


def _title(value: str) -> str:
    if value.startswith('"'):
        title = _json(value, "title")
        if not isinstance(title, str):
            raise PageError("'title' must be a string")
    else:
        title = value.strip("'")
    if not title or any(c.isspace() for c in title):
        raise PageError(f"'title' must be a package name, got {title!r}")
    return title


def _tag(value: str) -> str:
    if not (value.startswith("[") and value.endswith("]")):
        raise PageError(f"'categories' must be a list like [package, develop], got {value!r}")
    items = [item.strip().strip("'\"") for item in value[1:-1].split(",")]
    if len(items) < 2 or not items[1]:
        raise PageError(f"'categories' names no tag (its second item), got {value!r}")
    return items[1]


def _json(value: str, key: str) -> Any:
    try:
        return orjson.loads(value)
    except orjson.JSONDecodeError as exc:
        raise PageError(f"{key!r} is not valid JSON: {exc}") from exc


def _meta_disagreements(raw: str, details: list[Any], page: Page) -> list[Problem]:
    """Compare `meta` with what `spec_details` says; spec_details is the truth."""
    try:
        meta = _json(raw, "meta")
    except PageError as exc:
        return [Problem(page.path, f"{exc}; ignored, spec_details are used")]
    if not isinstance(meta, dict):
        return [Problem(page.path, f"'meta' must be a JSON object, not {kind_of(meta)}; ignored")]
    problems = []

    def disagree(what: str, meta_says: object, specs_say: object) -> None:
        problems.append(
            Problem(
                page.path,
                f"meta disagrees with spec_details on {what}: meta says {meta_says}, "
                f"spec_details say {specs_say}; using spec_details",
            )
        )

    num_specs = len(details)
    if "num_specs" in meta and meta["num_specs"] != num_specs:
        disagree("num_specs", meta["num_specs"], num_specs)
    by_stack: dict[str, int] = {}
    for spec in page.specs:
        for stack in spec.stacks:
            by_stack[stack] = by_stack.get(stack, 0) + 1
    if "num_specs_by_stack" in meta and meta["num_specs_by_stack"] != by_stack:
        disagree("num_specs_by_stack", meta["num_specs_by_stack"], by_stack)
    if "stacks" in meta and _as_set(meta["stacks"]) != set(by_stack):
        disagree("stacks", sorted(_as_set(meta["stacks"])), sorted(by_stack))
    # `meta` summarises some facets under their own names: each one present is checked.
    for spec_field in SPEC_FIELDS:
        facet = spec_field.facet
        if facet is None or facet not in meta:
            continue
        actual = {spec_field.value(spec) for spec in page.specs}
        claimed = _as_set(meta[facet])
        if _normalized(spec_field, claimed) != actual:
            disagree(facet, sorted(claimed), sorted(actual))
    return problems


def _normalized(field: SpecField, texts: set[str]) -> set[str]:
    """What `meta` says, as the field's values (meta lists compilers as pages wrote them)."""
    if field.name != "compiler":
        return texts
    normalized = set()
    for text in texts:
        try:
            normalized.add(parse_compiler(text).normalized)
        except ValueError:
            normalized.add(text)
    return normalized


def _as_set(value: object) -> set[str]:
    return {str(v) for v in value} if isinstance(value, list) else {repr(value)}
