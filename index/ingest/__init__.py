"""Reading sources into records: finding files, parsing pages, collecting per-tag tables."""

from cachegql.index.ingest.ingest import (
    DEFAULT_STACK,
    Ingested,
    StrictModeError,
    TagGraph,
    ingest,
    ingest_plan,
    plan_sources,
)
from cachegql.index.ingest.locations import Location, NotFoundError, Opener, Reader, ReadError
from cachegql.index.ingest.oci import INDEX_TAG as OCI_INDEX_TAG
from cachegql.index.ingest.pages import NotAPageError, Page, PageError, parse_page, read_page
from cachegql.index.ingest.sources import Candidate, SourceError, iter_candidates
from cachegql.index.ingest.tables import TagTable

__all__ = [
    "DEFAULT_STACK",
    "OCI_INDEX_TAG",
    "Candidate",
    "Ingested",
    "Location",
    "NotAPageError",
    "NotFoundError",
    "Opener",
    "Page",
    "PageError",
    "ReadError",
    "Reader",
    "SourceError",
    "StrictModeError",
    "TagGraph",
    "TagTable",
    "ingest",
    "ingest_plan",
    "iter_candidates",
    "parse_page",
    "plan_sources",
    "read_page",
]
