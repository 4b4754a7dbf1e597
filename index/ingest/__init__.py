"""Reading sources into records: finding files, parsing pages, collecting per-tag tables."""

from cachegql.index.ingest.ingest import Ingested, StrictModeError, ingest, ingest_candidates
from cachegql.index.ingest.pages import NotAPageError, Page, PageError, parse_page, read_page
from cachegql.index.ingest.sources import Candidate, SourceError, iter_candidates
from cachegql.index.ingest.tables import TagTable

__all__ = [
    "Candidate",
    "Ingested",
    "NotAPageError",
    "Page",
    "PageError",
    "SourceError",
    "StrictModeError",
    "TagTable",
    "ingest",
    "ingest_candidates",
    "iter_candidates",
    "parse_page",
    "read_page",
]
