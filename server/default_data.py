"""The embedded default data set: generated pages, indexed once into the user's cache."""

from __future__ import annotations

import fcntl
import tempfile
from pathlib import Path

from cachegql.demo import DemoConfig, write_pages
from cachegql.index import FORMAT_VERSION, IndexLoadError, IndexStore, build_index
from cachegql.server.cache_home import cache_folder

__all__ = ["DEFAULT_CONFIG", "default_index", "default_store"]

DEFAULT_CONFIG = DemoConfig()
# Bump when the generator's output changes, so cached default indexes are rebuilt.
GENERATOR_VERSION = 1


def default_index(folder: Path | None = None, config: DemoConfig = DEFAULT_CONFIG) -> Path:
    """The index of the default data, built on first use and reused afterwards.

    Reusing it needs no write access (a container bakes it in as root and serves it as
    another user); only building it takes the lock.
    """
    store = default_store(folder, config)
    store.close()
    return store.path


def default_store(folder: Path | None = None, config: DemoConfig = DEFAULT_CONFIG) -> IndexStore:
    """The index of the default data, opened: built first where it is missing or cannot be
    opened, so that a command serving or querying it opens it once."""
    folder = folder or cache_folder()
    name = (
        f"default-g{GENERATOR_VERSION}-f{FORMAT_VERSION}-"
        f"{config.packages}p-{config.specs}s-{len(config.tags)}t-seed{config.seed}"
    )
    out = folder / name
    store = _opened(out)
    if store is not None:
        return store
    folder.mkdir(parents=True, exist_ok=True)
    # Two servers starting at once must not build it twice.
    with (folder / f"{name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        store = _opened(out)
        if store is None:
            with tempfile.TemporaryDirectory(prefix="cachegql-demo-") as pages:
                write_pages(config, Path(pages))
                build_index([Path(pages)], out, strict=True)
            store = IndexStore(out)
    return store


def _opened(out: Path) -> IndexStore | None:
    """The index at `out`, if it opens (a missing or damaged one is built again)."""
    try:
        return IndexStore(out)
    except IndexLoadError:
        return None
