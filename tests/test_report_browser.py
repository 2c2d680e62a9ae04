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
import re
import shutil
from pathlib import Path

import pytest
from _support.browser import Browser, Dom, RecordingProxy, chromium_path  # scripts/_support (tests/conftest.py)
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
        # a view the dataset was not judged under (another dataset's) is a "–" cell without a value
        shares = {c["data-view"]: float(c["data-value"]) for c in _row_cells(dom, d["name"], "data-view") if "data-value" in c}
        assert shares == {v: round(e["counts"]["exact"] / e["counts"]["samples"], 6) for v, e in d["by_view"].items()}
    listed = {a["data-sample"] for a in dom.find("article") if "data-sample" in a}
    listed |= {f'{r["data-dataset"]}/{r.get("data-id")}' for r in dom.find("tr", **{"class": "srow"})}
    assert listed == {_name(doc, s) for s in doc["samples"]}
    assert _visible(dom) == listed  # no filter: everything shown
    body = dom.body()
    assert int(body["data-shown"]) == len(doc["samples"])
    assert {v: sum(s["verdict"] == v for s in doc["samples"]) for v in ("new", "bad-input")} == {"new": 3, "bad-input": 1}
    assert "Complete run" in dom.text["partial"]
    assert "test_stop_tokens failed" in dom.text["problems"] and "163533 'chas'" in dom.text["problems"]
    print(f"report of {len(doc['samples'])} samples: {page.stat().st_size:,} bytes; ready {body['data-ready-ms']} ms "
          f"after navigation; chromium run {wall:.2f} s")
    browser.screenshot(page.as_uri(), OUTPUT / "report.png", height=4000)  # down to the first sample cards
    assert (OUTPUT / "report.png").stat().st_size > 50_000
    assert browser.page_requests == []


def _row_cells(dom: Dom, dataset: str, key: str = "data-key") -> list[dict]:
    """The data cells of the summary row of ``dataset`` (cells follow their row in document order);
    ``key="data-view"``: those of its row of the dataset x view table."""
    out, inside = [], False
    for tag, attrs in dom.elements:
        if tag == "tr":
            inside = attrs.get("data-dataset") == dataset and "srow" not in (attrs.get("class") or "")
        elif inside and tag == "td" and key in attrs:
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
    expected = {_name(doc, s) for s in doc["samples"] if wanted(s)}
    assert expected and len(expected) < len(doc["samples"])
    assert _visible(dom) == expected
    assert int(dom.body()["data-shown"]) == len(expected)
    checked = {(a["name"], a["value"]) for a in dom.find("input") if "checked" in a}
    assert checked  # the filter boxes show the state read from the URL
    if query.startswith("#filter:verdict=new"):
        browser.screenshot(page.as_uri() + query, OUTPUT / "report-new-only.png", height=3600)  # and their cards
    assert browser.page_requests == []


def test_the_proxy_would_see_a_request_that_left_a_page(browser, tmp_path):
    """The control for the checks above: a page that loads a remote image does reach the proxy."""
    page = tmp_path / "leaky.html"
    page.write_text('<!doctype html><p>leak</p><img src="http://tokfidelity.invalid/pixel.png">', encoding="utf-8")
    browser.dump_dom(page.as_uri())
    assert browser.page_requests == ["http://tokfidelity.invalid/pixel.png"]
    assert any("tokfidelity.invalid" in r for r in browser.proxy.requests), browser.proxy.requests  # kept local
    browser.page_requests.clear()


def _name(doc, s) -> str:
    """A sample's name on the page: ``DATASET/ID``, with ``[VIEW]`` when its dataset was judged under several views."""
    several = {d["name"] for d in doc["datasets"] if len(d.get("views", ())) > 1}
    return f'{s["dataset"]}/{s["id"]}' + (f'[{s["view"]}]' if s["dataset"] in several else "")


def test_shipped_datasets_alone_render_with_every_known_divergence(browser, report, tmp_path):
    page, doc = report
    known = {_name(doc, s) for s in doc["samples"] if s["dataset"] in SHIPPED}
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


# -- hostile text in every free-text field: shown as text, never run, never fetched -----------------

PAYLOAD = ("'\"><img src=x onerror=\"document.title='PWN{k}'\"><script>document.title='PWN{k}'</script>"
           "<svg onload=\"document.title='PWN{k}'\"></svg><meta http-equiv=\"refresh\" content=\"0;url=http://"
           "tokfidelity.invalid/leak{k}\"><form action=\"http://tokfidelity.invalid/f{k}\"></form><base href=\"http://"
           "tokfidelity.invalid/\"></textarea></title></style>\u202e{k}")
