"""Every hostile request of the hostile-input issue, replayed against `cachegql serve`.

The cases, the canaries (clients polling /healthz, a hash lookup and a small page every
50 ms) and the server's memory sampling are the benchmark's (`bench/hostile.py`): they
are declared once, there. This runs them all against a real server, over real sockets,
on a demo index built here, large enough that their costs show (before the fixes, the
`or` of 10,000 entries took 540 MB on it and the fragment fan-out stalled everyone for
seconds), and holds the server to what the issue promises: each answer a coded JSON
error or data, never a 5xx; an answer within a few seconds; the canaries unaffected;
no request raising the server's memory by more than 200 MB; the server alive after all.

Measured on an idle machine, the canaries wait under 300 ms (`bench/hostile.py` prints
the table); here the bound has a margin, as another test process shares the two cores.
"""

from __future__ import annotations

import importlib.util
import json
import socket
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from cachegql.server.offload import BUDGETS, GRACE_SECONDS

BENCH = Path(__file__).resolve().parents[1] / "bench" / "hostile.py"
SPECS = 20_000
READ_TIMEOUT = 2  # seconds: the server's, so that the connection cases end quickly
TIME_BUDGET = 3
ANSWER_SECONDS = TIME_BUDGET + 2.0
"""An answer stops at the index's deadline checks (3 s), then its grace."""
CONVERTED_AT_LENGTH = {"or-ne-4000-vars"}
"""Cases the stock path answers later: it spends time outside the index, where no deadline
is checked, as strawberry converts each input object of the arguments (~0.4 ms a
`SpecFilter`: 1.5 s for the `or` of 4,000 on a quiet machine, 3 s and more on a loaded
one). The runner cuts such work at two budgets and a grace period
(`cachegql.server.offload`), which is what the stock path promises for them."""
STOCK_CONVERSION_SECONDS = BUDGETS * TIME_BUDGET + GRACE_SECONDS
CANARY_WAIT_MS = 1000.0
INLINE_CANARY_WAIT_MS = 250.0
"""The canaries' bound while operations run on the event loop back to back: each takes a
few ms (41 ms worst wait measured on a quiet machine, 4 clients). The stock path runs
nothing inline: there, the case is one more threaded load, held to `CANARY_WAIT_MS` as
every other case (its test asserts nothing about the event loop in that mode)."""
GROWTH_MB = 200.0
CONNECTION_CASES = {"idle-connections", "trickle-headers", "trickle-body"}


