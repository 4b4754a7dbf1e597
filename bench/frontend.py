"""Search-as-you-type latency of the web front end, measured in a real browser.

    python bench/frontend.py --url http://127.0.0.1:8931 [--runs 20] [--delay-ms 60]
    python bench/frontend.py [--index DIR]   # serves DIR itself (default: the demo data)

For each of `--runs` words, a fresh tab on / types the word into "Search packages" key by key
(`--delay-ms` apart) in Debian's Chromium (headless), and the page's own measure gives the
time from the last keystroke to the first result row painted (`cachegql:search`, see
server/static/app/views/search.js: it includes the debounce, the request and the drawing).
Prints each run, then the median, p90 and max.

    python bench/frontend.py --cdn 40 [--index DIR]

What a CDN in front would take off: `--cdn N` visitors, each in a fresh browser (its own
HTTP cache), open /, type a package name (drawn with a Zipf law over the served
packages: popular packages are searched more), open the first result's page and its
first spec. The GETs that left each browser for /graphql (Chromium's own network events:
answers from its cache are not counted) are replayed, visitors arriving `--gap` seconds
apart, through a shared cache that keeps each answer as long as its `Cache-Control:
max-age` says (`serve --cache-max-age`, 60 s by default): the share it answers is what a
CDN would absorb at that arrival rate. The words are names of the served packages
with a letter dropped from their longest part (a typo the search forgives), all different,
so that each answer is computed by the server, not taken from its response cache or the
browser's HTTP cache; a search beforehand registers the persisted query, as the first
visitor of a server does. Against `--url`, use a server that has not answered these
searches yet (a fresh one). Also prints the page weight: its scripts and styles, gzipped.
"""

from __future__ import annotations

import argparse
import contextlib
import random
import re
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
from playwright.sync_api import Browser, sync_playwright

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"]
CLI = str(Path(sys.executable).with_name("cachegql"))


@contextlib.contextmanager
def serving(index: Path | None) -> Iterator[str]:
    """`cachegql serve` on `index` (None: the demo data) on a free port, until the end."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    command = [CLI, "serve", "--port", str(port), "--reload-interval", "0", "--no-access-log"]
    if index is not None:
        command += ["--index", str(index)]
    process = subprocess.Popen(command)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{url}/readyz", timeout=1).status_code == 200:
                    break
            if time.monotonic() > deadline or process.poll() is not None:
                raise SystemExit("the server did not start")
            time.sleep(0.2)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=30)


def page_weight(url: str) -> tuple[int, int]:
    """The bytes of the page's scripts and styles: as sent (gzipped) and unpacked."""
    with httpx.Client(base_url=url, timeout=10) as client:
        html = client.get("/").text
        sent = unpacked = 0
        for asset in re.findall(r'(?:src|href)="(/app/[^"]+)"', html):
            with client.stream("GET", asset, headers={"accept-encoding": "gzip"}) as response:
                body = response.read()
                sent += response.num_bytes_downloaded
                unpacked += len(body)
    return sent, unpacked


