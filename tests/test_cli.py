"""The `cachegql` command as a user runs it: a real subprocess, its exit code, stdout and stderr."""

from __future__ import annotations

import argparse
import io
import os
import re
import signal
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path
from typing import Any

import pytest

from cachegql.index import IndexStore
from cachegql.schema import DEFAULT_MAX_FIRST
from cachegql.server.progress import ProgressBar
from tests.conftest import CLI, PAGES
from tests.page_factory import page_text, spec, write_page

ROOT = Path(__file__).resolve().parents[1]
SUMMARY = re.compile(
    r"^indexed (\d+) pages?, (\d+) specs?, (\d+) tags?, (\d+) problems? in (\d+\.\d) s, "
    r"peak RSS (\d+) MB -> (.+)$"
)
SUBCOMMANDS = ["index", "serve", "demo-data", "query", "check", "schema"]


def cachegql(*args: str | Path) -> subprocess.CompletedProcess[str]:
    """Run the installed `cachegql ARGS` from the project folder."""
    return subprocess.run(
        [CLI, *map(str, args)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )


def _summary(stdout: str) -> tuple[int, int, int, int, str]:
    """The numbers and output path of the summary line, the last line of stdout."""
    match = SUMMARY.match(stdout.strip().splitlines()[-1])
    assert match, f"no summary line in stdout: {stdout!r}"
    pages, specs, tags, problems, _, peak, out = match.groups()
    assert int(peak) > 0, "the build states its peak memory"
    return int(pages), int(specs), int(tags), int(problems), out


def test_index_prints_summary_line(
    tmp_path: Path, expected: dict[str, dict[str, dict[str, Any]]]
) -> None:
    """`index` exits 0 and stdout ends with 'indexed N pages, M specs, T tags, P problems ...'."""
    out = tmp_path / "ix"
    result = cachegql("index", PAGES, "--out", out)
    assert result.returncode == 0, result.stderr
    specs = sum(len(by_hash) for by_hash in expected.values())
    assert _summary(result.stdout) == (6, specs, len(expected), 1, str(out))
    assert "Traceback" not in result.stderr
    store = IndexStore(out)
    try:
        assert store.manifest["specs"] == specs
    finally:
        store.close()


@pytest.mark.skipif(sys.platform != "linux", reason="VmHWM and the inherited ru_maxrss are Linux's")
def test_the_peak_memory_a_build_states_is_its_own(tmp_path: Path) -> None:
    """Not that of the process that ran it: Linux keeps a forked process's `ru_maxrss`
    across exec, so a build run by a benchmark holding 400 MB said 400 MB."""
    held = bytearray(400 << 20)
    held[:: 1 << 12] = b"x" * len(held[:: 1 << 12])  # resident, page by page
    result = cachegql("index", PAGES, "--out", tmp_path / "ix")
    del held
    assert result.returncode == 0, result.stderr
    summary = SUMMARY.match(result.stdout.strip().splitlines()[-1])
    assert summary is not None, result.stdout
    assert 0 < int(summary.group(6)) < 300


def test_a_progress_bar_writes_to_stderr_as_it_is_when_made(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Not to the stderr of when its module was imported: that one may be closed since (a
    test's capture: `cachegql index` in process then failed with "I/O operation on closed
    file")."""
    replaced = io.StringIO()
    monkeypatch.setattr(sys, "stderr", replaced)
    bar = ProgressBar("reading sources")
    assert bar.stream is replaced and not bar.enabled
    bar(1, 2)
    assert replaced.getvalue() == ""  # not a terminal: silent


def test_index_reports_problems_on_stderr_naming_files(tmp_path: Path) -> None:
    """Each problem is a stderr line naming the file; stdout holds only the summary."""
    bad_spec = write_page(tmp_path / "src" / "a" / "specs.md", page_text([spec(size="abc")]))
    bad_page = write_page(tmp_path / "src" / "b" / "specs.md", page_text(categories="[package]"))
    write_page(tmp_path / "src" / "c" / "specs.md", page_text([spec("good")]))
    result = cachegql("index", tmp_path / "src", PAGES, "--out", tmp_path / "ix")
    assert result.returncode == 0, result.stderr
    assert result.stdout.count("\n") == 1
    assert _summary(result.stdout)[3] == 3
    problems = [line for line in result.stderr.splitlines() if line.startswith("problem: ")]
    assert len(problems) == 3, result.stderr
    assert any(str(bad_spec) in line and "'size'" in line for line in problems)
    assert any(str(bad_page) in line and "names no tag" in line for line in problems)
    assert any("py-black/specs.md" in line and "legacy" in line for line in problems)


def test_index_quiet_prints_only_the_summary(tmp_path: Path) -> None:
    """--quiet: the summary on stdout, nothing on stderr."""
    result = cachegql("index", PAGES, "--out", tmp_path / "ix", "--quiet")
    assert result.returncode == 0
    assert result.stderr == ""
    assert _summary(result.stdout)[:3] == (6, 36, 2)


def test_index_strict_exits_1_and_publishes_nothing(tmp_path: Path) -> None:
    """--strict on a source with a legacy page: exit 1, 'error (--strict)' naming the file."""
    out = tmp_path / "ix"
    result = cachegql("index", PAGES, "--out", out, "--strict")
    assert result.returncode == 1
    assert result.stdout == ""
    assert result.stderr.startswith("error (--strict): ")
    assert "py-black/specs.md" in result.stderr
    assert "nothing was published" in result.stderr
    assert "Traceback" not in result.stderr
    assert not out.exists()


def test_index_missing_source_exits_1_with_clear_message(tmp_path: Path) -> None:
    """A source that does not exist: exit 1, one 'error:' line naming it, no traceback."""
    missing = tmp_path / "no-such-folder"
    result = cachegql("index", missing, "--out", tmp_path / "ix")
    assert result.returncode == 1
    assert result.stderr.strip() == f"error: {missing}: no such file or folder"
    assert result.stdout == ""


def test_index_without_specs_exits_1_with_clear_message(tmp_path: Path) -> None:
    """Only non-pages: exit 1, 'no specs found ... nothing was published', no traceback."""
    result = cachegql("index", PAGES / "README.md", "--out", tmp_path / "ix")
    assert result.returncode == 1
    assert result.stderr.startswith("error: no specs found")
    assert "nothing was published" in result.stderr
    assert "Traceback" not in result.stderr


def test_index_refuses_plain_folder_at_out(tmp_path: Path) -> None:
    """--out naming a folder with files: exit 1, the folder is left as it was."""
    out = tmp_path / "ix"
    write_page(out / "keep.txt", "mine\n")
    result = cachegql("index", PAGES, "--out", out)
    assert result.returncode == 1
    assert "not an index link" in result.stderr
    assert "Traceback" not in result.stderr
    assert [p.name for p in out.iterdir()] == ["keep.txt"]


@pytest.mark.parametrize("command", SUBCOMMANDS)
def test_subcommand_help(command: str) -> None:
    """`cachegql COMMAND --help` exits 0 with a usage line naming the command, a
    description wrapped to the terminal (80 columns here), and help for every option."""
    result = cachegql(command, "--help")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"usage: cachegql {command}")
    description = result.stdout.split("\n\n")[1]
    assert not description.startswith(("positional arguments:", "options:")), "no description"
    assert max(map(len, description.splitlines())) <= 80, description
    assert "%%" not in result.stdout  # argparse's escape, printed where it is not applied


@pytest.mark.parametrize("command", SUBCOMMANDS)
def test_every_option_has_help(command: str) -> None:
    from cachegql.server.cli import _parser

    commands = next(a for a in _parser()._actions if isinstance(a, argparse._SubParsersAction))
    bare = [a.dest for a in commands.choices[command]._actions if not a.help]
    assert not bare, f"options of {command} without help: {bare}"


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--port", "99999"], "argument --port: a port is 1 to 65535, got 99999"),
        (["--port", "-5"], "argument --port: a port is 1 to 65535, got -5"),
        (["--port", "http"], "argument --port: expected a whole number, got 'http'"),
        (["--workers", "0"], "argument --workers: expected 1 or more, got 0"),
        (["--max-first", "-1"], "argument --max-first: expected 1 or more, got -1"),
        (["--threads", "0"], "argument --threads: expected 1 or more, got 0"),
        (["--time-budget", "0"], "argument --time-budget: expected more than 0, got 0"),
        (["--read-timeout", "-2"], "argument --read-timeout: expected more than 0, got -2"),
        (["--read-timeout", "nan"], "argument --read-timeout: expected a finite number, got 'nan'"),
        (["--response-cache-mb", "inf"], "--response-cache-mb: expected a finite number"),
        (["--response-cache-mb", "-1"], "argument --response-cache-mb: expected 0 or more"),
        (["--reload-interval", "-1"], "argument --reload-interval: expected 0 or more"),
        (["--max-requests", "-1"], "argument --max-requests: expected 0 or more, got -1"),
        (["--cache-max-age", "1.5"], "argument --cache-max-age: expected a whole number"),
    ],
)
def test_serve_refuses_numbers_it_cannot_use(args: list[str], said: str) -> None:
    """Before anything starts: a port past 65535 was taken modulo 65536, with 0 threads a
    query run in one waited out its budget, a negative page size or budget was taken."""
    result = cachegql("serve", *args)
    assert result.returncode == 2
    assert said in result.stderr
    assert "GraphiQL" not in result.stderr and "Traceback" not in result.stderr


