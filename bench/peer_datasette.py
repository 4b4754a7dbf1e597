"""The benchmark's peer: datasette + datasette-graphql over the same pages, loaded into SQLite.

Two ways to use this file:

* As a library, imported by bench/run.py under the project venv (.venv), which has no datasette:
  only the standard library is imported at module level. `build_database` and `start_server`
  run datasette's side as subprocesses of the benchmark venv's python (.venv-bench, installed
  from bench/requirements.lock).
* As a script under .venv-bench: `python bench/peer_datasette.py load PAGES DB` loads the pages
  with sqlite-utils and prints its statistics as one JSON line (what `build_database` runs);
  `python bench/peer_datasette.py check DB --port 8901` serves DB, runs every query of QUERIES
  with `sample_params` and prints the answers.

The database (a user of datasette would model the pages this way):

* `packages(id INTEGER PRIMARY KEY, tag, name, num_specs)`, unique on (tag, name), with an FTS5
  index on `name` (sqlite-utils `enable_fts`; the default unicode61 tokenizer splits
  "py-torch-scatter" into py, torch, scatter).
* `specs(tag, hash, name, version, compiler, compiler_name, os, platform, target, variants,
  stacks, package_id)`, primary key (tag, hash); `compiler` is normalized ("gcc@=11.4.0" is
  stored "gcc@11.4.0"), `version` is the first of the page's `versions`, `variants` and `stacks`
  are the page's strings joined by single spaces ("+mpi ~shared cuda_arch=70,80"), and
  `package_id` is a foreign key to packages.id, which gives datasette-graphql its nested
  `packages { specs_list }` field.
* Indexes: (tag, hash COLLATE NOCASE) and (hash COLLATE NOCASE) so that datasette's `startswith`
  filter (a case-insensitive `LIKE 'abc%'`) is an index range, not a scan; (tag, name, hash) and
  (package_id, tag, hash), which also deliver a package's specs in primary-key order (datasette's
  default order) without sorting; target, compiler, os and platform; then ANALYZE.

A spec hash seen twice in one tag keeps its first row (INSERT OR IGNORE), as cachegql does.

What datasette-graphql cannot express (capability differences, not tuning):

* Variant semantics. A column of space-joined strings only matches text: `cuda_arch=80` does not
  find `cuda_arch=70,80`, `+x` and `~x` are not booleans, `k:=v` is not `k=v`. The plugin's
  `contains` is a substring test (`~ifpack` also matches `~ifpack_knem`), hence `where:` below.
* Typos: FTS5 has no fuzzy matching ("torch scater" finds nothing); no relevance ranking either
  (datasette orders search results by primary key).
* Facets (counts over the whole result) and per-stack aggregates: the plugin passes `_nofacet=1`
  and has no aggregate fields; each would be one more query through datasette's SQL API.
* A default tag, Spack spec syntax, ambiguity errors for hash prefixes, cursors bound to a query.
* Cost: every table field is one internal request to datasette's JSON API, which also runs a
  `count(*)` of the filtered rows whether or not `totalCount` is asked for.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sqlite3
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sqlite_utils import Database

BENCH_DIR = Path(__file__).resolve().parent
BENCH_PYTHON = BENCH_DIR.parent / ".venv-bench" / "bin" / "python"
PLUGINS_DIR = BENCH_DIR / "datasette_plugins"
METADATA_PATH = BENCH_DIR / "datasette_metadata.json"
HOST = "127.0.0.1"

# datasette settings for the benchmark. num_sql_threads is datasette's default (3), set
# explicitly so that it shows in the command line: SQLite releases the GIL while it runs a query.
DATASETTE_SETTINGS: dict[str, str] = {
    "sql_time_limit_ms": "10000",
    "default_page_size": "20",
    "num_sql_threads": "3",
}

SPEC_COLUMNS = (
    "tag",
    "hash",
    "name",
    "version",
    "compiler",
    "compiler_name",
    "os",
    "platform",
    "target",
    "variants",
    "stacks",
    "package_id",
)
SPEC_INDEXES: tuple[tuple[str, ...], ...] = (
    ("tag", "name", "hash"),
    ("package_id", "tag", "hash"),
    ("target",),
    ("compiler",),
    ("os",),
    ("platform",),
)
# sqlite-utils' create_index cannot name a collation; these are plain SQL.
NOCASE_INDEXES = (
    "CREATE INDEX idx_specs_tag_hash_nocase ON specs (tag, hash COLLATE NOCASE)",
    "CREATE INDEX idx_specs_hash_nocase ON specs (hash COLLATE NOCASE)",
)
BATCH_SIZE = 1000  # sqlite-utils caps a statement at 999 variables: 83 rows of 12 columns

# ---------------------------------------------------------------------------------------------
# The queries, both sides. bench/run.py fills the placeholders with str.format(**params), so the
# GraphQL braces are doubled. Placeholder values go inside GraphQL string literals (and, for
# {variant}, inside an SQL string literal): they must not contain ", ' or %. Every query is
# about DEFAULT_TAG: cachegql's default tag (no `tag:` argument), which datasette, having no
# notion of a default, names in a filter (`tag: {eq: "develop"}`).

DEFAULT_TAG = "develop"

PLACEHOLDERS: dict[str, str] = {
    "hash7": "the first 7 characters of a spec hash in that tag, lower case, e.g. 22xi27u",
    "package": "an exact package name in that tag, e.g. py-torch",
    "target": "an exact target, e.g. x86_64_v3",
    "variant": "one variant exactly as pages write it: +mpi, ~shared, build_system=cmake;"
    " single-valued (datasette matches the text, see the module notes)",
    "words": 'full-text search words for packages, e.g. "torch scatter"',
    "typo_words": 'the same words with a typo, e.g. "torch scater"',
}

CACHEGQL_QUERIES: dict[str, str] = {
    "hash_prefix": (
        '{{ spec(hash: "{hash7}") {{ hash name version compiler {{ name version }} os target }} }}'
    ),
    "package_specs": (
        '{{ package(name: "{package}") {{'
        " name numSpecs specs(first: 20) {{ nodes {{ hash version target }} }} }} }}"
    ),
    "selective_page": (
        '{{ specs(filter: {{ package: {{ eq: "{package}" }},'
        ' target: {{ eq: "{target}" }}, variants: ["{variant}"] }}, first: 20) {{'
        " totalCount nodes {{ hash name version }} }} }}"
    ),
    "package_search": (
        '{{ packages(search: "{words}", first: 20) {{ totalCount nodes {{ name }} }} }}'
    ),
    "package_search_typo": (
        '{{ packages(search: "{typo_words}", first: 20) {{ totalCount nodes {{ name }} }} }}'
    ),
}

# datasette-graphql (auto_camelcase off, its default: fields keep the column names).
# hash_prefix: `first: 2` so that an ambiguous prefix shows as two rows (cachegql answers
#   AMBIGUOUS_HASH_PREFIX); `startswith` is `hash LIKE 'abc1234%'`, an index range here.
# package_specs: the nested form through the package_id foreign key (`specs_list`).
# selective_page: the plugin's filters have no token match for a space-joined column
#   (`contains: "+mpi"` is LIKE '%+mpi%', which also matches "+mpich"), so the variant test is
#   the plugin's `where:` argument (raw SQL, allowed because datasette lets anyone execute SQL by
#   default). It matches a whole variant; it cannot express cuda_arch=80 inside cuda_arch=70,80.
# package_search / _typo: `search:` is datasette's `_search`: FTS5 MATCH with every word quoted
#   ("torch" "scatter"), all words required, results in primary-key order (no relevance ranking),
#   no typo tolerance: "scater" matches nothing.
QUERIES: dict[str, str] = {
    "hash_prefix": (
        '{{ specs(filter: {{ tag: {{ eq: "develop" }}, hash: {{ startswith: "{hash7}" }} }},'
        " first: 2) {{ nodes {{ hash name version compiler os target }} }} }}"
    ),
    "package_specs": (
        '{{ packages(filter: {{ tag: {{ eq: "develop" }}, name: {{ eq: "{package}" }} }},'
        " first: 1) {{ nodes {{ name num_specs"
        " specs_list(first: 20) {{ nodes {{ hash version target }} }} }} }} }}"
    ),
    "selective_page": (
        '{{ specs(filter: {{ tag: {{ eq: "develop" }}, name: {{ eq: "{package}" }},'
        ' target: {{ eq: "{target}" }} }},'
        " where: \"(' ' || variants || ' ') LIKE '% {variant} %'\", first: 20) {{"
        " totalCount nodes {{ hash name version }} }} }}"
    ),
    "package_search": (
        '{{ packages(search: "{words}", filter: {{ tag: {{ eq: "develop" }} }}, first: 20) {{'
        " totalCount nodes {{ name }} }} }}"
    ),
    "package_search_typo": (
        '{{ packages(search: "{typo_words}", filter: {{ tag: {{ eq: "develop" }} }}, first: 20) {{'
        " totalCount nodes {{ name }} }} }}"
    ),
}


def render(template: str, params: dict[str, str]) -> str:
    """Fill a query template, refusing values that would break out of their string literal."""
    for key, value in params.items():
        if any(c in value for c in "\"'%\\"):
            raise ValueError(f"placeholder {key}={value!r} contains a quote, % or backslash")
    return template.format(**params)


# ---------------------------------------------------------------------------------------------
# Reading pages (standard library only).


@dataclass(frozen=True)
class Page:
    """The parts of one package page that the peer loads."""

    name: str
    tag: str
    specs: list[dict[str, Any]]


def front_matter(path: Path) -> dict[str, str] | None:
    """The `key: value` lines between the first two `---` lines; None when there are none."""
    fields: dict[str, str] = {}
    with path.open(encoding="utf-8") as f:
        if f.readline().rstrip("\r\n") != "---":
            return None
        for line in f:
            if line.rstrip("\r\n") == "---":
                return fields
            key, sep, value = line.partition(":")
            if sep:
                fields[key.strip()] = value.strip()
    return None


def parse_title(value: str) -> str:
    """`"py-torch"` (a JSON string) or a bare name."""
    return str(json.loads(value)) if value.startswith('"') else value


def parse_tag(value: str) -> str:
    """The second item of `categories: [package, TAG]`."""
    items = [item.strip().strip("\"'") for item in value.strip("[]").split(",")]
    if len(items) < 2 or not items[1]:
        raise ValueError(f"categories has no tag: {value[:80]!r}")
    return items[1]


def read_page(path: Path) -> Page | None:
    """One page, or None when the file is not a cache page (no `layout: cache`)."""
    fields = front_matter(path)
    if fields is None or fields.get("layout") != "cache":
        return None
    specs = json.loads(fields["spec_details"])
    if not isinstance(specs, list):
        raise ValueError("spec_details is not a list")
    return Page(parse_title(fields["title"]), parse_tag(fields["categories"]), specs)


def spec_row(spec: dict[str, Any], page: Page, package_id: int) -> tuple[Any, ...]:
    """One specs row, in SPEC_COLUMNS order."""
    compiler = str(spec["compiler"]).replace("@=", "@")
    return (
        page.tag,
        spec["hash"],
        page.name,
        spec["versions"][0],
        compiler,
        compiler.partition("@")[0],
        spec["os"],
        spec["platform"],
        spec["target"],
        " ".join(spec["variants"]),
        " ".join(spec["stacks"]),
        package_id,
    )


@dataclass
class LoadState:
    """What the loader keeps while streaming: package ids and counts, and the problems seen."""

    packages: dict[tuple[str, str], list[int]] = field(default_factory=dict)
    pages: int = 0
    problems: int = 0

    def package_id(self, page: Page) -> int:
        """The id of the page's (tag, package), counting its specs; a second page adds to it."""
        entry = self.packages.setdefault((page.tag, page.name), [len(self.packages) + 1, 0])
        entry[1] += len(page.specs)
        return entry[0]

    def package_rows(self) -> Iterator[tuple[Any, ...]]:
        """packages rows: (id, tag, name, num_specs), led by the column names."""
        yield ("id", "tag", "name", "num_specs")
        for (tag, name), (package_id, num_specs) in self.packages.items():
            yield (package_id, tag, name, num_specs)


