"""report.html in a real browser: headless Chromium loads the report of the shipped datasets plus a
planted-failure dataset, takes screenshots (kept under test-output/report-browser/, a CI artifact;
$TOKFIDELITY_TEST_OUTPUT moves it), and the rendered DOM is checked: the summary numbers equal
results.json, every non-exact sample is listed, filters from the URL change what is visible, and no
request leaves the page (Chromium's NetLog lists none made by the page, and every request goes to a
local proxy that answers nothing; a control page that loads a remote image proves both see it).

Chromium is Debian's package (scripts/setup installs it); a missing browser fails these tests."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from browser import Browser, Dom, RecordingProxy, chromium_path
from report_support import PLANTED, ROOT, SHIPPED, make_golden, run_pytest

OUTPUT = Path(os.environ.get("TOKFIDELITY_TEST_OUTPUT") or ROOT / "test-output") / "report-browser"


@pytest.fixture(scope="module")
def browser():
    if chromium_path() is None:
        pytest.fail("no chromium: install Debian's package (scripts/setup does: apt-get install -y chromium)")
    proxy = RecordingProxy()
    b = Browser(proxy)
    yield b
    b.close()
    proxy.close()


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    root = tmp_path_factory.mktemp("browser")
    make_golden(root)
    result = run_pytest(root, root / "out", "-n", "2")
    assert result.returncode == 1, result.stdout[-3000:]  # the planted failures fail; the report is still written
    OUTPUT.mkdir(parents=True, exist_ok=True)
    for name in ("report.html", "results.json"):
        shutil.copy(root / "out" / name, OUTPUT / name)
    doc = json.loads((root / "out" / "results.json").read_text(encoding="utf-8"))
    return root / "out" / "report.html", doc


def _visible(dom: Dom) -> set[str]:
    return {a["data-sample"] for a in dom.find("article") if "data-sample" in a and "hidden" not in a}


def test_the_page_shows_what_results_json_says_and_sends_nothing(browser, report):
    page, doc = report
    html, wall = browser.dump_dom(page.as_uri())
    dom = Dom(html)
    assert browser.page_requests == []
    for d in doc["datasets"]:  # the summary table, cell by cell
        values = {c["data-key"]: c["data-value"] for c in _row_cells(dom, d["name"])}
        assert values, d["name"]
        for key in ("exact", "policy", "known", "new", "bad_input", "tokens", "hunks"):
            assert int(values[key]) == d["counts"][key], (d["name"], key)
        assert int(values["samples_run"]) == d["samples_run"] and int(values["samples_total"]) == d["samples_total"]
        assert float(values["divergent_samples"]) == d["rates"]["divergent_samples"]
    listed = {a["data-sample"] for a in dom.find("article") if "data-sample" in a}
    listed |= {f'{r["data-dataset"]}/{r.get("data-id")}' for r in dom.find("tr", **{"class": "srow"})}
    assert listed == {f'{s["dataset"]}/{s["id"]}' for s in doc["samples"]}
    assert _visible(dom) == listed  # no filter: everything shown
    body = dom.body()
    assert int(body["data-shown"]) == len(doc["samples"])
    assert {v: sum(s["verdict"] == v for s in doc["samples"]) for v in ("new", "bad-input")} == {"new": 3, "bad-input": 1}
    assert "Complete run" in dom.text["partial"]
    assert "test_stop_tokens failed" in dom.text["problems"] and "163533 'chas'" in dom.text["problems"]
    print(f"report of {len(doc['samples'])} samples: {page.stat().st_size:,} bytes; ready {body['data-ready-ms']} ms "
          f"after navigation; chromium run {wall:.2f} s")
    browser.screenshot(page.as_uri(), OUTPUT / "report.png")
    assert (OUTPUT / "report.png").stat().st_size > 50_000
    assert browser.page_requests == []


def _row_cells(dom: Dom, dataset: str) -> list[dict]:
    """The data cells of the summary row of ``dataset`` (cells follow their row in document order)."""
    out, inside = [], False
    for tag, attrs in dom.elements:
        if tag == "tr":
            inside = attrs.get("data-dataset") == dataset and "srow" not in (attrs.get("class") or "")
        elif inside and tag == "td" and "data-key" in attrs:
            out.append(attrs)
    return out


@pytest.mark.parametrize("query, wanted", [
    ("#filter:verdict=new", lambda s: s["verdict"] == "new"),
    ("#filter:verdict=known;dataset=B3_magicoder", lambda s: s["verdict"] == "known" and s["dataset"] == "B3_magicoder"),
    ("?class=whitespace,special-token-id", lambda s: {"whitespace", "special-token-id"} & set(s.get("classes", []))),
    ("#filter:dataset=P9_planted;verdict=policy,bad-input", lambda s: s["dataset"] == PLANTED and s["verdict"] in ("policy", "bad-input")),
])
def test_filters_in_the_url_change_what_is_visible(browser, report, query, wanted):
    page, doc = report
    dom = Dom(browser.dump_dom(page.as_uri() + query)[0])
    expected = {f'{s["dataset"]}/{s["id"]}' for s in doc["samples"] if wanted(s)}
    assert expected and len(expected) < len(doc["samples"])
    assert _visible(dom) == expected
    assert int(dom.body()["data-shown"]) == len(expected)
    checked = {(a["name"], a["value"]) for a in dom.find("input") if "checked" in a}
    assert checked  # the filter boxes show the state read from the URL
    if query.startswith("#filter:verdict=new"):
        browser.screenshot(page.as_uri() + query, OUTPUT / "report-new-only.png", height=1600)
    assert browser.page_requests == []


def test_the_proxy_would_see_a_request_that_left_a_page(browser, tmp_path):
    """The control for the checks above: a page that loads a remote image does reach the proxy."""
    page = tmp_path / "leaky.html"
    page.write_text('<!doctype html><p>leak</p><img src="http://tokfidelity.invalid/pixel.png">', encoding="utf-8")
    browser.dump_dom(page.as_uri())
    assert browser.page_requests == ["http://tokfidelity.invalid/pixel.png"]
    assert any("tokfidelity.invalid" in r for r in browser.proxy.requests), browser.proxy.requests  # kept local
    browser.page_requests.clear()


def test_shipped_datasets_alone_render_with_every_known_divergence(browser, report, tmp_path):
    page, doc = report
    known = {f'{s["dataset"]}/{s["id"]}' for s in doc["samples"] if s["dataset"] in SHIPPED}
    assert len(known) == sum(d["counts"]["known"] for d in doc["datasets"] if d["name"] in SHIPPED) > 30
    dom = Dom(browser.dump_dom(page.as_uri() + "#filter:dataset=" + ",".join(SHIPPED))[0])
    assert _visible(dom) == known


def test_a_report_of_40000_samples_loads_in_seconds_and_lists_every_sample(browser, tmp_path):
    """The shipped datasets' report merged with 40,000 synthetic samples of ~3,500 tokens (nearly all with
    a harmless re-split; bench/bench_report.py makes them from real diagnoses): new, known and
    text-changing samples in detail, the rest a page at a time, and every one reachable by a filter."""
    import importlib.util

    from pipeline.reporting.html import write_report
    from pipeline.reporting.results import merge_results

    spec = importlib.util.spec_from_file_location("bench_report", ROOT / "bench" / "bench_report.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    synth = bench.synthetic(40_000, 3_500)
    doc = merge_results([("synthetic", synth)])
    page = write_report(doc, tmp_path)
    size = page.stat().st_size
    dom = Dom(browser.dump_dom(page.as_uri())[0])
    body = dom.body()
    ready = int(body["data-ready-ms"])
    print(f"40,000 samples: report.html {size / 1e6:.1f} MB, page script done {ready} ms after navigation")
    assert size < 25_000_000 and ready < 15_000
    assert int(body["data-shown"]) == len(doc["samples"]) > 36_000
    detailed = {a["data-sample"] for a in dom.find("article") if "data-sample" in a}
    must = {f'{s["dataset"]}/{s["id"]}' for s in doc["samples"] if s["verdict"] in ("new", "known") or not s["texts_identical"]}
    assert must <= detailed and len(detailed) - len(must) == 300  # plus the first 300 re-splits
    assert len(dom.find("tr", **{"class": "srow"})) == 200  # the summarised list, a page at a time
    last = doc["samples"][-1]
    one = Dom(browser.dump_dom(page.as_uri() + f"#filter:verdict={last['verdict']}")[0])
    shown = int(one.body()["data-shown"])
    assert shown == sum(s["verdict"] == last["verdict"] for s in doc["samples"])
    assert browser.page_requests == []