def words(url: str, count: int, seed: int) -> list[tuple[str, str]]:
    """`count` (package, what to type) pairs: the name's parts, its longest part one letter
    short when it has 5 letters or more."""
    query = "{ specs(first: 0) { facets { packages(first: 400) { value } } } }"
    answer = httpx.post(f"{url}/graphql", json={"query": query}, timeout=30).json()
    names = [b["value"] for b in answer["data"]["specs"]["facets"]["packages"]]
    chosen = random.Random(seed).sample(names, min(count + 1, len(names)))
    typed = []
    for name in chosen:
        parts = re.split(r"[-_.]", name)
        longest = max(range(len(parts)), key=lambda i: len(parts[i]))
        word = parts[longest]
        if len(word) >= 6:  # one letter dropped still leaves five or more
            parts[longest] = word[: len(word) // 2] + word[len(word) // 2 + 1 :]
        typed.append((name, " ".join(parts)))
    return typed


def search(browser: Browser, url: str, text: str, delay_ms: float) -> tuple[float, str]:
    """Type `text` on a fresh tab: the ms from the last key to the painted results, and the
    first result's name."""
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    try:
        page = context.new_page()
        page.goto(url + "/", wait_until="load")
        page.wait_for_selector("#results li")
        box = page.get_by_label("Search packages", exact=True)
        box.press_sequentially(text, delay=delay_ms)
        page.wait_for_function(
            "(q) => performance.getEntriesByName('cachegql:search').some(m => m.detail === q)",
            arg=text,
            timeout=30_000,
        )
        duration: float = page.evaluate(
            """(q) => performance.getEntriesByName('cachegql:search')
                 .filter(m => m.detail === q).at(-1).duration""",
            text,
        )
        first = page.locator("#results li a").first
        return duration, (first.inner_text() if first.count() else "")
    finally:
        context.close()


def visit(browser: Browser, url: str, text: str) -> list[tuple[float, str, int]]:
    """One visitor's session; the GETs of /graphql that reached the network: (seconds
    since the visit began, URL, max-age of the answer)."""
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    sent: list[tuple[float, str, int]] = []
    began = time.monotonic()
    try:
        page = context.new_page()
        cdp = context.new_cdp_session(page)
        cdp.send("Network.enable")
        requests: dict[str, tuple[float, str]] = {}
        cached: set[str] = set()

        def will_send(event: dict[str, Any]) -> None:
            request = event["request"]
            if request["method"] == "GET" and "/graphql?" in request["url"]:
                requests[event["requestId"]] = (time.monotonic() - began, request["url"])

        def received(event: dict[str, Any]) -> None:
            found = requests.get(event["requestId"])
            response = event["response"]
            if found is None or response.get("fromDiskCache") or event["requestId"] in cached:
                return
            control = {k.lower(): v for k, v in response["headers"].items()}.get(
                "cache-control", ""
            )
            age = re.search(r"max-age=(\d+)", control)
            sent.append((*found, int(age.group(1)) if age and response["status"] == 200 else 0))

        cdp.on("Network.requestWillBeSent", will_send)
        cdp.on("Network.requestServedFromCache", lambda e: cached.add(e["requestId"]))
        cdp.on("Network.responseReceived", received)
        page.goto(url + "/", wait_until="load")
        page.wait_for_selector("#results li")
        page.get_by_label("Search packages", exact=True).press_sequentially(text, delay=40)
        page.wait_for_function(
            "(q) => performance.getEntriesByName('cachegql:search').some(m => m.detail === q)",
            arg=text,
            timeout=30_000,
        )
        page.locator("#results li a").first.click()
        page.wait_for_selector(".spec-table tbody tr a")
        page.locator(".spec-table tbody tr a").first.click()
        page.wait_for_load_state("networkidle")
    finally:
        context.close()
    return sent


def cdn(url: str, args: argparse.Namespace) -> None:
    query = "{ specs(first: 0) { facets { packages(first: 400) { value } } } }"
    answer = httpx.post(f"{url}/graphql", json={"query": query}, timeout=30).json()
    names = [b["value"] for b in answer["data"]["specs"]["facets"]["packages"]]
    rng = random.Random(args.seed)
    weights = [1 / (rank + 1) ** 1.1 for rank in range(len(names))]  # Zipf, s = 1.1
    chosen = rng.choices(rng.sample(names, len(names)), weights, k=args.cdn)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        visits = [visit(browser, url, name) for name in chosen]
        browser.close()
    total = sum(len(v) for v in visits)
    print(
        f"{args.cdn} visitors (search, package page, spec page), {len(set(chosen))} distinct "
        f"packages; {total} GETs of /graphql left the browsers"
    )
    for gap in args.gap:
        requests = sorted(
            (number * gap + at, address, age)
            for number, visit_ in enumerate(visits)
            for at, address, age in visit_
        )
        fresh_until: dict[str, float] = {}
        hits = 0
        for at, address, age in requests:
            if fresh_until.get(address, -1.0) >= at:
                hits += 1
            elif age > 0:
                fresh_until[address] = at + age
        rate = 60 / gap
        print(
            f"visitors {rate:g}/minute: a shared cache answers {hits}/{len(requests)} "
            f"({hits / max(1, len(requests)):.0%}) of them"
        )


def run(url: str, args: argparse.Namespace) -> None:
    if args.cdn:
        cdn(url, args)
        return
    sent, unpacked = page_weight(url)
    print(f"page weight: {sent / 1000:.1f} KB gzipped ({unpacked / 1000:.1f} KB unpacked)")
    pairs = words(url, args.runs, args.seed)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        search(browser, url, pairs.pop()[1], args.delay_ms)  # registers the persisted query
        times = []
        found = 0
        for name, text in pairs:
            ms, first = search(browser, url, text, args.delay_ms)
            times.append(ms)
            found += first == name
            print(f"{text!r:40} {ms:7.1f} ms  first result: {first}")
        browser.close()
    times.sort()
    p90 = times[min(len(times) - 1, round(0.9 * (len(times) - 1)))]
    print(
        f"last keystroke to painted results, {len(times)} searches typed {args.delay_ms:g} ms "
        f"a key: median {statistics.median(times):.1f} ms, p90 {p90:.1f} ms, "
        f"max {times[-1]:.1f} ms; the package first in {found}/{len(times)}"
    )


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--url", help="a running server (default: start one)")
    where.add_argument("--index", type=Path, help="the index to serve (default: demo data)")
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--delay-ms", type=float, default=60.0, help="between keystrokes")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--cdn", type=int, default=0, metavar="N", help="visitors (see above)")
    parser.add_argument(
        "--gap",
        type=float,
        nargs="+",
        default=[1.0, 6.0, 60.0],
        help="seconds between visitors' arrivals, for --cdn",
    )
    args = parser.parse_args()
    if args.url:
        run(args.url.rstrip("/"), args)
    else:
        with serving(args.index) as url:
            run(url, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