def page_paths(pages_dir: Path) -> list[Path]:
    """Every file under pages_dir, sorted (pages are recognised by content, not by name)."""
    return sorted(p for p in pages_dir.rglob("*") if p.is_file())


def spec_rows(paths: Iterable[Path], state: LoadState) -> Iterator[tuple[Any, ...]]:
    """specs rows of all pages, led by the column names; one page in memory at a time."""
    yield SPEC_COLUMNS
    for path in paths:
        try:
            page = read_page(path)
            if page is None:
                continue
            package_id = state.package_id(page)
            rows = [spec_row(spec, page, package_id) for spec in page.specs]
        except (ValueError, KeyError, TypeError, IndexError) as exc:
            state.problems += 1
            print(f"skipped {path}: {type(exc).__name__}: {exc}", file=sys.stderr)
            continue
        state.pages += 1
        yield from rows


# ---------------------------------------------------------------------------------------------
# Writing the database (runs under .venv-bench: sqlite-utils is imported inside the functions).


def open_for_load(path: Path) -> Database:
    """A new database tuned for one bulk load: no journal, no fsync, a large page cache."""
    from sqlite_utils import Database

    db = Database(path, recreate=True)
    for pragma in (
        "journal_mode = OFF",
        "synchronous = OFF",
        "cache_size = -131072",
        "temp_store = MEMORY",
        "locking_mode = EXCLUSIVE",
    ):
        db.execute(f"PRAGMA {pragma}")
    return db


