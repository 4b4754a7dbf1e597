"""How much work one source may cost the indexer: declared once, here.

Every source read from the network is somebody else's file: it may be endless, trickle,
decompress to a thousand times its size or name a hundred thousand more sources. Each
bound below turns such a source into one problem line that names it and the limit, while
the rest still loads. `cachegql index` derives its flags from `LIMITS`,
docs/indexing/remote.md lists them from the same table, and the readers (server/fetch.py
for http(s)) enforce them.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Final

__all__ = [
    "EXPANSION_FLOOR",
    "JSON_MAX_DEPTH",
    "LIMITS",
    "Limit",
    "SourceLimits",
    "flag_of",
    "over_limit",
]

GIB = 1 << 30
# orjson refuses deeper documents itself, without recursing in Python: Spack's own
# files nest fewer than ten levels, so this bound is never met by a real source.
JSON_MAX_DEPTH: Final = 1024
# Bodies smaller than this decompressed are never refused for their expansion ratio.
EXPANSION_FLOOR: Final = 16 << 20


@dataclass(frozen=True, slots=True)
class Limit:
    """One bound: its field, command-line flag, unit and what it bounds."""

    field: str
    flag: str
    metavar: str
    help: str


@dataclass(frozen=True, slots=True)
class SourceLimits:
    """The bounds in force for one `cachegql index` run (defaults sized from the real
    thing: Spack's develop index.json was 80 MB of JSON; the public listing names a few
    hundred stacks)."""

    max_bytes: int = GIB
    """Largest body one read may have, after decompression."""
    max_seconds: float = 600.0
    """Longest one source may take in all: every read of it, with its connection,
    redirects, retries and body."""
    max_redirects: int = 5
    """Redirects followed for one read."""
    max_expansion: int = 200
    """How many times its compressed size a body may decompress to (past 16 MiB)."""
    max_fetches: int = 4
    """Reads from the network in flight at once."""
    max_listing_entries: int = 10_000
    """Stacks one listing may name, over all of its tags."""

    def __post_init__(self) -> None:
        for item in fields(self):
            if getattr(self, item.name) <= 0:
                raise ValueError(f"{_FLAGS[item.name]} must be positive")


LIMITS: Final = (
    Limit("max_bytes", "--max-source-bytes", "BYTES", "largest body of one read, decompressed"),
    Limit(
        "max_seconds",
        "--source-time-limit",
        "SECONDS",
        "longest one source may take in all: every read of it, with connections, "
        "redirects, retries and bodies",
    ),
    Limit("max_redirects", "--max-redirects", "N", "redirects followed for one read"),
    Limit(
        "max_expansion",
        "--max-expansion",
        "RATIO",
        "how many times its compressed size a body may grow when decompressed "
        "(checked past 16 MiB)",
    ),
    Limit("max_fetches", "--max-fetches", "N", "reads from the network in flight at once"),
    Limit(
        "max_listing_entries",
        "--max-listing-entries",
        "N",
        "stacks one listing may name, over all of its tags",
    ),
)
_FLAGS = {limit.field: limit.flag for limit in LIMITS}


def shown(value: float) -> str:
    """A limit's value as the help and the docs show it: `1 GiB`, `10,000`, `600`."""
    if isinstance(value, int) and value >= 1 << 20 and value % (1 << 20) == 0:
        return f"{value >> 20:,} MiB" if value % (1 << 30) else f"{value >> 30:,} GiB"
    return f"{value:,g}"


def flag_of(field: str) -> str:
    """The command-line flag that sets `field`, for messages that teach."""
    return _FLAGS[field]


def over_limit(decoded: int, encoded: int | None, limits: SourceLimits) -> str | None:
    """Why a body `decoded` bytes long so far (from `encoded` compressed bytes, or None
    when it was not compressed) must be refused; None while it is within the limits."""
    if decoded > limits.max_bytes:
        return f"is larger than {limits.max_bytes:,} bytes ({flag_of('max_bytes')})"
    if (
        encoded is not None
        and decoded > EXPANSION_FLOOR
        and decoded > limits.max_expansion * max(encoded, 1)
    ):
        return (
            f"decompresses to over {limits.max_expansion} times its compressed size "
            f"({decoded:,} bytes from {encoded:,}; {flag_of('max_expansion')}): "
            "a compression bomb"
        )
    return None