# Strings whose value the format fixes (a payload there is refused on reading, which test_report_input checks)
FIXED = {"schema", "verdict", "state", "bytes"}


def _strings(value, path=()):
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _strings(v, (*path, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _strings(v, (*path, i))
    elif isinstance(value, str):
        yield path, value


def _poisoned(doc: dict) -> tuple[dict, int]:
    """``doc`` with every string of free text replaced by a payload (one per distinct value, so that a
    dataset's name and the samples naming it stay equal), and how many distinct values that was."""
    fixed = {v for p, v in _strings(doc) if p and p[-1] in FIXED}
    values = sorted({v for p, v in _strings(doc) if v not in fixed and p[-1] not in FIXED})
    payload = {v: PAYLOAD.format(k=k) for k, v in enumerate(values)}

    def swap(value, parent=None):
        if isinstance(value, dict):  # the keys of by_view are view names, free text drawn as such
            return {(payload.get(k, k) if parent == "by_view" else k): swap(v, k) for k, v in value.items()}
        if isinstance(value, list):
            return [swap(v) for v in value]
        return payload.get(value, value) if isinstance(value, str) else value

    return swap(doc), len(values)


def _no_script_ran(browser, page: Path) -> Dom:
    dom = Dom(browser.dump_dom(page.as_uri())[0])
    assert dom.body().get("data-ready-ms") is not None  # the page's own script ran (its hash is allowed)
    assert not dom.find("img") and not dom.find("form") and not dom.find("base") and not dom.find("textarea")
    assert [t for t, _ in dom.elements if t == "script"] == ["script", "script"]  # the data and the page's script
    assert not [(t, a) for t, a in dom.elements if any(k.startswith("on") for k in a)]  # no event handler at all
    assert not [a for t, a in dom.elements if t == "meta" and a.get("http-equiv") == "refresh"]
    assert browser.page_requests == [], browser.page_requests  # no refresh, no form, nothing loaded
    return dom


def _title(browser, page: Path) -> str:
    html = browser.dump_dom(page.as_uri())[0]
    return html.split("<title>", 1)[1].split("</title>", 1)[0] if "<title>" in html else ""


def test_markup_in_every_string_of_results_json_stays_text(browser, report, tmp_path):
    """Every free-text string of a real run's results.json (ids, names, reports, token texts, notes,
    commands...) replaced by markup that would run a script, navigate or load something: the page
    shows it as text, and only the page's own script runs."""
    from pipeline.reporting.results import read_results, write_outputs

    _, doc = report
    poisoned, n = _poisoned(doc)
    assert n > 500
    source = tmp_path / "poisoned.json"
    source.write_text(json.dumps(poisoned, ensure_ascii=False), encoding="utf-8")
    page = write_outputs(read_results(source), tmp_path / "out")[1]
    html = page.read_text(encoding="utf-8")
    assert html.count("PWN") >= n  # every payload is on the page (as text)
    dom = _no_script_ran(browser, page)
    assert _title(browser, page) == "tokfidelity report"
    assert "onerror" in dom.text["problems"] and "\\u202e" in dom.text["problems"]  # shown as text, bidi made visible
    shown = {a["data-sample"] for a in dom.find("article")} | {f'{r["data-dataset"]}/{r.get("data-id")}' for r in dom.find("tr", **{"class": "srow"})}
    assert len(shown) == len(doc["samples"])  # every sample still listed under its (poisoned) name


def test_the_detector_sees_a_script_that_runs(browser, tmp_path):
    """The control for the test above: the same payload written raw into a page without the CSP runs."""
    page = tmp_path / "raw.html"
    page.write_text("<!doctype html><title>t</title><body>" + PAYLOAD.format(k=0).split("<meta")[0] + "</body>", encoding="utf-8")
    assert _title(browser, page) == "PWN0"


def test_markup_in_golden_data_stays_text_in_the_report(browser, tmp_path, kimi, profile):
    """Payloads in a golden dataset's ids, finish reasons, API response text, token id fields and
    manifest: the run fails them as bad input or divergences, and the report shows them as text."""
    from pipeline.core.golden import write_dataset

    think_end, stop = profile.ids["think_end"], profile.stop_id
    p = PAYLOAD.format
    ids = kimi.encode_ordinary("Sum.") + [think_end] + kimi.encode_ordinary("2 + 2 = 4.") + [stop]
    samples = [
        {"id": p(k=1), "output_ids": ids, "finish_reason": "stop", "response": {  # a new divergence: listed
            "reasoning": "Sum.", "content": "2 + 2 = 4. ", "finish_reason": "stop"}},
        {"id": "finish", "output_ids": ids, "finish_reason": p(k=2)},
        {"id": "ids", "output_ids": [1, p(k=3)], "finish_reason": "stop"},
        {"id": "prompt", "output_ids": ids, "finish_reason": "stop", "prompt_ids": [p(k=4)]},
        {"id": "messages", "output_ids": ids, "finish_reason": "stop", "messages": p(k=5)},
        {"id": "content", "output_ids": ids, "finish_reason": "stop", "response": {
            "reasoning": "Sum.", "content": "2 + 2 = 4." + p(k=6), "finish_reason": "stop"}},
        {"id": "response", "output_ids": ids, "finish_reason": "stop", "response": p(k=7)},
        {"id": 12.5, "output_ids": ids, "finish_reason": "stop"},
    ]
    base = {"profile": "kimi-k2.5", "tokenizer": "kimi-k2.5"}
    write_dataset(tmp_path / "golden" / "X1_payloads", {"name": "X1_payloads", **base, "source": p(k=8)}, samples)
    write_dataset(tmp_path / "golden" / "X2_manifest", {"name": "X2_manifest", **base, "source": "x",
                                                        "accept": {p(k=9): p(k=10)}, "max_known_divergence_rate": p(k=11)},
                  samples[:1])
    result = run_pytest(tmp_path, tmp_path / "out", datasets="X1,X2")
    assert result.returncode == 1 and "Traceback" not in result.stdout[-5000:], result.stdout[-3000:]
    page = tmp_path / "out" / "report.html"
    html = page.read_text(encoding="utf-8")
    for k in (1, 2, 3, 4):  # in an id, and in the bad-input reasons that quote a value
        assert re.search(rf"PWN{k}(?!\d)", html), k
    assert "test_manifest failed" in html and html.count("onerror") >= 5  # and the API text's tokens
    _no_script_ran(browser, page)
    assert _title(browser, page) == "tokfidelity report"


PROBE = (  # runs in a page that holds the report in a 420 px wide frame: what a phone's browser lays out
    "var f=document.getElementById('f');f.onload=function(){var d=f.contentDocument,w=f.contentWindow.innerWidth,"
    "b=document.body,r=function(e){return e.getBoundingClientRect();};"
    "b.dataset.innerWidth=w;b.dataset.scrollWidth=d.documentElement.scrollWidth;"
    "var g=d.querySelector('#summary thead th:nth-child(2)');b.dataset.gateRight=Math.round(r(g).right);"
    "b.dataset.gateText=g.textContent;b.dataset.reportReady=d.body.dataset.readyMs;var cut=[];"
    "d.querySelectorAll('#advice td, #verdict, #verdict li, .sample, .sample h3, .sample .meta, pre.reason, #review li')"
    ".forEach(function(e){var x=r(e),s=f.contentWindow.getComputedStyle(e);"
    "if(x.right>w+1||(e.scrollWidth>e.clientWidth+1&&s.overflowX!=='auto'&&s.overflowX!=='scroll'))"
    "cut.push(e.tagName+'.'+e.className+':'+Math.round(x.right)+'/'+e.scrollWidth+'>'+e.clientWidth);});"
    "b.dataset.cut=cut.join(' ');if(location.hash)d.getElementById(location.hash.slice(1)).scrollIntoView();};"
)


def _phone(page: Path, out: Path, height: int = 900, fragment: str = "") -> Path:
    """A page holding ``page`` in a 420 px wide frame (headless Chromium's windows are 500 px wide at
    least), with PROBE measuring its layout from outside: the report itself is the file under test."""
    out.write_text(f'<!doctype html><body style="margin:0"><iframe id="f" src="{page.as_uri()}{fragment}" width="420" '
                   f'height="{height}" style="border:0"></iframe><script>{PROBE}</script></body>', encoding="utf-8")
    return out


def test_the_page_works_at_a_phone_width(browser, report, tmp_path):
    """At 420 px: nothing wider than the window (wide tables scroll in their own box), the gate column
    on screen, the verdict, advice and sample cards whole; the screenshots show the verdict and the cards."""
    page, doc = report
    phone = _phone(page, tmp_path / "phone.html")
    body = Dom(browser._run(phone.as_uri(), "--dump-dom", "--allow-file-access-from-files", width=500, height=900)[0]).body()
    assert int(body["data-inner-width"]) == 420 and body.get("data-report-ready"), body
    assert int(body["data-scroll-width"]) <= 420, body  # no sideways scroll
    assert body["data-gate-text"] == "gate" and int(body["data-gate-right"]) <= 420, body
    assert body["data-cut"] == "", body["data-cut"]
    for name, fragment, height, scroll in (("report-phone.png", "", 4000, ""),  # the top; then the cards, scrolled to
                                           ("report-phone-new.png", "#filter:verdict=new,bad-input", 3000, "#detailed"),
                                           ("report-phone-deepseek.png", "#filter:dataset=D1_glaive", 3000, "#detailed")):
        frame = _phone(page, tmp_path / f"{name}.html", height, fragment)
        browser._run(frame.as_uri() + scroll, f"--screenshot={OUTPUT / name}", "--allow-file-access-from-files",
                     width=500, height=height)
        assert (OUTPUT / name).read_bytes()[:4] == b"\x89PNG"
    assert browser.page_requests == []


def test_the_top_of_the_page_states_the_outcome_then_completeness(browser, report, tmp_path, kimi, profile):
    from pipeline.reporting.html import write_report

    page, doc = report
    dom = Dom(browser.dump_dom(page.as_uri())[0])
    order = [a.get("id") for t, a in dom.elements if a.get("id") in ("verdict", "partial", "summary")]
    assert order == ["verdict", "partial", "summary"]
    (verdict,) = dom.find("div", id="verdict")
    assert verdict["data-outcome"] == "failed" and "complete" not in verdict["class"]
    text = dom.text["verdict"]
    assert text.startswith("FAILED: 1 of ") and "P9_planted: gate closed" in text
    assert "3 new divergences" in text and "1 sample with bad input" in text and "test_stop_tokens failed" in text, text
    assert "test(s) failed" in text and "Complete run" in dom.text["partial"]
    good = json.loads(json.dumps(doc))
    good["datasets"] = [d for d in good["datasets"] if d["name"] in SHIPPED]
    good["samples"] = [s for s in good["samples"] if s["dataset"] in SHIPPED]
    ok = Dom(browser.dump_dom(write_report(good, tmp_path).as_uri())[0])
    assert ok.find("div", id="verdict")[0]["data-outcome"] == "passed" and ok.text["verdict"].startswith("PASSED")


def test_bad_input_reasons_show_without_expanding_and_marker_glyphs_read(browser, report):
    page, doc = report
    dom = Dom(browser.dump_dom(page.as_uri())[0])
    inside, reasons = None, []
    for tag, attrs in dom.elements:
        if tag == "article":
            inside = attrs.get("data-verdict")
        elif tag == "details" and inside == "bad-input":
            inside = "folded"
        elif tag == "pre" and inside == "bad-input" and attrs.get("class") == "reason":
            reasons.append(attrs)
    assert len(reasons) == sum(s["verdict"] == "bad-input" for s in doc["samples"]) == 1
    assert "expected a list of token ids, got str" in dom.text["detailed"]
    marks = dom.find("em", **{"class": "lk"})
    assert len(marks) > 20 and {m["title"] for m in marks} == {"U+FF5C", "U+2581"}  # DeepSeek's markers, readable


def test_invisible_characters_are_shown_and_no_empty_table_is_drawn(browser, tmp_path, kimi, profile):
    """Bidi controls and zero-width characters in ids and token texts are shown as \\u202e; a report whose
    samples are all drawn in detail has no summarised table, and its script still runs."""
    from report_support import small_document

    from pipeline.reporting.html import write_report

    doc = small_document(kimi, profile)
    doc["samples"][1]["id"] = "evil\u202egnp.exe\u200b"
    for t in doc["samples"][1]["hunks"][0]["window"]["golden"]:
        t["text"] = "a\u2066b\ufeff"
    page = write_report(doc, tmp_path)
    dom = Dom(browser.dump_dom(page.as_uri())[0])
    assert not dom.find("section", id="summarised") and 'id="summarised-rows"' not in page.read_text(encoding="utf-8")
    assert int(dom.body()["data-shown"]) == len(doc["samples"])  # the script ran and counted every sample
    marks = dom.find("w", **{"class": "inv"})
    text = page.read_text(encoding="utf-8")
    assert "\u202e" not in text and "\u200b" not in text and "\u2066" not in text and "\ufeff" not in text
    assert "evil<w class=\"inv\">\\u202e</w>gnp.exe<w class=\"inv\">\\u200b</w>" in text and len(marks) > 4
    browser.screenshot(page.as_uri(), OUTPUT / "report-small.png", width=900, height=2000)
