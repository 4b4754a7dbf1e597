"""The web front end at /, served by cachegql itself, used in a real browser.

The real app on a real uvicorn (127.0.0.1) over an index of the test pages (tags develop and
v0.22.0, from cache pages: no dependencies) and of a generated build cache (tag `cache`, with
its DAG), opened in Debian's Chromium (tests/browser.py): every request to another origin is
aborted and recorded, and each test asserts that there was none and no script error. Also a
tour of the embedded demo data, whose screenshots are the documentation's (docs/screenshots/).
Screenshots go to $CACHEGQL_SCREENSHOTS/<test> (default: the test's tmp_path).
"""

from __future__ import annotations

import gzip
import hashlib
import json
import re
from collections import Counter, defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from playwright.sync_api import Browser, Page, Request, expect

from cachegql.demo import MirrorConfig, write_mirror
from cachegql.index import build_index
from cachegql.server import frontend
from cachegql.server.app import Settings, create_app
from cachegql.server.assets import IMMUTABLE
from cachegql.server.default_data import default_index
from cachegql.server.fetch import HttpReader
from tests import oracle
from tests.browser import DESKTOP, PHONE, Tab, open_tab, screenshots_root
from tests.conftest import PAGES, LiveServer
from tests.http_fixture import MirrorHTTPServer

