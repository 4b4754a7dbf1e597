"""How to serve, declared once: the CLI sets it, uvicorn's workers read it from the environment."""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from cachegql.schema import DEFAULT_MAX_COST, DEFAULT_MAX_FIRST
from cachegql.server.admission import DEFAULT_MAX_REQUESTS
from cachegql.server.body import DEFAULT_MAX_BYTES, DEFAULT_TIMEOUT
from cachegql.server.offload import DEFAULT_THREADS, DEFAULT_TIME_BUDGET

__all__ = ["ENV_PREFIX", "Settings"]

ENV_PREFIX = "CACHEGQL_"


@dataclass(frozen=True)
class Settings:
    """Everything `cachegql serve` can be told; each field is also `CACHEGQL_<NAME>`."""

    index: Path
    default_tag: str | None = None
    max_first: int = DEFAULT_MAX_FIRST
    reload_interval: float = 2.0
    """Seconds between looks for a newly published index; 0: never."""
    response_cache_mb: float = 64.0
    """Memory for whole answers to repeated requests, per worker; 0: no response cache."""
    cache_max_age: int = 60
    """`Cache-Control: public, max-age=N` on GET answers, for browsers and CDNs; 0: no-cache."""
    cors_origins: tuple[str, ...] = ()
    """Origins whose pages may call the API from a browser (`*`: any); none by default."""
    gzip_min_bytes: int = 1024
    """Answers at least this long are gzipped for clients that accept it; 0: never."""
    persisted_queries: int = 10_000
    """How many automatic persisted queries each worker remembers (least recent dropped)."""
    log_format: Literal["text", "json"] = "text"
    access_log: bool = True
    max_cost: int = DEFAULT_MAX_COST
    """The price a query may have (`schema/limits.py`); above, QUERY_TOO_COMPLEX."""
    time_budget: float = DEFAULT_TIME_BUDGET
    """Seconds a query may run; then it is stopped with QUERY_TOO_COMPLEX."""
    threads: int = DEFAULT_THREADS
    """Worker threads per worker process for queries that read the index at length."""
    max_body_bytes: int = DEFAULT_MAX_BYTES
    """The largest request body (and GET query string) accepted; above, 413 (414)."""
    read_timeout: float = DEFAULT_TIMEOUT
    """Seconds a request's head, and then its body, may take to arrive."""
    max_requests: int = DEFAULT_MAX_REQUESTS
    """GraphQL requests in progress per worker; beyond, 503 with Retry-After."""
    compiled: bool = True
    """Answer queries through compiled plans (`schema/direct.py`); else strawberry's and
    graphql-core's execution for all."""
    inline: bool = True
    """Run on the event loop the compiled operations priced and estimated cheap
    (`schema/inline.py`); else only short documents without connections."""

    def to_env(self) -> dict[str, str]:
        env = {}
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if value is None:  # set empty: one already in the environment must not count
                text = ""
            elif isinstance(value, tuple):
                text = ",".join(value)
            else:
                text = str(value)
            env[ENV_PREFIX + field.name.upper()] = text
        return env

    @classmethod
    def from_env(cls) -> Settings:
        values: dict[str, object] = {}
        for field in dataclasses.fields(cls):
            text = os.environ.get(ENV_PREFIX + field.name.upper())
            if text is None:
                continue
            default = field.default
            if field.name == "index":
                values[field.name] = Path(text)
            elif isinstance(default, bool):
                values[field.name] = text == "True"
            elif isinstance(default, int):
                values[field.name] = int(text)
            elif isinstance(default, float):
                values[field.name] = float(text)
            elif isinstance(default, tuple):
                values[field.name] = tuple(t for t in text.split(",") if t)
            else:
                values[field.name] = text or None
        return cls(**values)  # type: ignore[arg-type]
