"""Reading sources into records: finding files, parsing pages, collecting per-tag tables."""

from cachegql.index.ingest.inflate import GZIP_OR_ZLIB, Inflater
from cachegql.index.ingest.ingest import (
    DEFAULT_STACK,
    CacheRequest,
    Ingested,
    StrictModeError,
    TagGraph,
    caches_by_tag,
    ingest,
    ingest_caches,
    ingest_pages,
    ingest_plan,
    plan_sources,
)
from cachegql.index.ingest.limits import LIMITS, Limit, SourceLimits, over_limit, shown
from cachegql.index.ingest.locations import (
    NETWORK_SCHEMES,
    Location,
    NotFoundError,
    Opener,
    OriginError,
    Reader,
    ReadError,
)
from cachegql.index.ingest.oci import INDEX_TAG as OCI_INDEX_TAG
from cachegql.index.ingest.pages import NotAPageError, Page, PageError, parse_page, read_page
from cachegql.index.ingest.sources import Candidate, SourceError, iter_candidates
from cachegql.index.ingest.tables import TagTable

__all__ = [
    "DEFAULT_STACK",
    "GZIP_OR_ZLIB",
    "LIMITS",
    "NETWORK_SCHEMES",
    "OCI_INDEX_TAG",
    "CacheRequest",
    "Candidate",
    "Inflater",
    "Ingested",
    "Limit",
    "Location",
    "NotAPageError",
    "NotFoundError",
    "Opener",
    "OriginError",
    "Page",
    "PageError",
    "ReadError",
    "Reader",
    "SourceError",
    "SourceLimits",
    "StrictModeError",
    "TagGraph",
    "TagTable",
    "caches_by_tag",
    "ingest",
    "ingest_caches",
    "ingest_pages",
    "ingest_plan",
    "iter_candidates",
    "over_limit",
    "parse_page",
    "plan_sources",
    "read_page",
    "shown",
]