def test_index_of_a_folder_without_sources_names_it_and_what_it_takes(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    result = cachegql("index", empty, "--out", tmp_path / "ix")
    assert result.returncode == 1
    assert result.stderr.startswith(
        f"error: no specs found in {empty} (0 pages and 0 build caches read): a source is "
        "a folder of cache.spack.io pages"
    )
    assert "nothing was published" in result.stderr


def test_top_level_help_lists_subcommands() -> None:
    """`cachegql --help` names every subcommand."""
    result = cachegql("--help")
    assert result.returncode == 0
    for command in SUBCOMMANDS:
        assert command in result.stdout


def test_version_comes_from_the_package_metadata() -> None:
    result = cachegql("--version")
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"cachegql {version('cachegql')}\n"


def test_version_to_a_full_disk_is_no_traceback() -> None:
    """As argparse's own `--version`: a write that fails (here /dev/full, unbuffered as
    the Docker image runs) is ignored, not a traceback."""
    with Path("/dev/full").open("w") as full:
        result = subprocess.run(
            [CLI, "--version"],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
            timeout=60,
        )
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr


def test_index_imports_only_what_a_build_needs(tmp_path: Path) -> None:
    """A build's start pays for no web stack, no version metadata, no demo generator and
    no YAML parser (only legacy spec files are YAML): each was tens of ms of every
    rebuild (a one-stack rebuild is about 2 s)."""
    unneeded = ["importlib.metadata", "yaml", "cachegql.demo", "strawberry", "starlette"]
    probe = (
        "import sys\n"
        "from cachegql.server.cli import main\n"
        f"main(['index', {str(PAGES)!r}, '--out', {str(tmp_path / 'ix')!r}, '-q'])\n"
        f"print(sorted(m for m in {unneeded!r} if m in sys.modules))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-1] == "[]"
    assert (tmp_path / "ix").is_symlink()


def test_unknown_option_is_a_usage_error(tmp_path: Path) -> None:
    """A typo in an option: exit 2 with argparse's message, not a traceback."""
    result = cachegql("index", PAGES, "--out", tmp_path / "ix", "--strickt")
    assert result.returncode == 2
    assert "unrecognized arguments: --strickt" in result.stderr


def test_schema_prints_sdl() -> None:
    """`schema` prints the SDL, with the Query type, on stdout."""
    result = cachegql("schema")
    assert result.returncode == 0, result.stderr
    assert "type Query" in result.stdout


def test_schema_check_reports_a_stale_file(tmp_path: Path) -> None:
    """`schema --check FILE` exits 1 and says how to regenerate a file that differs."""
    stale = write_page(tmp_path / "schema.graphql", "type Query { old: Int }\n")
    result = cachegql("schema", "--check", stale)
    assert result.returncode == 1
    assert f"{stale} is stale" in result.stderr


def test_serve_help_states_the_api_page_cap() -> None:
    """The help names the default cap without importing the schema to say it."""
    result = cachegql("serve", "--help")
    assert f"default: the API's, {DEFAULT_MAX_FIRST}" in " ".join(result.stdout.split())


def test_demo_data_writes_a_build_cache_that_indexes(tmp_path: Path) -> None:
    made = cachegql(
        "demo-data", "--mirror", "--specs", "120", "--packages", "20", "--out", tmp_path / "bc"
    )
    assert made.returncode == 0, made.stderr
    assert re.match(r"wrote a build cache of 120 specs \(\d+ DAG nodes", made.stdout)
    listing = tmp_path / "bc" / "cache_spack_io_index.json"
    assert str(listing) in made.stdout
    built = cachegql("index", listing, "--out", tmp_path / "ix", "--quiet")
    assert built.returncode == 0, built.stderr
    store = IndexStore(tmp_path / "ix")
    assert store.snapshots["develop"].num_specs == 120
    store.close()
    again = cachegql("demo-data", "--mirror", "--specs", "120", "--out", tmp_path / "bc")
    assert again.returncode == 1 and again.stderr.startswith("error: ")


@pytest.mark.parametrize(
    ("args", "status", "said"),
    [
        (["--specs", "100"], 2, "specs must be at least packages (every package needs a spec)"),
        (["--tags", ","], 2, "tags must be one or more distinct names (given --specs 5000"),
        (["--tags", "a,a"], 2, "tags must be one or more distinct names"),
        (["--mirror", "--stacks", "0"], 2, "stacks must be between 1 and"),
        (["--out", "/proc/cachegql"], 1, "cannot write the demo data to /proc/cachegql"),
        (["--mirror", "--out", "/proc/cachegql"], 1, "cannot write the demo data to /proc/"),
    ],
)
def test_demo_data_refuses_what_it_cannot_make_in_one_line(
    tmp_path: Path, args: list[str], status: int, said: str
) -> None:
    out = [] if "--out" in args else ["--out", str(tmp_path / "demo")]
    result = cachegql("demo-data", *args, *out)
    assert result.returncode == status, result.stderr
    assert said in result.stderr
    assert "Traceback" not in result.stderr


def test_demo_data_into_a_file_says_it_cannot_write_there(tmp_path: Path) -> None:
    a_file = tmp_path / "a-file"
    a_file.write_text("")
    result = cachegql("demo-data", "--specs", "300", "--out", a_file)
    assert result.returncode == 1
    assert f"cannot write the demo data to {a_file}/" in result.stderr
    assert "Not a directory" in result.stderr and "Traceback" not in result.stderr


def test_output_cut_by_its_reader_stops_quietly_and_not_as_a_success() -> None:
    """`cachegql query ... | head -1`: no traceback, and the status of a tool ended by
    SIGPIPE, which a `check` whose specs are missing (1) must not turn into 0."""
    command = [CLI, "query", "platform=linux"]  # 400 kB: more than a pipe holds
    with subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as run:
        assert run.stdout is not None and run.stderr is not None
        assert run.stdout.readline()
        run.stdout.close()
        stderr = run.stderr.read().decode()
        assert run.wait(timeout=60) == 128 + signal.SIGPIPE
    assert "Traceback" not in stderr and "Broken pipe" not in stderr


def test_index_of_a_url_it_does_not_read_names_the_scheme(tmp_path: Path) -> None:
    """Not "ftp:/example.org/x: no such file or folder", a path made of the URL."""
    result = cachegql("index", "ftp://example.org/x", "--out", tmp_path / "ix")
    assert result.returncode == 1
    assert "ftp:// is not a source cachegql reads" in result.stderr
    assert "no such file" not in result.stderr and "Traceback" not in result.stderr


@pytest.mark.parametrize(
    ("content", "said"),
    [
        (b"garbage\x00\xff", "index.json: not valid JSON: not UTF-8 text"),
        (b"", "index.json: not valid JSON (Input is a zero-length, empty document"),
        (b"not json", "index.json: not valid JSON ("),
    ],
)
def test_a_damaged_json_file_is_said_to_be_no_json_not_no_page(
    tmp_path: Path, content: bytes, said: str
) -> None:
    """Named, or in a folder read as a build cache's: said the same way."""
    damaged = tmp_path / "build_cache" / "index.json"
    damaged.parent.mkdir()
    damaged.write_bytes(content)
    for source in (damaged, damaged.parent):
        result = cachegql("index", source, "--tag", "develop", "--out", tmp_path / "ix")
        assert result.returncode == 1
        assert said in result.stderr and "not a cache page" not in result.stderr, source
        assert "surrogates" not in result.stderr


@pytest.mark.parametrize("flag", ["--tag", "--stack"])
def test_index_refuses_an_empty_tag_or_stack_label(tmp_path: Path, flag: str) -> None:
    result = cachegql("index", tmp_path, flag, " ", "--out", tmp_path / "ix")
    assert result.returncode == 2
    assert f"argument {flag}: expected a name, got ' '" in result.stderr
