"""The viewer's page in a real headless browser (Debian's Chromium through ChromeDriver and Selenium).

Each main page is saved as a screenshot in ``$CRMARENA_VIEWER_SCREENSHOTS`` (default: a temporary
directory, printed) so that it can be looked at. CI installs the browser (``.ci/run``); elsewhere the tests
are skipped with the reason when Chromium is missing.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from crmarena_gym.eval import write_report
from crmarena_gym.tasks import TaskInstance
from tests.eval.viewer_runs import llm_record, make_runs, serving, write_run

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")
if not (CHROMIUM and CHROMEDRIVER):
    if os.environ.get("CI"):
        pytest.fail("CI needs Debian's chromium and chromium-driver for the viewer's browser tests (see .ci/run)")
    pytest.skip("no Chromium and ChromeDriver here (apt-get install chromium chromium-driver)", allow_module_level=True)

webdriver = pytest.importorskip("selenium.webdriver")
from selenium.webdriver.chrome.service import Service  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import Select, WebDriverWait  # noqa: E402


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",  # the machine has no network: no calls home
        "--disable-component-update",
        "--disable-sync",
        "--window-size=1400,1000",
    ):
        options.add_argument(flag)
    driver = webdriver.Chrome(options=options, service=Service(CHROMEDRIVER))
    driver.set_page_load_timeout(30)
    yield driver
    driver.quit()


@pytest.fixture(scope="module")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = Path(os.environ.get("CRMARENA_VIEWER_SCREENSHOTS") or tmp_path_factory.mktemp("viewer-screenshots"))
    directory.mkdir(parents=True, exist_ok=True)
    print(f"viewer screenshots in {directory}")
    return directory


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory, env_org: Path, nine_tasks: list[TaskInstance]) -> dict[str, Path]:
    return make_runs(tmp_path_factory.mktemp("viewer-browser-runs"), env_org, nine_tasks)


def _records(directory: Path) -> list[dict]:
    return [json.loads(line) for line in (directory / "results.jsonl").read_text().splitlines()]


def _wait(driver: Any, condition: Callable[[Any], Any], timeout: float = 10) -> Any:
    return WebDriverWait(driver, timeout, poll_frequency=0.1).until(condition)


def _open(driver: Any, url: str, page: str) -> None:
    driver.get(url)
    _wait(driver, lambda d: d.execute_script("return document.body.dataset.page") == page)


def _rows(driver: Any) -> list[Any]:
    return driver.find_elements(By.CSS_SELECTOR, "#episodes tbody tr")


def _no_console_errors(driver: Any) -> None:
    errors = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]
    assert not errors, errors


def test_lists_runs_filters_opens_an_episode_and_compares(browser: Any, runs: dict[str, Path], shots: Path) -> None:
    random_records = _records(runs["random"])
    with serving([runs["oracle"], runs["random"], runs["scripted"]]) as base:
        _open(browser, base + "/#/", "runs")
        _wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "#runs tbody tr"))
        names = [r.get_attribute("data-run") for r in browser.find_elements(By.CSS_SELECTOR, "#runs tbody tr")]
        assert names == ["oracle", "random", "scripted"]
        assert "pass^1" in browser.find_element(By.CSS_SELECTOR, "table.tasks").text  # per-task tables
        browser.save_screenshot(str(shots / "runs.png"))

        # The random run: every episode, then filters by task and by failure.
        browser.find_element(By.LINK_TEXT, "random").click()
        _wait(browser, lambda d: len(_rows(d)) == len(random_records))
        Select(browser.find_element(By.ID, "filter-task")).select_by_value("HTU")
        htu = [r for r in random_records if r["abbrev"] == "HTU"]
        _wait(browser, lambda d: len(_rows(d)) == len(htu))
        assert {row.find_elements(By.TAG_NAME, "td")[2].text for row in _rows(browser)} == {"HTU"}
        Select(browser.find_element(By.ID, "filter-task")).select_by_value("")
        Select(browser.find_element(By.ID, "filter-outcome")).select_by_value("failure")
        failed = [r for r in random_records if r["reward"] < 1]
        _wait(browser, lambda d: len(_rows(d)) == len(failed))
        shown = {(int(r.get_attribute("data-idx")), int(r.get_attribute("data-trial"))) for r in _rows(browser)}
        assert shown == {(r["idx"], r["trial"]) for r in failed}
        assert "outcome=failure" in browser.current_url  # the filtered list can be linked to
        browser.save_screenshot(str(shots / "run.png"))

        # One episode of the scripted run: each step's action and observation, the error codes.
        scripted = _records(runs["scripted"])[0]
        _open(browser, f"{base}/#/run/scripted?q=NoSuchField", "run")
        _wait(browser, lambda d: len(_rows(d)) == len(_records(runs["scripted"])))
        _rows(browser)[0].find_element(By.LINK_TEXT, "open").click()
        _wait(browser, lambda d: d.execute_script("return document.body.dataset.page") == "episode")
        steps = _wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, ".step"))
        assert len(steps) == scripted["turns"] == 4
        assert "SOQL query" in steps[0].text and "SELECT NoSuchField__c FROM Case" in steps[0].text
        assert "INVALID_FIELD" in steps[0].find_element(By.CSS_SELECTOR, ".code").text
        assert scripted["trajectory"][1]["observation"] in steps[0].text
        assert "get_issues(…)" in steps[1].text and "FUNCTION_ERROR" in steps[2].text
        assert browser.find_element(By.CSS_SELECTOR, ".verdict .gold").text.startswith(str(scripted["gold"]))
        browser.save_screenshot(str(shots / "episode.png"))

        # Two runs side by side on one instance, then the solved-by table.
        idx = random_records[0]["idx"]
        _open(browser, f"{base}/#/compare/{idx}?runs=oracle,random&trials=0,1", "compare")
        sides = _wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, ".side .episode-view"))
        assert [s.get_attribute("data-run") for s in sides] == ["oracle", "random"]
        assert "Solved" in sides[0].find_element(By.CSS_SELECTOR, ".verdict").text
        browser.save_screenshot(str(shots / "compare.png"))
        _open(browser, f"{base}/#/instances", "instances")
        rows = _wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "#instances tbody tr"))
        assert len(rows) == len({r["idx"] for r in random_records})
        browser.save_screenshot(str(shots / "instances.png"))
        _no_console_errors(browser)


def test_updates_while_a_run_writes_and_says_what_is_wrong(browser: Any, tmp_path: Path, shots: Path) -> None:
    episode = {"idx": 1, "trial": 0, "abbrev": "BRI", "reward": 1.0, "turns": 1, "trajectory": [{"observation": "q"}]}
    live = write_run(tmp_path / "live", [episode], {"episodes": 3, "run": {"policy": "oracle"}})
    broken = tmp_path / "broken"
    broken.mkdir()
    llm = write_run(tmp_path / "llm", [llm_record()], {"system_prompts": {"ab" * 32: "You are a CRM analyst."}})
    with serving([live, broken, llm]) as base:
        _open(browser, f"{base}/#/episode/llm/4/0", "episode")
        head = browser.find_element(By.CSS_SELECTOR, ".step .head").text
        assert "900 + 40 tokens, $0.0031" in head
        assert "model reply" in browser.find_element(By.CSS_SELECTOR, ".step summary").text
        assert "lenient matching" in browser.find_element(By.CSS_SELECTOR, ".verdict").text

        _open(browser, f"{base}/#/run/live", "run")
        _wait(browser, lambda d: len(_rows(d)) == 1)
        with open(live / "results.jsonl", "a") as handle:
            handle.write(json.dumps({**episode, "idx": 2, "reward": 0.0}) + "\n")
        _wait(browser, lambda d: len(_rows(d)) == 2)  # the page polls and redraws
        assert "2 of 3" in browser.find_element(By.CSS_SELECTOR, "dl.facts").text
        _open(browser, f"{base}/#/", "runs")
        alert = _wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, ".message"))
        assert "broken" in alert[0].text and "has no results.jsonl" in alert[0].text
        _open(browser, f"{base}/#/run/nothing", "run")
        assert "no run 'nothing'" in browser.find_element(By.CSS_SELECTOR, ".message").text
        browser.save_screenshot(str(shots / "problems.png"))


def test_the_report_links_open_episode_pages_from_the_disk(
    browser: Any, runs: dict[str, Path], tmp_path: Path, shots: Path
) -> None:
    report = tmp_path / "report.html"
    write_report([runs["oracle"], runs["random"]], report)
    browser.get(report.as_uri())
    link = browser.find_element(By.CSS_SELECTOR, "ul.episodes a[href*='#/episode/random/']")
    href = link.get_attribute("href")
    link.click()
    _wait(browser, lambda d: d.execute_script("return document.body.dataset.page") == "episode")
    idx, trial = href.rsplit("/", 2)[1:]
    record = next(r for r in _records(runs["random"]) if (r["idx"], r["trial"]) == (int(idx), int(trial)))
    assert len(browser.find_elements(By.CSS_SELECTOR, ".step")) == record["turns"]
    assert "Not solved" in browser.find_element(By.CSS_SELECTOR, ".verdict").text
    assert "a saved copy" in browser.find_element(By.ID, "live").text
    browser.save_screenshot(str(shots / "report-episode.png"))
