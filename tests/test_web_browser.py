"""The web view in a real headless browser: Debian's `chromium` driven by Selenium through the
system `chromedriver` (nothing downloaded). Sign in with the ops token, list, filter, page,
open a failed session from the overview, see the finding at its turn with the first broken
transition, review it with the keyboard-reachable form. Screenshots go to the test's temporary
directory and, when set, to `$TURNWATCH_SCREENSHOTS`."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest
from selenium import webdriver
from selenium.webdriver.chrome.service import Service as DriverService
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support import expected_conditions
from selenium.webdriver.support.select import Select
from selenium.webdriver.support.wait import WebDriverWait

from tests.web_service import FAILED, fill, start

pytestmark = pytest.mark.slow
TOKEN = "ui-test-token-0123456789"
CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"


@pytest.fixture
def browser(tmp_path):
    if not (Path(CHROMIUM).exists() and Path(CHROMEDRIVER).exists()):
        raise RuntimeError("install Debian's chromium and chromium-driver (see .ci/run)")
    profile = tempfile.mkdtemp(prefix="turnwatch-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (
        "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
        "--disable-dev-shm-usage", f"--user-data-dir={profile}", "--window-size=1280,900",
    ):  # fmt: skip
        options.add_argument(flag)
    driver = webdriver.Chrome(options=options, service=DriverService(CHROMEDRIVER))
    driver.set_page_load_timeout(30)
    yield driver
    driver.quit()
    shutil.rmtree(profile, ignore_errors=True)


class Shots:
    def __init__(self, driver, directory: Path) -> None:
        self.driver = driver
        self.directory = directory
        self.directory.mkdir(parents=True, exist_ok=True)
        self.extra = os.environ.get("TURNWATCH_SCREENSHOTS")
        self.taken: list[Path] = []

    def take(self, name: str, full_page: bool = False) -> None:
        if full_page:
            height = self.driver.execute_script("return document.body.scrollHeight")
            self.driver.set_window_size(1280, min(max(height + 40, 900), 6000))
        path = self.directory / f"{name}.png"
        assert self.driver.save_screenshot(str(path))
        self.taken.append(path)
        if self.extra:
            Path(self.extra).mkdir(parents=True, exist_ok=True)
            shutil.copy(path, Path(self.extra) / path.name)
        self.driver.set_window_size(1280, 900)


def follow(driver, element, *keys: str) -> None:
    """Click what leads to another page (or type `keys` into it) and wait until the old page is
    gone: a form's submit can return before Chromium swaps the document, and elements looked up
    then are the old page's."""
    page = driver.find_element(By.TAG_NAME, "html")
    if keys:
        element.send_keys(*keys)
    else:
        element.click()
    WebDriverWait(driver, 30).until(expected_conditions.staleness_of(page))


def test_list_filter_open_a_failed_session_and_review_its_finding(browser, tmp_path):
    fill(tmp_path / "data")
    background, _service, base = start(tmp_path / "data", **{"regressions.api_token": TOKEN})
    shots = Shots(browser, tmp_path / "screenshots")
    try:
        browser.get(f"{base}/ui/")
        assert "/ui/login" in browser.current_url  # the same token as /api/incidents
        follow(browser, browser.find_element(By.ID, "token"), TOKEN, Keys.ENTER)
        assert browser.find_element(By.TAG_NAME, "h1").text == "Overview"
        shots.take("overview")

        # Keyboard: the first Tab stop is the skip link, and it leads to the content.
        browser.find_element(By.TAG_NAME, "body").send_keys(Keys.TAB)
        assert browser.switch_to.active_element.text == "Skip to content"

        follow(browser, browser.find_element(By.LINK_TEXT, "Sessions"))
        assert (
            "32 session revision(s), showing 1–25"
            in browser.find_element(By.CLASS_NAME, "count").text
        )
        follow(browser, browser.find_element(By.LINK_TEXT, "Next page"))
        assert "showing 26–32" in browser.find_element(By.CLASS_NAME, "count").text
        shots.take("sessions")

        Select(browser.find_element(By.ID, "f-service")).select_by_visible_text("billing-bot")
        browser.find_element(By.ID, "f-version").send_keys("1.4.2")
        follow(browser, browser.find_element(By.CSS_SELECTOR, "form.filters button[type=submit]"))
        rows = browser.find_elements(By.CSS_SELECTOR, "table.list tbody tr")
        assert [row.find_element(By.TAG_NAME, "code").text for row in rows] == [
            "sess-billing-refund"
        ]
        shots.take("sessions-filtered")

        # From the overview, one click opens the failed session's transcript.
        follow(browser, browser.find_element(By.LINK_TEXT, "Overview"))
        follow(browser, browser.find_element(By.LINK_TEXT, FAILED))
        turn = browser.find_element(By.ID, "turn-1")
        finding = turn.find_element(By.CSS_SELECTOR, ".finding.critical")
        assert "forbidden_action: forbidden action refund_over_limit" in finding.text
        assert "tool name" in finding.text and "issue_refund" in finding.text  # its evidence
        assert "first broken transition: forbidden_action" in turn.text
        assert "Tool call issue_refund" in turn.text and '"amount": 900' in turn.text
        metrics = browser.find_element(By.CSS_SELECTOR, "section[aria-labelledby=metrics-h]")
        assert "0.50 of windows relevant" in metrics.text
        shots.take("session", full_page=True)

        turn.find_element(By.XPATH, ".//label[contains(., 'Confirmed')]").click()
        chosen = "input[name='finding:forbidden_action@1'][value=confirmed]"
        assert browser.find_element(By.CSS_SELECTOR, chosen).is_selected()
        Select(turn.find_element(By.ID, "m-turn_relevancy-1")).select_by_visible_text("pass")
        browser.find_element(By.ID, "reviewer").send_keys("ana")
        browser.find_element(By.ID, "note").send_keys("refund above the limit, no approval")
        follow(browser, browser.find_element(By.XPATH, "//button[text()='Save review']"))
        assert browser.find_element(By.CSS_SELECTOR, "p.notice").text == "Review saved."
        reviews = browser.find_element(By.CSS_SELECTOR, "ul.reviews").text
        assert "ana" in reviews and "1 confirmed" in reviews
        confirmed = browser.find_element(
            By.CSS_SELECTOR, "input[name='finding:forbidden_action@1'][value=confirmed]"
        )
        assert confirmed.is_selected() is False  # no reviewer header: the form starts blank
        shots.take("session-reviewed", full_page=True)
    finally:
        background.stop()
    assert all(path.stat().st_size > 10_000 for path in shots.taken)
