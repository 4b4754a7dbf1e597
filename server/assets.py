"""Files served from the package: GraphiQL's (`playground`) and the web front end's (`frontend`).

One mechanism for both: starlette's StaticFiles (an ETag and Last-Modified on each file, 304
to a matching If-None-Match, nothing outside its folder), plus a year of immutable caching
for files whose URL changes whenever their bytes do: a folder named with a package's version,
or a URL that carries a digest of the files. The pages that load these files load nothing
from any other origin, so they work where no CDN can be reached.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from pathlib import Path

from starlette.responses import Response
from starlette.staticfiles import StaticFiles
from starlette.types import Scope

__all__ = ["IMMUTABLE", "STATIC_DIR", "Assets", "digest"]

STATIC_DIR = Path(__file__).parent / "static"
IMMUTABLE = "public, max-age=31536000, immutable"


class Assets(StaticFiles):
    """The files under `directory`; those for which `immutable(path)` holds are cached for a
    year, the others revalidated with their ETag."""

    def __init__(self, directory: Path, immutable: Callable[[Path], bool]) -> None:
        # An editable install (setuptools' strict mode) is a tree of links to the sources.
        super().__init__(directory=directory, follow_symlink=True)
        self.immutable = immutable

    def file_response(
        self,
        full_path: str | os.PathLike[str],
        stat_result: os.stat_result,
        scope: Scope,
        status_code: int = 200,
    ) -> Response:
        response = super().file_response(full_path, stat_result, scope, status_code)
        if self.immutable(Path(full_path)):
            response.headers["Cache-Control"] = IMMUTABLE
        return response


def digest(folder: Path, length: int = 12) -> str:
    """A digest of every file under `folder`, names and bytes: a URL that carries it changes
    whenever a file does, so what it names can be cached as immutable."""
    sha = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        name = path.relative_to(folder).as_posix().encode()
        data = path.read_bytes()
        sha.update(b"%d:%s%d:" % (len(name), name, len(data)))
        sha.update(data)
    return sha.hexdigest()[:length]
