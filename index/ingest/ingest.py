"""Load pages into per-tag tables, merging specs by hash and collecting problems.

Every problem names its file and says what is wrong; the rest still loads.
With `strict=True` the first problem stops the ingest instead.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from cachegql.index.ingest.pages import NotAPageError, Page, PageError, read_page
from cachegql.index.ingest.sources import Candidate, iter_candidates
from cachegql.index.ingest.tables import TagTable
from cachegql.index.records import Problem, SpecRecord

__all__ = ["Ingested", "StrictModeError", "ingest", "ingest_candidates"]


class StrictModeError(Exception):
    """Raised in strict mode on the first problem; carries it."""

    def __init__(self, problem: Problem) -> None:
        super().__init__(str(problem))
        self.problem = problem


@dataclass
class Ingested:
    """What an ingest produced: one table per tag, and everything worth telling."""

    tables: dict[str, TagTable] = field(default_factory=dict)
    pages: int = 0
    page_paths: list[str] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    skipped: list[Problem] = field(default_factory=list)
    merged_duplicates: int = 0

    @property
    def specs(self) -> int:
        return sum(len(t) for t in self.tables.values())


def ingest(sources: Iterable[Path], *, strict: bool = False) -> Ingested:
    """Read every page found in `sources` (files and folders) into per-tag tables."""
    return ingest_candidates(iter_candidates(sources), strict=strict)


def ingest_candidates(
    candidates: Iterable[Candidate],
    *,
    strict: bool = False,
    on_file: Callable[[Path], None] | None = None,
) -> Ingested:
    """Read the given candidate files into per-tag tables."""
    result = Ingested()

    def report(problem: Problem) -> None:
        if strict:
            raise StrictModeError(problem)
        result.problems.append(problem)

    for candidate in candidates:
        if on_file is not None:
            on_file(candidate.path)
        page = _read(candidate, result, report)
        if page is not None:
            _add_page(page, result, report)
    return result


def _read(candidate: Candidate, result: Ingested, report: Callable[[Problem], None]) -> Page | None:
    path = str(candidate.path)
    try:
        return read_page(candidate.path)
    except NotAPageError as exc:
        if candidate.expected:
            report(Problem(path, f"not a cache page: {exc}"))
        else:
            result.skipped.append(Problem(path, f"not a cache page: {exc}"))
    except PageError as exc:
        if candidate.expected or _looks_like_page(candidate.path):
            report(Problem(path, str(exc)))
        else:
            result.skipped.append(Problem(path, f"not a cache page: {exc}"))
    return None


def _looks_like_page(path: Path) -> bool:
    """A file found in a folder is only a broken page if it starts like one."""
    try:
        with path.open("rb") as stream:
            head = stream.read(4096)
    except OSError:
        return False
    return head.startswith(b"---") and b"layout: cache" in head


def _add_page(page: Page, result: Ingested, report: Callable[[Problem], None]) -> None:
    page_id = result.pages
    result.pages += 1
    result.page_paths.append(page.path)
    for problem in page.problems:
        report(problem)
    table = result.tables.get(page.tag)
    if table is None:
        table = result.tables[page.tag] = TagTable(page.tag)
    for spec in page.specs:
        earlier = table.add(spec, page_id)
        if earlier is None:
            continue
        kept = table.record(earlier)
        if kept == spec:
            result.merged_duplicates += 1
            continue
        first_path = result.page_paths[table.source_page[earlier]]
        differing = [
            name for name in SpecRecord.__slots__ if getattr(kept, name) != getattr(spec, name)
        ]
        report(
            Problem(
                page.path,
                f"hash {spec.hash} in tag {page.tag} was already read from {first_path} "
                f"with different {', '.join(differing)}; kept the first",
            )
        )
