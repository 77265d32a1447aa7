"""The viewer's page in a real headless browser (Debian's Chromium through ChromeDriver and Selenium).

Each main page is saved as a screenshot in ``$CRMARENA_VIEWER_SCREENSHOTS`` (default: a temporary
directory, printed) so that it can be looked at. CI installs the browser (``.ci/run``); elsewhere the tests
are skipped with the reason when Chromium is missing.
"""

from __future__ import annotations

import ast
import json
import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from crmarena_gym._json import json_text
from crmarena_gym.eval import ViewerData, export_viewer, write_report
from crmarena_gym.tasks import TaskInstance
from tests.eval.viewer_runs import llm_record, make_runs, serving, synthetic_experiment, synthetic_run, write_run

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")
if not (CHROMIUM and CHROMEDRIVER):
    if os.environ.get("CI"):
        pytest.fail("CI needs Debian's chromium and chromium-driver for the viewer's browser tests (see .ci/run)")
    pytest.skip("no Chromium and ChromeDriver here (apt-get install chromium chromium-driver)", allow_module_level=True)

webdriver = pytest.importorskip("selenium.webdriver")
from selenium.common.exceptions import StaleElementReferenceException  # noqa: E402
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
    # A condition may read an element the page has just redrawn: it is read again on the next poll.
    wait = WebDriverWait(driver, timeout, poll_frequency=0.1, ignored_exceptions=(StaleElementReferenceException,))
    return wait.until(condition)


def _open(driver: Any, url: str, page: str) -> None:
    driver.get("about:blank")  # a new hash on the same page would not load it again: the old page would answer
    driver.get(url)
    _wait(driver, lambda d: d.execute_script("return document.body.dataset.page") == page)


def _rows(driver: Any) -> list[Any]:
    return driver.find_elements(By.CSS_SELECTOR, "#episodes tbody tr.episode")


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
        assert {(i, t) for i, t in _shown(browser)} == {(r["idx"], r["trial"]) for r in htu}
        Select(browser.find_element(By.ID, "filter-task")).select_by_value("")
        Select(browser.find_element(By.ID, "filter-outcome")).select_by_value("failure")
        failed = [r for r in random_records if r["reward"] < 1]
        # The filter's own list, not the one clearing the task left (as long, when every episode failed); and the
        # filtered list can be linked to.
        _wait(browser, lambda d: "outcome=failure" in d.current_url and len(_rows(d)) == len(failed))
        shown = set(_shown(browser))
        assert shown == {(r["idx"], r["trial"]) for r in failed}
        browser.save_screenshot(str(shots / "run.png"))

        # One episode of the scripted run: each step's action and observation, the error codes.
        scripted = _records(runs["scripted"])[0]
        _open(browser, f"{base}/#/run/scripted?q=NoSuchField", "run")
        _wait(browser, lambda d: len(_rows(d)) == len(_records(runs["scripted"])))
        browser.execute_script("document.querySelector('#episodes tr.episode a').click();")
        _wait(browser, lambda d: d.execute_script("return document.body.dataset.page") == "episode")
        steps = _wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, ".step"))
        assert len(steps) == scripted["turns"] == 4
        assert "SOQL query" in steps[0].text and "SELECT NoSuchField__c FROM Case" in steps[0].text
        assert "INVALID_FIELD" in steps[0].find_element(By.CSS_SELECTOR, ".code").text
        assert scripted["trajectory"][1]["observation"] in steps[0].text
        assert "get_issues(…)" in steps[1].text and "FUNCTION_ERROR" in steps[2].text
        gold = "unanswerable (None)" if scripted["answerable"] is False else str(scripted["gold"])
        assert browser.find_element(By.CSS_SELECTOR, ".verdict .gold").text == gold
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


# -- sweeps at scale: a 100-cell experiment and a 20,000-episode run, built synthetically ---------------