def create_tables(db: Database) -> None:
    """packages and specs, empty, with their keys."""
    db["packages"].create(
        {"id": int, "tag": str, "name": str, "num_specs": int},
        pk="id",
        not_null={"tag", "name", "num_specs"},
    )
    db["specs"].create(
        {column: str for column in SPEC_COLUMNS[:-1]} | {"package_id": int},
        pk=("tag", "hash"),
        foreign_keys=[("package_id", "packages", "id")],
        not_null=set(SPEC_COLUMNS),
    )


def create_indexes(db: Database) -> None:
    """The indexes a user who reads EXPLAIN QUERY PLAN would add, then ANALYZE."""
    for columns in SPEC_INDEXES:
        db["specs"].create_index(list(columns))
    for sql in NOCASE_INDEXES:
        db.execute(sql)
    db["packages"].create_index(["tag", "name"], unique=True)


def timed(phases: dict[str, float], name: str, start: float) -> float:
    """Record the seconds since start under name; return now."""
    now = time.perf_counter()
    phases[name] = round(now - start, 3)
    return now


def load(pages_dir: Path, db_path: Path, batch_size: int, specs_fts: bool) -> dict[str, Any]:
    """Load every page under pages_dir into a new database at db_path; return statistics."""
    tmp = db_path.with_name(db_path.name + ".tmp")
    db = open_for_load(tmp)
    state = LoadState()
    phases: dict[str, float] = {}
    start = t = time.perf_counter()
    create_tables(db)
    with db.atomic():
        rows = spec_rows(page_paths(pages_dir), state)
        db["specs"].insert_all(rows, batch_size=batch_size, ignore=True)
        db["packages"].insert_all(state.package_rows(), batch_size=batch_size)
    t = timed(phases, "insert", t)
    create_indexes(db)
    t = timed(phases, "indexes", t)
    db["packages"].enable_fts(["name"], fts_version="FTS5")
    if specs_fts:
        db["specs"].enable_fts(["name", "variants"], fts_version="FTS5")
    t = timed(phases, "fts", t)
    db.analyze()
    db.execute("PRAGMA journal_mode = DELETE")
    timed(phases, "analyze", t)
    num_rows = db.execute("SELECT count(*) FROM specs").fetchone()[0]
    db.close()
    tmp.replace(db_path)
    return {
        "load_seconds": round(time.perf_counter() - start, 3),
        "phases": phases,
        "pages": state.pages,
        "problems": state.problems,
        "packages": len(state.packages),
        "rows": num_rows,
        "db_bytes": db_path.stat().st_size,
    }