SEARCH = "Search packages"
PAGE_WEIGHT_LIMIT = 150_000  # bytes of scripts and styles, gzipped
CACHE_TAG = "cache"  # the generated build cache's tag in the test index


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The test pages, and a small build cache (with dependencies) as tag `cache`."""
    folder = tmp_path_factory.mktemp("frontend")
    mirror = write_mirror(MirrorConfig(specs=120, packages=30, stacks=2, seed=5), folder / "bc")
    build_index([PAGES, mirror.mirror], folder / "ix", tag=CACHE_TAG)
    return folder / "ix"


@pytest.fixture(scope="module")
def server(index: Path) -> Iterator[str]:
    with LiveServer(create_app(Settings(index=index, reload_interval=0))) as url:
        yield url


@pytest.fixture(scope="module")
def api(server: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server, timeout=30) as client:
        yield client


@pytest.fixture(scope="module")
def pages() -> dict[str, dict[str, dict[str, Any]]]:
    """The test pages read independently: {tag: {hash: spec}}."""
    return oracle.read_specs([PAGES])


@pytest.fixture
def shots(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    return screenshots_root(request, tmp_path)


@pytest.fixture
def tab(browser: Browser, server: str, shots: Path) -> Iterator[Tab]:
    with open_tab(browser, server, shots, permissions=("clipboard-read", "clipboard-write")) as t:
        yield t


def query(api: httpx.Client, text: str, **variables: Any) -> dict[str, Any]:
    body = api.post("/graphql", json={"query": text, "variables": variables}).json()
    assert "errors" not in body, body
    data: dict[str, Any] = body["data"]
    return data


def visit(tab: Tab, path: str) -> Page:
    """Open `path` and wait until its view is drawn."""
    tab.page.goto(tab.origin + path, wait_until="load")
    ready(tab.page)
    return tab.page


def ready(page: Page) -> None:
    main = page.locator("main")
    expect(main).not_to_have_attribute("aria-busy", "true")
    expect(main).not_to_contain_text("Loading...")
    expect(page.locator("[aria-busy=true]")).to_have_count(0)


def summary(page: Page) -> str:
    text: str = page.locator(".summary").first.inner_text()
    return text


def path_of(page: Page) -> str:
    parts = urlsplit(page.url)
    return parts.path + (f"?{parts.query}" if parts.query else "")


def unique_prefix(hashes: list[str], full: str) -> str:
    """The shortest prefix of `full` that no other of `hashes` has."""
    for size in range(1, len(full) + 1):
        if sum(h.startswith(full[:size]) for h in hashes) == 1:
            return full[:size]
    raise AssertionError(full)


# Served from the package


def test_page_and_files_are_served_from_the_package(server: str) -> None:
    app = frontend.Frontend()
    with httpx.Client(base_url=server, timeout=10) as client:
        home = client.get("/")
        assert home.status_code == 200
        assert home.headers["content-type"].startswith("text/html")
        assert home.text == app.html
        assert home.headers["cache-control"] == "no-cache"
        csp = home.headers["content-security-policy"]
        assert "default-src 'none'" in csp and "connect-src 'self'" in csp
        assert client.get("/", headers={"if-none-match": home.headers["etag"]}).status_code == 304
        # Every client-side route is the same page; anything else is not.
        for path in ("/package/zlib", "/spec/22xi27u", "/stacks", "/stack/e4s", "/changes"):
            assert client.get(path).text == app.html, path
        assert client.get("/nope").status_code == 404
        # /graphql is still GraphiQL for a browser.
        assert "GraphiQL" in client.get("/graphql", headers={"accept": "text/html"}).text

        urls = re.findall(r'(?:src|href)="([^"]*)"', app.html)
        assert "://" not in app.html  # no other origin
        assets = [u for u in urls if u.startswith(app.static_path + "/")]
        served = {a.removeprefix(app.static_path + "/") for a in assets}
        # Every file is loaded or preloaded up front: no waterfall of imports.
        files = {p.relative_to(frontend.APP_DIR).as_posix() for p in frontend.APP_DIR.rglob("*")}
        assert served == {f for f in files if f.endswith((".js", ".css"))}
        weight = 0
        for asset in assets:
            response = client.get(asset, headers={"accept-encoding": "gzip"})
            assert response.status_code == 200, asset
            assert response.headers["cache-control"] == IMMUTABLE
            name = asset.removeprefix(app.static_path + "/")
            assert response.content == (frontend.APP_DIR / name).read_bytes()
            etag = response.headers["etag"]
            assert client.get(asset, headers={"if-none-match": etag}).status_code == 304
            weight += len(gzip.compress(response.content))
        assert weight < PAGE_WEIGHT_LIMIT
        # The digest in the URL names these files: another one finds nothing.
        assert client.get("/app/000000000000/main.js").status_code == 404
        assert client.get(f"{app.static_path}/../frontend.py").status_code == 404


def test_the_digest_follows_the_files(tmp_path: Path) -> None:
    (tmp_path / "a.js").write_text("1")
    first = frontend.Frontend(tmp_path)
    assert first.static_path in first.html
    (tmp_path / "a.js").write_text("2")
    assert frontend.Frontend(tmp_path).version != first.version


# Search


def test_search_finds_a_misspelt_package_as_you_type(tab: Tab) -> None:
    page = visit(tab, "/")
    box = page.get_by_label(SEARCH, exact=True)
    expect(box).to_be_focused()  # the home page takes keystrokes at once
    box.press_sequentially("torch scater", delay=30)
    results = page.locator("#results")
    expect(results).to_have_attribute("data-for", "/?q=torch+scater")
    expect(results.locator("li a").first).to_have_text("py-torch-scatter")
    assert path_of(page) == "/?q=torch+scater"
    # The page measures the time from the last keystroke to the painted result, once the
    # frame after the results is painted (the text may show a frame before that).
    page.wait_for_function("performance.getEntriesByName('cachegql:search').length > 0")
    measures = page.evaluate(
        "performance.getEntriesByName('cachegql:search').map(m => [m.detail, m.duration])"
    )
    assert measures and measures[-1][0] == "torch scater" and measures[-1][1] > 0
    tab.screenshot("search")
    # Enter opens the first result.
    box.press("Enter")
    expect(page.get_by_role("heading", level=1)).to_have_text("py-torch-scatter")
    tab.assert_clean()


def test_a_chip_narrows_the_count_and_back_forward_restore_it(tab: Tab) -> None:
    page = visit(tab, "/")
    expect(page.locator(".summary")).to_have_text("33 specs in 4 packages")
    chip = page.locator('.chip[data-facet="compiler"]').first
    value = chip.get_attribute("data-value")
    number = int(chip.locator(".count").inner_text())
    assert value and 0 < number < 33
    chip.click()
    expect(page.locator(".summary")).to_contain_text(f"{number} spec")
    pressed = page.locator('.chip[aria-pressed="true"]')
    expect(pressed).to_have_attribute("data-value", value)
    expect(pressed).to_be_focused()  # the focus stays on the chip that was pressed
    assert parse_qs(urlsplit(page.url).query)["compiler"] == [value]
    tab.screenshot("chip")
    # Every listed package has a spec with that compiler, and the counts say how many.
    for meta in page.locator("#results .meta").all_inner_texts():
        assert re.match(r"^\d+ (of \d+ )?specs?", meta)
    page.go_back()
    expect(page.locator(".summary")).to_have_text("33 specs in 4 packages")
    expect(page.locator('.chip[aria-pressed="true"]')).to_have_count(0)
    page.go_forward()
    expect(page.locator(".summary")).to_contain_text(f"{number} spec")
    expect(page.locator('.chip[aria-pressed="true"]')).to_have_attribute("data-value", value)
    # Pressed again, the chip lets go.
    page.locator('.chip[aria-pressed="true"]').click()
    expect(page.locator(".summary")).to_have_text("33 specs in 4 packages")
    tab.assert_clean()


def test_the_tag_selector_switches_tags(tab: Tab) -> None:
    page = visit(tab, "/")
    page.get_by_label("Tag", exact=True).select_option("v0.22.0")
    expect(page.locator(".summary")).to_have_text("3 specs in 2 packages")
    assert path_of(page) == "/?tag=v0.22.0"
    expect(page.locator("#results li a")).to_have_text(["cmake", "zlib"])
    # Links keep the tag.
    page.locator("#results li a", has_text="zlib").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("zlib")
    assert path_of(page) == "/package/zlib?tag=v0.22.0"
    page.go_back()
    expect(page.get_by_label("Tag", exact=True)).to_have_value("v0.22.0")
    tab.assert_clean()


# Package


def test_a_spec_string_narrows_the_package_table(tab: Tab, api: httpx.Client) -> None:
    wanted = query(
        api,
        """query($q: String) { package(name: "py-torch-scatter") { numSpecs
             numSpecsByStack { stack count }
             specs(query: $q) { totalCount nodes { shortHash } } } }""",
        q="@2.1.2 %gcc",
    )["package"]
    page = visit(tab, "/package/py-torch-scatter")
    expect(page.locator("#spec-count")).to_have_text(f"{wanted['numSpecs']} specs")
    expect(page.locator(".spec-table tbody tr")).to_have_count(wanted["numSpecs"])
    stacks = page.locator(".chart .bars li")
    expect(stacks).to_have_count(len(wanted["numSpecsByStack"]))
    expected_bars = [f"{s['stack']}{s['count']}" for s in wanted["numSpecsByStack"]]
    assert [re.sub(r"\s+", "", t) for t in stacks.all_inner_texts()] == expected_bars

    field = page.get_by_label("Narrow by spec", exact=True)
    field.fill("@2.1.2 %gcc")
    narrowed = wanted["specs"]["totalCount"]
    assert 0 < narrowed < wanted["numSpecs"]
    expect(page.locator("#spec-count")).to_have_text(f"{narrowed} specs match")
    rows = page.locator(".spec-table tbody tr td:first-child")
    expect(rows).to_have_text([n["shortHash"] for n in wanted["specs"]["nodes"]])
    assert parse_qs(urlsplit(page.url).query)["q"] == ["@2.1.2 %gcc"]
    tab.screenshot("narrowed")
    # A syntax error names the column, and the field says it is invalid.
    field.fill("@2.1.2 +")
    said = page.locator("#spec-query-error")
    expect(said).to_contain_text("expected a variant name")
    # The caret, drawn under the query from the error's column (9: after the `+`).
    assert said.inner_text().splitlines()[-2:] == ["  @2.1.2 +", " " * 10 + "^"]
    expect(field).to_have_attribute("aria-invalid", "true")
    field.fill("@2.1.2 %gcc")
    expect(page.locator("#spec-count")).to_have_text(f"{narrowed} specs match")
    expect(field).not_to_have_attribute("aria-invalid", "true")
    tab.assert_clean()


# Hash box and spec page


def test_the_hash_box_opens_a_prefix_and_lists_an_ambiguous_one(
    tab: Tab, pages: dict[str, dict[str, dict[str, Any]]]
) -> None:
    develop = pages["develop"]
    hashes = sorted(develop)
    scatter = next(h for h, s in sorted(develop.items()) if s["name"] == "py-torch-scatter")
    prefix = unique_prefix(hashes, scatter)
    page = visit(tab, "/stacks")
    box = page.get_by_label("Hash", exact=True)
    box.fill(f"/{prefix.upper()} ")  # as people paste it
    box.press("Enter")
    heading = page.get_by_role("heading", level=1)
    spec = develop[scatter]
    expect(heading).to_contain_text(f"py-torch-scatter@{spec['versions'][0]}")
    expect(page).to_have_url(re.compile(f"/spec/{scatter}$"))  # the full hash, to share
    expect(page.locator(".copy-line code").nth(1)).to_have_text(f"spack install /{scatter}")

    shared = Counter(h[0] for h in hashes).most_common(1)[0]
    assert shared[1] >= 2
    box.fill(shared[0])
    box.press("Enter")
    expect(heading).to_have_text(f"/{shared[0]}")
    expect(page.locator(".notice")).to_contain_text(f"{shared[1]} specs have a hash starting")
    candidates = page.locator("tbody tr td:first-child a")
    expect(candidates).to_have_count(shared[1])
    listed = sorted(h for h in hashes if h.startswith(shared[0]))
    hrefs = sorted(str(a.get_attribute("href")).removeprefix("/spec/") for a in candidates.all())
    assert hrefs == listed
    tab.screenshot("candidates")
    candidates.first.click()
    expect(heading).to_contain_text("@")
    page.go_back()
    expect(heading).to_have_text(f"/{shared[0]}")

    box.fill("/zzzzzzz")
    box.press("Enter")
    expect(page.locator(".notice.error")).to_contain_text("No spec")
    box.fill("abc1")  # not base32
    box.press("Enter")
    expect(page.locator(".notice.error")).to_contain_text("1")
    tab.assert_clean()


def spec_with_dependents(api: httpx.Client) -> dict[str, Any]:
    """A spec of the build cache with dependencies and dependents."""
    nodes = query(
        api,
        """query($tag: String) { specs(tag: $tag, first: 100) { nodes { hash name format
             dependencies { name hash spec { hash name } } dependents { totalCount } } } }""",
        tag=CACHE_TAG,
    )["specs"]["nodes"]
    spec: dict[str, Any] = next(
        n for n in nodes if n["dependents"]["totalCount"] and n["dependencies"]
    )
    return spec


def test_a_build_cache_spec_links_its_dependencies_and_dependents(
    tab: Tab, api: httpx.Client
) -> None:
    spec = spec_with_dependents(api)
    page = visit(tab, f"/spec/{spec['hash']}?tag={CACHE_TAG}")
    expect(page.locator(".copy-line code").first).to_have_text(spec["format"])
    page.get_by_role("button", name="Copy spec").click()
    expect(page.get_by_role("button", name="Copy spec")).to_have_text("Copied")
    assert page.evaluate("navigator.clipboard.readText()") == spec["format"]
    deps = page.locator(".deps").first
    expect(deps.locator("h2")).to_contain_text(f"Dependencies {len(spec['dependencies'])}")
    expect(deps.locator("tbody tr")).to_have_count(len(spec["dependencies"]))
    tab.screenshot("spec")
    # A dependency with a binary in the tag is a link; its page lists this spec among its
    # dependents.
    dep = next(d for d in spec["dependencies"] if d["spec"])
    deps.locator(f'a[href="/spec/{dep["hash"]}?tag={CACHE_TAG}"]').click()
    expect(page.get_by_role("heading", level=1)).to_contain_text(dep["name"])
    dependents = page.locator(".deps").nth(1)
    expect(dependents.locator(f'a[href="/spec/{spec["hash"]}?tag={CACHE_TAG}"]')).to_be_visible()
    page.go_back()
    expect(page.locator(".copy-line code").first).to_have_text(spec["format"])
    tab.assert_clean()


def test_a_spec_from_pages_says_its_dependencies_are_not_recorded(
    tab: Tab, pages: dict[str, dict[str, dict[str, Any]]]
) -> None:
    full = sorted(pages["develop"])[0]
    page = visit(tab, f"/spec/{full}")
    expect(page.locator(".deps").first).to_contain_text("Not recorded")
    expect(page.locator(".deps").nth(1)).to_contain_text("Not recorded")
    tab.assert_clean()


# Stacks


def test_a_stack_draws_its_buckets_as_bars(tab: Tab, api: httpx.Client) -> None:
    stack = query(
        api,
        """{ stack(name: "e4s") { numSpecs compilers { value count } oss { value count }
             platforms { value count } targets { value count } } }""",
    )["stack"]
    page = visit(tab, "/stacks")
    page.get_by_role("link", name="e4s", exact=True).click()
    expect(page.get_by_role("heading", level=1)).to_have_text("e4s")
    for title, field in [
        ("Compilers", "compilers"),
        ("Operating systems", "oss"),
        ("Platforms", "platforms"),
        ("Targets", "targets"),
    ]:
        chart = page.locator(".chart", has=page.get_by_role("heading", name=title, exact=True))
        texts = [re.sub(r"\s+", " ", t).strip() for t in chart.locator("li").all_inner_texts()]
        assert texts == [f"{b['value']} {b['count']}" for b in stack[field]], title
        # The longest bar is the largest count.
        widths = chart.locator(".fill").evaluate_all("(els) => els.map(e => e.style.width)")
        assert widths[0] == "100%"
    tab.screenshot("stack")
    tab.assert_clean()


# Changes between tags


def tag_diff_or_skip(api: httpx.Client) -> None:
    """Skip while the served schema has no Query.tagDiff (it comes from the tagdiff branch)."""
    sdl = api.get("/graphql/schema.graphql").text
    query_type = sdl.split("type Query {", 1)[1].split("\n}", 1)[0]
    if "tagDiff(" not in query_type:
        pytest.skip("the changes page needs Query.tagDiff, which the served schema lacks yet")


def test_changes_between_two_tags_count_specs_per_package(
    tab: Tab, api: httpx.Client, pages: dict[str, dict[str, dict[str, Any]]]
) -> None:
    tag_diff_or_skip(api)
    old, new = pages["v0.22.0"], pages["develop"]
    counts: dict[str, Counter[str]] = defaultdict(Counter)
    for hash_ in old.keys() | new.keys():
        name = (new.get(hash_) or old[hash_])["name"]
        kind = ("unchanged" if hash_ in new else "removed") if hash_ in old else "added"
        counts[name][kind] += 1
    changed = {n: c for n, c in counts.items() if c["added"] or c["removed"]}
    total = sum(counts.values(), Counter())

    page = visit(tab, "/changes?from=v0.22.0&to=develop")
    expect(page.get_by_label("From", exact=True)).to_have_value("v0.22.0")
    expect(page.locator(".summary")).to_have_text(
        f"v0.22.0 \u2192 develop: {total['added']} specs added, {total['removed']} removed, "
        f"{total['unchanged']} unchanged, in {len(changed)} packages"
    )
    rows = page.locator("table.diff tbody tr:not(.detail)")
    expect(rows).to_have_count(len(changed))
    for name, c in changed.items():
        row = rows.filter(has=page.get_by_role("link", name=name, exact=True))
        cells = row.locator("td.num").all_inner_texts()
        assert cells == [str(c["added"]), str(c["removed"]), str(c["unchanged"])], name
    # One package's added specs, on demand.
    name = max(changed, key=lambda n: changed[n]["added"])
    page.get_by_role("button", name=f"Specs of {name}").click()
    listed = page.locator("tr.detail:not([hidden]) .spec-list a.hash")
    added = sorted(h for h in new.keys() - old.keys() if new[h]["name"] == name)
    expect(listed).to_have_count(min(20, len(added)) + min(20, changed[name]["removed"]))
    assert {t.lstrip("/") for t in listed.all_inner_texts()} >= {h[:7] for h in added[:20]}
    tab.screenshot("changes")
    # The two selects choose the tags.
    page.get_by_label("From", exact=True).select_option("develop")
    page.get_by_label("To", exact=True).select_option("v0.22.0")
    page.get_by_role("button", name="Compare").click()
    expect(page.locator(".summary")).to_contain_text(
        f"develop \u2192 v0.22.0: {total['removed']} specs added, {total['added']} removed"
    )
    assert path_of(page) == "/changes?from=develop&to=v0.22.0"
    tab.assert_clean()


def test_without_tag_diff_the_changes_page_says_so(tab: Tab, api: httpx.Client) -> None:
    page = visit(tab, "/changes")
    sdl = api.get("/graphql/schema.graphql").text
    if "tagDiff(" in sdl:
        expect(page.locator(".summary")).to_contain_text("specs added")
    else:
        expect(page.locator(".notice.error")).to_have_text(
            "This server cannot compare tags: its API has no Query.tagDiff."
        )
    tab.assert_clean()


# Navigation, keyboard, transport, phones


def test_back_and_forward_restore_every_view(tab: Tab) -> None:
    page = visit(tab, "/")
    heading = page.get_by_role("heading", level=1)
    page.get_by_label(SEARCH, exact=True).press_sequentially("scatter", delay=20)
    expect(page.locator("#results")).to_have_attribute("data-for", "/?q=scatter")
    page.get_by_role("link", name="py-torch-scatter", exact=True).click()
    expect(heading).to_have_text("py-torch-scatter")
    expect(heading).to_be_focused()  # a navigation puts the focus on the new page's title
    field = page.get_by_label("Narrow by spec", exact=True)
    field.fill("@2.1.2 %gcc")
    field.press("Enter")  # a history entry of its own
    expect(page.locator("#spec-count")).to_contain_text("match")
    narrowed = page.locator("#spec-count").inner_text()
    page.locator(".spec-table a.hash").first.click()
    expect(heading).to_contain_text("py-torch-scatter@")
    spec_url = page.url

    page.go_back()
    expect(heading).to_have_text("py-torch-scatter")
    expect(field).to_have_value("@2.1.2 %gcc")
    expect(page.locator("#spec-count")).to_have_text(narrowed)
    page.go_back()
    expect(field).to_have_value("")
    expect(page.locator("#spec-count")).to_have_text(re.compile(r"^\d+ specs$"))
    page.go_back()
    expect(page.get_by_label(SEARCH, exact=True)).to_have_value("scatter")
    expect(page.locator("#results li a").first).to_have_text("py-torch-scatter")
    page.go_forward()
    page.go_forward()
    page.go_forward()
    expect(heading).to_contain_text("py-torch-scatter@")
    assert page.url == spec_url
    # A reload shows the same view.
    page.reload()
    ready(page)
    expect(heading).to_contain_text("py-torch-scatter@")
    tab.assert_clean()


def test_the_keyboard_reaches_every_view(tab: Tab) -> None:
    page = visit(tab, "/stacks")
    keys = page.keyboard
    heading = page.get_by_role("heading", level=1)
    keys.press("/")  # search, from anywhere
    box = page.get_by_label(SEARCH, exact=True)
    expect(box).to_be_focused()
    keys.type("cudnn", delay=20)
    expect(page.locator("#results")).to_have_attribute("data-for", "/?q=cudnn")
    keys.press("ArrowDown")
    expect(page.locator("#results a").first).to_be_focused()
    keys.press("ArrowUp")
    expect(box).to_be_focused()
    # Tab to the first chip and press it with the space bar.
    chip = page.locator(".chip").first
    chip.focus()
    keys.press("Space")
    expect(page.locator('.chip[aria-pressed="true"]')).to_be_focused()
    keys.press("/")  # from a button too
    expect(box).to_be_focused()
    keys.press("Escape")  # clears the box
    expect(box).to_have_value("")
    keys.type("cudnn", delay=20)
    keys.press("Enter")
    expect(heading).to_have_text("cudnn")
    expect(heading).to_be_focused()
    keys.press("#")  # the hash box
    hash_box = page.get_by_label("Hash", exact=True)
    expect(hash_box).to_be_focused()
    first = page.locator(".spec-table a.hash").first.inner_text()
    keys.type(first, delay=20)
    keys.press("Enter")
    expect(heading).to_contain_text(f"/{first}")
    # Every control has a name.
    unnamed = page.evaluate(
        """() => [...document.querySelectorAll('input, select, button')]
             .filter(e => !e.labels?.length && !e.getAttribute('aria-label')
                          && !e.textContent.trim()).map(e => e.outerHTML)"""
    )
    assert unnamed == []
    tab.assert_clean()


def test_requests_are_gets_of_persisted_queries(browser: Browser, server: str, shots: Path) -> None:
    sent: list[Request] = []
    for round_ in (1, 2):
        with open_tab(browser, server, shots) as tab:
            sent.clear()
            tab.page.on("request", lambda r: sent.append(r) if "/graphql" in r.url else None)
            page = visit(tab, "/package/py-torch-scatter")
            page.get_by_label("Narrow by spec", exact=True).fill("%gcc")
            expect(page.locator("#spec-count")).to_contain_text("match")
            # Each request: a GET asking for JSON, the query named by its sha256; its text
            # only once the server said it did not know that hash (then it is the text's).
            unknown: set[str] = set()
            with_text = 0
            for request in sent:
                assert request.method == "GET"
                assert request.headers["accept"] == "application/json"
                params = parse_qs(urlsplit(request.url).query)
                sha = json.loads(params["extensions"][0])["persistedQuery"]["sha256Hash"]
                response = request.response()
                assert response is not None and response.status == 200
                codes = [e["extensions"]["code"] for e in response.json().get("errors", [])]
                if "query" in params:
                    assert hashlib.sha256(params["query"][0].encode()).hexdigest() == sha
                    assert sha in unknown
                    with_text += 1
                elif codes == ["PERSISTED_QUERY_NOT_FOUND"]:
                    unknown.add(sha)
            if round_ == 2:  # the server knows them all now: hashes only
                assert sent and with_text == 0
            tab.assert_clean()


def test_the_fallback_sha256_agrees_with_the_browser(tab: Tab) -> None:
    page = visit(tab, "/")
    static = frontend.Frontend().static_path
    texts = ["", "abc", "a" * 55, "a" * 56, "a" * 64, "\u00e9\u20ac\U0001f600" * 50, "x" * 5000]
    agree = page.evaluate(
        """async ([url, texts]) => {
             const { sha256HexFallback } = await import(url);
             const out = [];
             for (const text of texts) {
               const data = new TextEncoder().encode(text);
               const digest = await crypto.subtle.digest('SHA-256', data);
               const hex = [...new Uint8Array(digest)]
                 .map(b => b.toString(16).padStart(2, '0')).join('');
               out.push(hex === sha256HexFallback(data));
             }
             return out;
           }""",
        [f"{static}/sha256.js", texts],
    )
    assert agree == [True] * len(texts)
    tab.assert_clean()


def test_no_page_scrolls_sideways_at_phone_width(
    browser: Browser,
    server: str,
    shots: Path,
    api: httpx.Client,
    pages: dict[str, dict[str, dict[str, Any]]],
) -> None:
    develop = sorted(pages["develop"])
    cache = query(api, '{ specs(tag: "cache", first: 1, query: "^zlib") { nodes { hash } } }')
    cache_spec = cache["specs"]["nodes"][0]["hash"]
    with open_tab(browser, server, shots, viewport=PHONE) as tab:
        views = {
            "search": "/?q=py&compiler=gcc@11.4.0",
            "package": "/package/py-torch-scatter",
            "spec": f"/spec/{cache_spec}?tag={CACHE_TAG}",
            "spec-pages": f"/spec/{develop[0]}",
            "candidates": f"/spec/{develop[0][0]}",
            "stacks": "/stacks",
            "stack": "/stack/e4s",
            "changes": "/changes",
        }
        for name, path in views.items():
            page = visit(tab, path)
            overflow = page.evaluate(
                "[document.documentElement.scrollWidth, document.body.scrollWidth, innerWidth]"
            )
            assert overflow[0] <= overflow[2] and overflow[1] <= overflow[2], (name, overflow)
            # Text stays readable: nothing below 12 px.
            smallest = page.evaluate(
                """() => Math.min(...[...document.querySelectorAll('main *')]
                     .filter(e => e.childNodes.length && e.offsetParent)
                     .map(e => parseFloat(getComputedStyle(e).fontSize)))"""
            )
            assert smallest >= 12, (name, smallest)
            tab.screenshot(f"phone-{name}", full_page=True)
        tab.assert_clean()


# The embedded demo data: the README's screenshots


@pytest.fixture(scope="module")
def demo_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    index = default_index(tmp_path_factory.mktemp("demo-cache"))
    with LiveServer(create_app(Settings(index=index, reload_interval=0))) as url:
        yield url


def test_demo_tour(
    browser: Browser, demo_server: str, server: str, api: httpx.Client, shots: Path
) -> None:
    """Every view on the demo data, on a desktop and on a phone, and a spec of a generated
    build cache (the demo data is pages, which list no dependencies). With
    CACHEGQL_SCREENSHOTS=DIR the pictures land in DIR/test_demo_tour/ (the docs' come
    from there: docs/screenshots/)."""
    with_deps = spec_with_dependents(api)
    for viewport, suffix in ((DESKTOP, ""), (PHONE, "-phone")):
        with open_tab(browser, demo_server, shots, viewport=viewport) as tab:
            page = visit(tab, "/")
            page.get_by_label(SEARCH, exact=True).press_sequentially("py", delay=30)
            expect(page.locator("#results")).to_have_attribute("data-for", "/?q=py")
            page.locator('.chip[data-facet="compiler"]').first.click()
            expect(page.locator('.chip[aria-pressed="true"]')).to_have_count(1)
            ready(page)
            tab.screenshot(f"search{suffix}")

            page = visit(tab, "/package/zlib")
            page.get_by_label("Narrow by spec", exact=True).fill("@1.3: %gcc@13")
            expect(page.locator("#spec-count")).to_contain_text("match")
            tab.screenshot(f"package{suffix}")

            page.locator(".spec-table a.hash").first.click()
            expect(page.get_by_role("heading", level=1)).to_contain_text("zlib@")
            ready(page)
            tab.screenshot(f"spec{suffix}")

            box = page.get_by_label("Hash", exact=True)
            box.fill("/a")
            box.press("Enter")
            expect(page.get_by_role("heading", level=1)).to_have_text("/a")
            ready(page)
            tab.screenshot(f"hash{suffix}")

            visit(tab, "/stack/e4s")
            tab.screenshot(f"stack{suffix}")

            page = visit(tab, "/changes")
            tab.screenshot(f"changes{suffix}")
            tab.assert_clean()
        with open_tab(browser, server, shots, viewport=viewport) as tab:
            visit(tab, f"/spec/{with_deps['hash']}?tag={CACHE_TAG}")
            tab.screenshot(f"spec-buildcache{suffix}")
            tab.assert_clean()


def test_a_spec_of_a_cache_read_over_http_links_its_spec_file_and_tarball(
    browser: Browser, shots: Path, tmp_path: Path
) -> None:
    """A build cache indexed from a URL: the spec page offers its files as Spack fetches
    them (a v2 stack here: the signed spec file and the .spack tarball)."""
    mirror = write_mirror(MirrorConfig(specs=30, packages=10, stacks=1, seed=2), tmp_path / "bc")
    with MirrorHTTPServer(tmp_path / "bc") as http, HttpReader(None) as reader:
        base = http.url_for("stacks/root")
        build_index([base], tmp_path / "ix", tag=CACHE_TAG, reader=reader)
    app = create_app(Settings(index=tmp_path / "ix", reload_interval=0))
    with LiveServer(app) as server, open_tab(browser, server, shots) as tab:
        with httpx.Client(base_url=server, timeout=30) as api:
            spec = query(
                api,
                "query($tag: String) { specs(tag: $tag, first: 1) { nodes { hash specFileUrl "
                "tarballUrl } } }",
                tag=CACHE_TAG,
            )["specs"]["nodes"][0]
        assert spec["specFileUrl"].startswith(f"{base}/build_cache/")
        page = visit(tab, f"/spec/{spec['hash']}?tag={CACHE_TAG}")
        fields = page.locator("dl.fields")
        expect(fields.locator(f'a[href="{spec["specFileUrl"]}"]')).to_be_visible()
        expect(fields.locator(f'a[href="{spec["tarballUrl"]}"]')).to_be_visible()
        expect(fields).to_contain_text("View raw spec")
        expect(fields).to_contain_text("Download tarball")
        assert mirror.specs == 30
        tab.assert_clean()