def _bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("hostile_bench", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look themselves up there
    spec.loader.exec_module(module)
    return module


CASES = [case.name for case in _bench().CASES if case.name != "quiet"]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@pytest.fixture(scope="module", params=["compiled", "stock"])
def results(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, dict[str, Any]]:
    """Every case against the server, answering through compiled plans and through the
    stock path (`--no-compiled`): the limits hold on both."""
    work = tmp_path_factory.mktemp(f"hostile-{request.param}")
    report = work / "report.json"
    # One demo index for both paths (the benchmark builds it where it is missing): the
    # servers only read it, and building it again took some 3 s of each path's setup.
    shared = tmp_path_factory.getbasetemp() / "hostile-index"
    command = [sys.executable, str(BENCH), "--venv", sys.prefix, "--specs", str(SPECS)]
    command += ["--pages", str(shared / "pages"), "--index", str(shared / "index")]
    command += ["--port", str(_free_port()), "--json", str(report), "--logs", str(work)]
    command += ["--timeout", "15", "--hold", f"1,{READ_TIMEOUT + 2}", "--connections", "100"]
    command += ["--after-delay", "0.5", "--settle", "10", "--memory-cap-gb", "4"]
    command += [f"--serve-flag=--read-timeout={READ_TIMEOUT}"]
    command += [f"--serve-flag=--time-budget={TIME_BUDGET}"]
    command += ["--skip", "quiet"]
    if request.param == "stock":
        command += ["--serve-flag=--no-compiled"]
    run = subprocess.run(command, capture_output=True, text=True, timeout=900, check=False)
    assert run.returncode == 0, run.stderr[-3000:]
    answers = {result["name"]: result for result in json.loads(report.read_text())["results"]}
    answers["inline-largest"]["index"] = str(shared / "index")
    for answer in answers.values():
        answer["path"] = request.param
    return answers


@pytest.mark.parametrize("name", CASES)
def test_a_hostile_request_is_answered_and_costs_others_nothing(
    results: dict[str, dict[str, Any]], name: str
) -> None:
    result = results[name]
    notes = "; ".join(result["notes"])
    assert result["survived"] and not result["restarted"], notes
    assert result["settled_after_s"] is not None and result["settled_after_s"] < 2, notes
    assert result["canary_worst_ms"] < CANARY_WAIT_MS, result["canaries"]
    assert result["canary_after_worst_ms"] < CANARY_WAIT_MS, result["canaries_after"]
    rss = result["rss_mb"]
    assert rss["peak"] - rss["before"] < GROWTH_MB, rss
    if name in CONNECTION_CASES:
        # Every connection is closed by the server once its head or body is overdue.
        extra = result["extra"]
        assert extra["connections"] > 0 and extra["failed_to_open"] == 0
        assert extra["open_at"][f"{READ_TIMEOUT + 2}s"] == 0, notes
        return
    bound = ANSWER_SECONDS
    if result["path"] == "stock" and name in CONVERTED_AT_LENGTH:
        bound = STOCK_CONVERSION_SECONDS
    assert not result["timed_out"] and result["seconds"] < bound, notes
    for status in result["status"].split("/"):
        assert 200 <= int(status) < 500, notes
    assert result["content_type"] in ("application/json", "application/graphql-response+json")
    assert "an error without extensions.code" not in notes
    assert result["codes"] or "answered with data" in notes, notes
    if result["codes"]:
        assert "(none)" not in result["codes"] and "INTERNAL_SERVER_ERROR" not in result["codes"]
        assert len(result["message"]) < 1000  # input is never echoed whole


def test_two_operations_without_a_name_are_refused(results: dict[str, dict[str, Any]]) -> None:
    result = results["two-operations"]
    assert result["status"] == "400" and result["codes"] == ["BAD_USER_INPUT"]


@pytest.mark.parametrize(
    ("name", "code"),
    [
        ("fragments-2.6kb", "QUERY_TOO_COMPLEX"),
        ("fragments-2.9kb", "QUERY_TOO_COMPLEX"),
        ("alias-stacks-5000", "QUERY_TOO_COMPLEX"),
        ("body-50mb", "BAD_USER_INPUT"),
    ],
)
def test_what_is_priced_or_sized_out_is_refused_with_its_code(
    results: dict[str, dict[str, Any]], name: str, code: str
) -> None:
    assert code in results[name]["codes"], results[name]["notes"]


def test_the_largest_inline_operation_keeps_the_canaries_waiting_only_a_few_ms(
    results: dict[str, dict[str, Any]],
) -> None:
    """4 clients send, back to back, an operation at the largest estimate the event loop
    runs (the whole default tag read, 7 facets): it does run inline, and a canary waits
    for at most a few of them."""
    from cachegql.index import IndexStore
    from cachegql.schema import Context, build_schema
    from cachegql.schema.direct import Ready
    from cachegql.schema.inline import INLINE_MAX_READS, runs_inline

    result = results["inline-largest"]
    store = IndexStore(Path(result["index"]))
    try:
        query = json.loads(_bench().largest_inline(0).body)["query"]
        context = Context(store)
        ready = build_schema().direct.ready(query, None, None, context)  # type: ignore[union-attr]
        assert isinstance(ready, Ready) and ready.reads is not None
        reads = ready.reads(ready.variables, context, {})
        assert reads is not None and INLINE_MAX_READS // 2 < reads <= INLINE_MAX_READS
        assert runs_inline(ready.cost, ready.reads, ready.variables, context, {})
    finally:
        store.close()
    # Enough answers for the canaries to have waited behind them: inline (compiled) each
    # takes a few ms; the stock path (`--no-compiled`) runs them in threads, ~15x slower.
    compiled = result["path"] == "compiled"
    assert result["extra"]["answers"] > (100 if compiled else 20), result["notes"]
    bound = INLINE_CANARY_WAIT_MS if compiled else CANARY_WAIT_MS
    assert result["canary_worst_ms"] < bound, result["canaries"]