# ---------------------------------------------------------------------------------------------
# The library side (standard library only).


def build_database(pages_dir: Path, db_path: Path, python: Path = BENCH_PYTHON) -> dict[str, Any]:
    """Load pages_dir into db_path with sqlite-utils, in a subprocess of python (.venv-bench).

    Returns the loader's statistics (rows, db_bytes, pages, packages, problems, phases) plus
    `seconds`, the wall time of the whole subprocess. Skipped pages are reported on stderr.
    """
    cmd = [str(python), str(Path(__file__).resolve()), "load", str(pages_dir), str(db_path)]
    start = time.perf_counter()
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, text=True, check=False)
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        raise RuntimeError(f"loader exited with {proc.returncode}: {' '.join(cmd)}")
    stats: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    stats["seconds"] = round(seconds, 3)
    return stats


def graphql_url(port: int) -> str:
    """The GraphQL endpoint of a peer server on port."""
    return f"http://{HOST}:{port}/graphql"


def post_graphql(port: int, query: str, timeout: float = 30.0) -> dict[str, Any]:
    """POST one query; the decoded answer (datasette-graphql answers 500 when it has errors)."""
    body = json.dumps({"query": query}).encode()
    request = urllib.request.Request(
        graphql_url(port), data=body, headers={"content-type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            answer: dict[str, Any] = json.load(response)
    except urllib.error.HTTPError as exc:
        answer = json.load(exc)
    return answer


def serve_command(db_path: Path, port: int, python: Path) -> list[str]:
    """`datasette serve` with the benchmark's settings; -i opens the database immutable."""
    cmd = [str(python), "-m", "datasette", "serve", "-i", str(db_path)]
    cmd += ["--host", HOST, "--port", str(port)]
    cmd += ["--metadata", str(METADATA_PATH), "--plugins-dir", str(PLUGINS_DIR)]
    for name, value in DATASETTE_SETTINGS.items():
        cmd += ["--setting", name, value]
    return cmd


def wait_until_ready(proc: subprocess.Popen[bytes], port: int, timeout: float) -> bool:
    """Poll /graphql until it answers a query (which also builds the plugin's schema).

    False when the server exited or did not answer within timeout seconds.
    """
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        with contextlib.suppress(OSError, ValueError):
            if post_graphql(port, "{ __typename }", timeout=2.0).get("data"):
                return True
        time.sleep(0.1)
    return False


def start_server(
    db_path: Path,
    port: int,
    python: Path = BENCH_PYTHON,
    timeout: float = 60.0,
    log_path: Path | None = None,
) -> subprocess.Popen[bytes]:
    """Start `datasette serve` on 127.0.0.1:port from python's venv; return once /graphql answers.

    Its output goes to log_path (default: beside the database, `<db>.datasette.log`).
    """
    log_path = log_path or db_path.with_name(db_path.name + ".datasette.log")
    with log_path.open("wb") as log:
        proc = subprocess.Popen(
            serve_command(db_path, port, python), stdout=log, stderr=subprocess.STDOUT
        )
    if not wait_until_ready(proc, port, timeout):
        stop_server(proc)
        raise RuntimeError(
            f"datasette did not answer on {graphql_url(port)} within {timeout} s"
            f" (exit code {proc.returncode}); see {log_path}"
        )
    return proc


def stop_server(proc: subprocess.Popen[bytes], timeout: float = 10.0) -> None:
    """Stop a server started by start_server: SIGTERM, then SIGKILL after timeout seconds."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


VARIANT_MATCH = "(' ' || variants || ' ') LIKE '% ' || ? || ' %'"


def common_plus_variant(conn: sqlite3.Connection, tag: str) -> str:
    """+mpi when the tag has it, else the tag's most common +variant (over a sample)."""
    if conn.execute(
        f"SELECT 1 FROM specs WHERE tag = ? AND {VARIANT_MATCH}", (tag, "+mpi")
    ).fetchone():
        return "+mpi"
    counts: dict[str, int] = {}
    rows = conn.execute(
        "SELECT variants FROM specs WHERE tag = ? AND variants LIKE '%+%' LIMIT 100000", (tag,)
    )
    for (text,) in rows:
        for variant in text.split():
            if variant.startswith("+"):
                counts[variant] = counts.get(variant, 0) + 1
    return min(counts, key=lambda v: (-counts[v], v)) if counts else "+mpi"


def sample_params(db_path: Path, tag: str = DEFAULT_TAG) -> dict[str, str]:
    """Placeholder values that have answers in db_path (read with the standard library).

    hash7 is the smallest unambiguous 7-character prefix of the tag; variant is +mpi when the tag
    has it; package and target are the pair with the most specs carrying that variant.
    """
    with contextlib.closing(sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)) as conn:
        hash7 = conn.execute(
            "SELECT substr(hash, 1, 7) AS p FROM specs WHERE tag = ?"
            " GROUP BY p HAVING count(*) = 1 ORDER BY p LIMIT 1",
            (tag,),
        ).fetchone()[0]
        variant = common_plus_variant(conn, tag)
        package, target = conn.execute(
            f"SELECT name, target FROM specs WHERE tag = ? AND {VARIANT_MATCH}"
            " GROUP BY name, target ORDER BY count(*) DESC, name, target LIMIT 1",
            (tag, variant),
        ).fetchone()
    return {
        "hash7": hash7,
        "package": package,
        "target": target,
        "variant": variant,
        "words": "torch scatter",
        "typo_words": "torch scater",
    }


# ---------------------------------------------------------------------------------------------
# The script side.


def check(db_path: Path, port: int, tag: str) -> int:
    """Serve db_path, run every query of QUERIES with sample_params, print the answers."""
    params = sample_params(db_path, tag)
    print(json.dumps({"params": params}))
    proc = start_server(db_path, port, Path(sys.executable))
    try:
        for name, template in QUERIES.items():
            start = time.perf_counter()
            answer = post_graphql(port, render(template, params))
            ms = (time.perf_counter() - start) * 1000
            print(json.dumps({"query": name, "ms": round(ms, 1), "answer": answer}))
    finally:
        stop_server(proc)
    return 0


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """The script's command line."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    load_p = sub.add_parser("load", help="load pages into a SQLite database (print JSON stats)")
    load_p.add_argument("pages", type=Path)
    load_p.add_argument("db", type=Path)
    load_p.add_argument("--batch-size", type=int, default=BATCH_SIZE)
    load_p.add_argument("--specs-fts", action="store_true", help="also FTS5 on specs name+variants")
    check_p = sub.add_parser("check", help="serve a database and run every query once")
    check_p.add_argument("db", type=Path)
    check_p.add_argument("--port", type=int, default=8901)
    check_p.add_argument("--tag", default=DEFAULT_TAG)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    """Run the `load` or `check` command."""
    args = parse_args(argv)
    if args.command == "load":
        stats = load(args.pages, args.db, args.batch_size, args.specs_fts)
        print(json.dumps(stats))
        return 0
    return check(args.db, args.port, args.tag)


if __name__ == "__main__":
    sys.exit(main())