@pytest.fixture(scope="module")
def sweep(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("viewer-sweep")
    synthetic_experiment(root / "exp", instances=40)
    synthetic_run(root / "big", 10000, 2, dropout="corrupt", seed=7)
    return {"exp": root / "exp", "big": root / "big"}


def _first_paint(driver: Any, url: str, page: str) -> float:
    """Open ``url`` afresh; the seconds from the start of its loading to the page's first drawing."""
    driver.get("about:blank")
    driver.get(url)
    _wait(driver, lambda d: d.execute_script("return document.body.dataset.page") == page, timeout=60)
    return int(driver.execute_script("return document.body.dataset.firstPaint")) / 1000


# Read in one script: the page may redraw a table between two WebDriver calls.
def _shown(driver: Any) -> list[tuple[int, int]]:
    rows = driver.execute_script(
        "return [...document.querySelectorAll('#episodes tbody tr.episode')]"
        ".map((r) => [r.dataset.idx, r.dataset.trial]);"
    )
    return [(int(idx), int(trial)) for idx, trial in rows]


def _run_rows(driver: Any) -> list[Any]:
    return driver.find_elements(By.CSS_SELECTOR, "#runs tbody tr")


def _columns(driver: Any) -> list[str]:
    return driver.execute_script(
        "return [...document.querySelectorAll('#instances th.column')].map((th) => th.dataset.column);"
    )


def _sort_by(driver: Any, table: str, key: str, order: str) -> None:
    """Click a column's header until the table is sorted by it in ``order`` (through scripts: the page
    redraws the header on each click)."""
    want = "descending" if order == "desc" else "ascending"
    selector = f"{table} th[data-sort='{key}']"
    read = f'const th = document.querySelector("{selector}"); return th ? th.getAttribute("aria-sort") : null;'
    for _ in range(3):
        state = driver.execute_script(read)
        if state == want:
            return
        driver.execute_script(f'document.querySelector("{selector} button").click();')
        _wait(driver, lambda d, before=state: d.execute_script(read) != before)
    raise AssertionError(f"{table} did not sort by {key} {order}")


@pytest.mark.slow
def test_a_100_cell_experiment(browser: Any, sweep: dict[str, Path], shots: Path) -> None:
    browser.get_log("browser")  # what earlier tests logged (a 404 they asked for) is theirs
    state = json.loads((sweep["exp"] / "experiment.json").read_text())
    done = [c for c in state["cells"] if c["status"] == "done"]
    accuracy = {}
    for c in done:
        rewards = [r["reward"] for r in _records(sweep["exp"] / c["path"])]
        accuracy[(c["sweep"], c["policy"], c["label"])] = sum(rewards) / len(rewards)
    with serving([sweep["exp"]]) as base:
        paint = _first_paint(browser, base + "/#/", "runs")
        print(f"100-cell experiment: first paint {paint:.2f} s")
        assert paint < 2.0
        # One table per sweep: settings by policies, each cell its run's accuracy; one note for the skipped.
        pivots = browser.find_elements(By.CSS_SELECTOR, "table.pivot")
        assert [p.get_attribute("data-sweep") for p in pivots] == ["dropout", "turns", "removal", "functions"]
        for pivot in pivots:
            heads = [th.text for th in pivot.find_elements(By.CSS_SELECTOR, "thead th")]
            assert heads == ["setting", "oracle", "reactive", "random", "model-a", "model-b"]
            for row in pivot.find_elements(By.CSS_SELECTOR, "tbody tr"):
                setting = row.get_attribute("data-setting")
                values = [td.find_element(By.TAG_NAME, "a").text for td in row.find_elements(By.CSS_SELECTOR, "td.acc")]
                sweep_name = pivot.get_attribute("data-sweep")
                expected = [f"{accuracy[(sweep_name, p, setting)]:.3f}" for p in heads[1:]]
                assert values == expected, (sweep_name, setting)
        notes = [m.text for m in browser.find_elements(By.CSS_SELECTOR, ".experiment .message.note")]
        assert notes == ["model-c: 20 cells skipped: SYNTHETIC_NO_SUCH_KEY is not set"]
        browser.save_screenshot(str(shots / "experiment.png"))

        # Every cell as a run: 50 a page, sorted by accuracy, filtered by text.
        assert len(_run_rows(browser)) == 50 and browser.find_element(By.ID, "runs-count").text == "100 of 100 runs"
        _sort_by(browser, "#runs", "accuracy", "desc")
        shown = [
            float(v)
            for v in browser.execute_script(
                "return [...document.querySelectorAll('#runs td.accuracy')].map((td) => td.textContent);"
            )
        ]
        assert shown == sorted(accuracy.values(), reverse=True)[:50] == sorted(shown, reverse=True)
        box = browser.find_element(By.ID, "runs-filter")
        box.send_keys("turns")
        _wait(browser, lambda d: d.find_element(By.ID, "runs-count").text == "25 of 100 runs")
        assert all(
            "turns" in text
            for text in browser.execute_script(
                "return [...document.querySelectorAll('#runs tbody tr')].map((tr) => tr.textContent);"
            )
        )
        browser.save_screenshot(str(shots / "experiment-runs.png"))

        # Which run solved each instance: five policies as columns, or a hundred runs twelve at a time.
        _open(browser, base + "/#/instances", "instances")
        assert _columns(browser) == ["oracle", "reactive", "random", "model-a", "model-b"]
        assert len(browser.find_elements(By.CSS_SELECTOR, "#instances tbody tr")) == 40
        browser.save_screenshot(str(shots / "instances-by-policy.png"))
        Select(browser.find_element(By.ID, "filter-by")).select_by_value("run")
        _wait(browser, lambda d: len(_columns(d)) == 12)
        assert "columns 1–12 of 100" in browser.find_element(By.CSS_SELECTOR, ".columns-pager").text
        first_page = _columns(browser)
        browser.find_element(By.ID, "cols-next").click()
        _wait(browser, lambda d: "columns 13–24 of 100" in d.find_element(By.CSS_SELECTOR, ".columns-pager").text)
        assert not set(_columns(browser)) & set(first_page)
        browser.save_screenshot(str(shots / "instances-by-run.png"))
        _no_console_errors(browser)


@pytest.mark.slow
def test_a_20000_episode_run(browser: Any, sweep: dict[str, Path], shots: Path) -> None:
    browser.get_log("browser")  # what earlier tests logged (a 404 they asked for) is theirs
    records = _records(sweep["big"])
    assert len(records) == 20000
    with serving([sweep["big"]]) as base:
        paint = _first_paint(browser, base + "/#/run/big", "run")
        print(f"20,000-episode run: first paint {paint:.2f} s")
        assert paint < 2.0
        assert len(_rows(browser)) == 50 and browser.find_element(By.ID, "count").text == "20,000 of 20,000 episodes"
        browser.save_screenshot(str(shots / "big-run.png"))

        # Sorting: by turns, most first, ties in (idx, trial) order; the next page goes on from there.
        _sort_by(browser, "#episodes", "turns", "desc")
        by_turns = sorted(records, key=lambda r: (-r["turns"], r["idx"], r["trial"]))
        _wait(browser, lambda d: _shown(d) == [(r["idx"], r["trial"]) for r in by_turns[:50]])
        browser.find_element(By.CSS_SELECTOR, "#pager button:nth-of-type(3)").click()  # next
        _wait(browser, lambda d: _shown(d) == [(r["idx"], r["trial"]) for r in by_turns[50:100]])
        assert "sort=turns" in browser.current_url and "offset=50" in browser.current_url

        # Filtering: failed HTU episodes, still by turns.
        Select(browser.find_element(By.ID, "filter-task")).select_by_value("HTU")
        Select(browser.find_element(By.ID, "filter-outcome")).select_by_value("failure")
        failed = [r for r in by_turns if r["abbrev"] == "HTU" and r["reward"] < 1]
        _wait(browser, lambda d: _shown(d) == [(r["idx"], r["trial"]) for r in failed[:50]])
        assert browser.find_element(By.ID, "count").text == f"{len(failed):,} of 20,000 episodes"
        browser.save_screenshot(str(shots / "big-run-filtered.png"))

        # Search: each row shows its hit, marked; the episode page marks every hit.
        Select(browser.find_element(By.ID, "filter-task")).select_by_value("")
        Select(browser.find_element(By.ID, "filter-outcome")).select_by_value("")
        browser.find_element(By.ID, "filter-q").send_keys("late delivery")
        found = [r for r in by_turns if any("late delivery" in s.get("action", "") for s in r["trajectory"][1:])]
        _wait(browser, lambda d: _shown(d) == [(r["idx"], r["trial"]) for r in found[:50]])
        marks = browser.execute_script(
            "return [...document.querySelectorAll('#episodes tr.hit-row mark.hit')].map((m) => m.textContent);"
        )
        assert marks == ["late delivery"] * 50
        browser.save_screenshot(str(shots / "big-run-search.png"))
        browser.execute_script("document.querySelector('#episodes tr.episode a').click();")  # its idx: the episode
        _wait(browser, lambda d: d.execute_script("return document.body.dataset.page") == "episode")
        assert "q=late%20delivery" in browser.current_url
        record = found[0]
        hits = sum(s.get("action", "").count("late delivery") for s in record["trajectory"][1:])
        assert len(browser.find_elements(By.CSS_SELECTOR, ".episode-view mark.hit")) == hits
        assert browser.find_elements(By.CSS_SELECTOR, ".step pre.query .tok-kw")  # SOSL keywords highlighted

        # A corrupted value is marked where ToolResultDropout changed it.
        corrupted = next(
            (r, s)
            for r in records
            for s in r["trajectory"][1:]
            if (s.get("dropout") or {}).get("hit") and s["turn"] == 1
        )
        record, step = corrupted
        _open(browser, f"{base}/#/episode/big/{record['idx']}/{record['trial']}", "episode")
        row, field = step["dropout"]["path"]
        value = ast.literal_eval(step["observation"].removeprefix("Salesforce instance output: "))[row][field]
        marked = browser.find_element(By.CSS_SELECTOR, ".step[data-turn='1'] .corrupted")
        assert marked.text == repr(value)
        browser.save_screenshot(str(shots / "big-run-corrupted.png"))
        _no_console_errors(browser)


@pytest.mark.slow
def test_a_static_copy_answers_as_the_server_does(
    browser: Any, sweep: dict[str, Path], tmp_path: Path, shots: Path
) -> None:
    browser.get_log("browser")
    data = ViewerData([sweep["exp"]])
    export_viewer(data, tmp_path / "copy")
    paint = _first_paint(browser, (tmp_path / "copy" / "index.html").as_uri() + "#/", "runs")
    print(f"static copy of the 100-cell experiment: first paint {paint:.2f} s")
    assert paint < 2.0 and len(browser.find_elements(By.CSS_SELECTOR, "table.pivot")) == 4
    run = data.sources[7].id
    paths = [
        f"/api/runs/{run}/episodes?sort=turns&order=desc&offset=3&limit=7",
        f"/api/runs/{run}/episodes?task=HTU&outcome=failure",
        f"/api/runs/{run}/episodes?q=LATE&sort=reward&order=desc&limit=5",
        f"/api/runs/{run}/episodes?code=dropout&min_turns=3",
        f"/api/runs/{run}/episodes/3/0",
        "/api/instances?by=policy&sort=solved_by&order=desc&limit=10&cols_offset=1&cols_limit=2",
        "/api/instances?by=setting&sweep=turns&show=differ",
        "/api/instances?by=run&task=KQA&cols_limit=12",
        "/api/instances/5",
    ]
    for path in paths:
        served = json.loads(json_text(data.api(path)))
        static = browser.execute_async_script(
            "const done = arguments[arguments.length - 1];"
            "window.crmViewerGet(arguments[0]).then(done, (err) => done({failed: err.message}));",
            path,
        )
        assert static == served, path
    _open(browser, (tmp_path / "copy" / "index.html").as_uri() + f"#/run/{run}?sort=turns&order=desc", "run")
    records = sorted(_records(data.sources[7].path), key=lambda r: (-r["turns"], r["idx"], r["trial"]))
    _wait(browser, lambda d: _shown(d) == [(r["idx"], r["trial"]) for r in records[:40]])
    browser.save_screenshot(str(shots / "static-run.png"))
    _no_console_errors(browser)
