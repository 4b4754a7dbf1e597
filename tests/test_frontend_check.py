"""The front end's answers to what users ask, in a real browser (tests/browser.py): the
"Check an environment" page (a spack.lock pasted or opened, its coverage and the nearest
binary of each miss; a lockfile over the server's body limit; phone width), and the
header's "Runs on" selector narrowing the views; nothing leaves the origin."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect

from cachegql.index import build_index
from cachegql.server.app import Settings, create_app
from tests import question_data as qd
from tests.browser import PHONE, Tab, open_tab, screenshots_root
from tests.conftest import LiveServer


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("check-page")
    build_index([qd.write_cache(root / "mirror")], root / "ix", tag="develop")
    return root / "ix"


@pytest.fixture(scope="module")
def server(index: Path) -> Iterator[str]:
    with LiveServer(create_app(Settings(index=index, reload_interval=0))) as url:
        yield url


@pytest.fixture
def shots(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    return screenshots_root(request, tmp_path)


@pytest.fixture
def tab(browser: Browser, server: str, shots: Path) -> Iterator[Tab]:
    with open_tab(browser, server, shots) as opened:
        yield opened


def open_check(tab: Tab) -> Page:
    tab.page.goto(tab.origin + "/check", wait_until="load")
    expect(tab.page.get_by_role("heading", name="Check an environment")).to_be_visible()
    return tab.page


def test_a_pasted_lockfile_shows_coverage_and_the_nearest_binaries(tab: Tab) -> None:
    page = open_check(tab)
    page.get_by_label("spack.lock").fill(qd.environment(6).decode())
    page.get_by_role("button", name="Check").click()
    result = page.locator("#check-result")
    expect(result.locator(".coverage").first).to_contain_text("2/3 (66%)")
    expect(result.locator(".coverage")).to_have_count(3)  # overall and one per root
    expect(result).to_contain_text("lockfile version 6; 1 external left out")
    rows = result.locator("tbody tr")
    expect(rows).to_have_count(4)
    missing = rows.filter(has=page.locator(".status.missing"))
    expect(missing).to_have_count(1)
    expect(missing).to_contain_text("hdf5@1.14.3 ~mpi +shared arch=linux-ubuntu22.04-zen3")
    expect(missing.locator("ul.differences")).to_have_text("built for zen2: runs on your zen3")
    # The nearest binary opens its spec page, and the URL keeps the view.
    missing.locator("a").first.click()
    expect(page.get_by_role("heading", level=1)).to_contain_text("hdf5")
    assert "/spec/" in page.url
    page.go_back()
    expect(page.locator("#check-result .coverage").first).to_contain_text("2/3 (66%)")
    tab.screenshot("check-result", full_page=True)
    tab.assert_clean()


def test_a_lockfile_opened_from_a_file_and_the_keyboard(tab: Tab, tmp_path: Path) -> None:
    page = open_check(tab)
    lock = tmp_path / "spack.lock"
    lock.write_bytes(qd.environment(5))
    page.set_input_files("#lockfile-file", str(lock))
    expect(page.locator("#check-result .coverage").first).to_contain_text("2/3 (66%)")
    page.get_by_label("spack.lock").fill('{"_meta": {"lockfile-version": 4},\n "roots": [,]}')
    page.get_by_label("spack.lock").focus()
    page.keyboard.press("Tab")  # the file input
    page.keyboard.press("Tab")  # the button
    page.keyboard.press("Enter")
    expect(page.locator("#check-result .notice.error")).to_contain_text(
        "not valid JSON at line 2, column 12"
    )
    tab.assert_clean()


def test_a_lockfile_over_the_body_limit_says_so(browser: Browser, index: Path, shots: Path) -> None:
    app = create_app(Settings(index=index, reload_interval=0, max_body_bytes=2_000))
    with LiveServer(app) as url, open_tab(browser, url, shots) as tab:
        page = open_check(tab)
        page.get_by_label("spack.lock").fill(qd.environment(6).decode())
        page.get_by_role("button", name="Check").click()
        expect(page.locator("#check-result .notice.error")).to_contain_text(
            "This lockfile is too large to send: the request body is over 2,000 bytes"
        )
        assert tab.foreign == []
        # The browser logs the refused request itself; nothing else went wrong.
        assert all("413" in error for error in tab.errors), tab.errors


def test_the_check_page_fits_a_phone(browser: Browser, server: str, shots: Path) -> None:
    with open_tab(browser, server, shots, viewport=PHONE) as tab:
        page = open_check(tab)
        page.get_by_label("spack.lock").fill(qd.environment(6).decode())
        page.get_by_role("button", name="Check").click()
        expect(page.locator("#check-result .coverage").first).to_contain_text("2/3")
        widths = page.evaluate(
            "[document.documentElement.scrollWidth, document.body.scrollWidth, innerWidth]"
        )
        assert widths[0] <= widths[2] and widths[1] <= widths[2], widths
        tab.screenshot("phone-check", full_page=True)
        tab.assert_clean()


def test_runs_on_narrows_the_views_and_stays_in_the_url(tab: Tab) -> None:
    page = tab.page
    page.goto(tab.origin + "/package/hdf5", wait_until="load")
    rows = page.locator("main table tbody tr")
    expect(rows).to_have_count(10)
    choice = page.get_by_label("Runs on")
    expect(choice.locator("optgroup[label=aarch64] option[value=neoverse_v2]")).to_have_count(1)
    choice.select_option("zen2")
    expect(rows).to_have_count(7)  # zen2 (3), zen, x86_64_v3, x86_64_v2, x86_64
    assert "runsOn=zen2" in page.url
    choice.select_option("aarch64")
    expect(rows).to_have_count(1)
    page.reload(wait_until="load")
    expect(page.get_by_label("Runs on")).to_have_value("aarch64")
    expect(rows).to_have_count(1)
    # The header's links keep the choice, and search counts what runs there.
    page.get_by_role("link", name="Search", exact=True).first.click()
    assert "runsOn=aarch64" in page.url
    expect(page.locator(".summary")).to_have_text("1 spec in 1 package")
    choice.select_option("")
    expect(page.locator(".summary")).to_have_text("13 specs in 4 packages")
    assert "runsOn" not in page.url
    tab.assert_clean()
