"""Issue 21 item 5: one dataset, several engines. A manifest's ``api_views`` (or ``--tokfidelity-view``)
judges each sample under each view, named ``SAMPLE[VIEW]``, with its own reviewed divergences; counts per
view in the summary, results.json and report.html; the gate record lists the views judged, and the gate
opens only for the manifest's set. Bad view names are one test_manifest failure, never a flood."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from test_plugin import KIMI, exact_samples, kimi_ids, make_dataset, manifest, record, run, split_sample

from pipeline.core.gate import check_gate, judged_views
from pipeline.core.golden import write_dataset
from pipeline.core.tokenizer import load_tokenizer
from pipeline.reporting.results import merge_results, read_results

TWO = {"api_views": ["sglang", "vllm"]}


def ws_sample(sample_id: str = "ws") -> dict:
    """Exact under sglang; vLLM's kimi_k2 reasoning parser strips the reasoning's trailing newline (issue 21, 1)."""
    return {"id": sample_id, "output_ids": kimi_ids("Think.\n", "Answer."), "finish_reason": "stop"}


def gate(pytester, name: str, **kw):
    return check_gate(name, golden_dir=pytester.path / "golden", state_dir=pytester.path / "state", **kw)


def test_two_views_judge_every_sample_under_each_and_open_the_gate_for_both(pytester):
    make_dataset(pytester.path, "V1_two", exact_samples(3), **TWO)
    result = run(pytester, "--tokfidelity-dataset=V1", "-v")
    result.assert_outcomes(passed=4 + 2 * 3)
    result.stdout.fnmatch_lines([
        "*V1_two/samples.jsonl::s0?sglang? PASSED*", "*V1_two/samples.jsonl::s0?vllm? PASSED*",
        "*V1_two: 3 samples under 2 views (sglang, vllm)*",
        "*view sglang: 3 samples: 3 exact (100.00% exact)*", "*view vllm: 3 samples: 3 exact (100.00% exact)*",
        "*gate: open*",
    ])
    rec = record(pytester, "V1_two")
    assert rec["status"] == "open" and rec["views"] == ["sglang", "vllm"] and "view" not in rec
    assert judged_views(rec) == {"sglang", "vllm"}
    assert rec["counts"]["samples"] == 6 and {v: c["exact"] for v, c in rec["counts_by_view"].items()} == {"sglang": 3, "vllm": 3}
    for view in (None, "sglang", "vllm"):  # a stage's view must be one the gate judged
        status = gate(pytester, "V1", view=view)
        assert status.open, status.message
    status = gate(pytester, "V1", view="sglang-legacy")
    assert not status.open and "sglang-legacy is not a view the gate was opened with (sglang, vllm)" in status.message


def test_a_gate_judged_under_other_views_than_the_manifest_lists_is_closed(pytester):
    make_dataset(pytester.path, "V2_two", exact_samples(2), **TWO)
    result = run(pytester, "--tokfidelity-dataset=V2", "--tokfidelity-view=sglang")
    result.assert_outcomes(passed=4 + 2)
    assert record(pytester, "V2_two")["views"] == ["sglang"]
    status = gate(pytester, "V2")
    assert not status.open
    assert "the recorded run judged the views sglang, the manifest lists sglang, vllm" in status.message
    # a record written before `views` existed is read through its `view`
    assert judged_views({"view": "vllm"}) == {"vllm"} and judged_views({}) == frozenset()


def test_reviewed_divergences_are_per_view(pytester):
    """A divergence reviewed under one view never passes another view's test, and one reviewed under the
    view that shows it passes the next run, which opens the gate."""
    d = make_dataset(pytester.path, "V3_two", [*exact_samples(2), ws_sample()], max_known_divergence_rate=0.5, **TWO)
    result = run(pytester, "--tokfidelity-dataset=V3")
    result.assert_outcomes(passed=4 + 5, failed=1)
    result.stdout.fnmatch_lines(["*V3_two/ws under view vllm (line 3)*", "*FAILED*V3_two/samples.jsonl::ws?vllm?*"])
    run(pytester, "--tokfidelity-dataset=V3", "--snapshot-update")
    snapshots = (d / "__snapshots__" / "fidelity.ambr").read_text()
    assert "# name: test_fidelity[V3_two/ws[vllm]]" in snapshots and "ws[sglang]" not in snapshots
    result = run(pytester, "--tokfidelity-dataset=V3")
    result.assert_outcomes(passed=4 + 6)
    result.stdout.fnmatch_lines(["*view sglang: 3 samples: 3 exact*", "*view vllm: 3 samples: 2 exact, 1 known divergence*"])
    assert gate(pytester, "V3").open


def test_a_divergence_reviewed_under_the_manifest_view_does_not_pass_another_view(pytester):
    d = make_dataset(pytester.path, "V4_one", [*exact_samples(2), split_sample()], max_known_divergence_rate=0.5)
    run(pytester, "--tokfidelity-dataset=V4", "--snapshot-update")
    assert "# name: test_fidelity[V4_one/split]" in (d / "__snapshots__" / "fidelity.ambr").read_text()
    run(pytester, "--tokfidelity-dataset=V4").assert_outcomes(passed=4 + 3)  # shipped names still found
    result = run(pytester, "--tokfidelity-dataset=V4", "--tokfidelity-view=vllm", "-v")
    result.assert_outcomes(passed=4 + 2, failed=1)
    result.stdout.fnmatch_lines(["*V4_one/samples.jsonl::s0?vllm? PASSED*", "*FAILED*V4_one/samples.jsonl::split?vllm?*"])
    assert record(pytester, "V4_one")["status"] == "closed"


def test_counts_per_view_in_results_and_report(pytester):
    make_dataset(pytester.path, "V5_two", [*exact_samples(2), ws_sample()], **TWO)
    make_dataset(pytester.path, "V6_one", exact_samples(2))
    out = pytester.path / "report"
    run(pytester, "--tokfidelity-dataset=V5,V6", f"--tokfidelity-report={out}").assert_outcomes(passed=4 + 5 + 4 + 2, failed=1)
    doc = read_results(out / "results.json")
    by_name = {d["name"]: d for d in doc["datasets"]}
    two, one = by_name["V5_two"], by_name["V6_one"]
    assert two["views"] == ["sglang", "vllm"] and one["views"] == ["sglang"]
    assert {v: (e["counts"]["samples"], e["counts"]["exact"], e["counts"]["new"]) for v, e in two["by_view"].items()} == {
        "sglang": (3, 3, 0), "vllm": (3, 2, 1)}
    assert two["counts"]["samples"] == 6 and two["samples_run"] == 3 and not two["partial"]
    assert two["by_view"]["vllm"]["rates"]["new_samples"] == round(1 / 3, 6)
    assert [(s["id"], s["view"], s["verdict"]) for s in doc["samples"]] == [("ws", "vllm", "new")]
    page = (out / "report.html").read_text()
    assert '<table id="views">' in page and 'data-view="vllm" data-value="0.666667"' in page
    assert "V5_two/ws[vllm]" in page
    merged = merge_results([("a", doc)])  # a merge keeps the per-view counts and the view of each sample
    assert merged["datasets"][0]["by_view"]["vllm"]["counts"]["new"] == 1
    twice = json.loads(json.dumps(doc))
    twice["samples"][0]["view"] = "sglang"  # the same sample under another view is not an overlap
    assert len(merge_results([("a", doc), ("b", {**twice, "datasets": []})])["samples"]) == 2


BAD_VIEWS = [
    ({"api_view": "nope"}, "field 'api_view': profile qwen3 has no view 'nope'; its views: sglang, vllm"),
    ({"api_view": "sglang-legacy"}, "field 'api_view': profile qwen3 has no view 'sglang-legacy'; its views: sglang, vllm"),
    ({"api_views": []}, "field 'api_views': expected a non-empty list of view names, got []; the views: sglang, vllm"),
    ({"api_views": "vllm"}, "field 'api_views': expected a non-empty list of view names, got 'vllm'; the views: sglang, vllm"),
    ({"api_views": ["vllm", "vllm"]}, "field 'api_views[1]': 'vllm' is listed twice; each view once: sglang, vllm"),
    ({"api_views": ["sglang", "sglang-legacy"]}, "field 'api_views[1]': profile qwen3 has no view 'sglang-legacy'; its views: sglang, vllm"),
    ({"api_view": "vllm", "api_views": ["vllm"]}, "field 'api_views': give api_view (one view) or api_views (a list), not both; the views: sglang, vllm"),
]


@pytest.mark.parametrize(("extra", "message"), BAD_VIEWS, ids=[str(i) for i in range(len(BAD_VIEWS))])
def test_bad_view_names_are_one_manifest_failure(pytester, extra, message):
    qwen3 = load_tokenizer("qwen3")
    m = {**manifest("Q8"), "profile": "qwen3", "tokenizer": "qwen3", **extra}
    write_dataset(pytester.path / "golden" / "Q8_views", m, [
        {"id": f"q{i}", "output_ids": qwen3.encode_ordinary(f"answer {i}") + [qwen3.encode("<|im_end|>")[0]],
         "finish_reason": "stop"} for i in range(40)
    ])
    result = run(pytester, "--tokfidelity-dataset=Q8")
    result.assert_outcomes(passed=3, failed=1)  # no sample test: the other checks pass, test_manifest says why
    result.stdout.fnmatch_lines(["*FAILED*Q8_views/samples.jsonl::test_manifest*"])
    out = result.stdout.str()
    assert f"golden/Q8_views/manifest.json: {message}" in out
    assert "Traceback" not in out and out.count(message) == 1
    assert record(pytester, "Q8_views")["status"] == "closed"


def test_the_view_option_names_several_views_and_refuses_one_the_profile_lacks(pytester):
    make_dataset(pytester.path, "V7_one", exact_samples(2))
    run(pytester, "--tokfidelity-dataset=V7", "--tokfidelity-view=sglang,vllm").assert_outcomes(passed=4 + 4)
    assert record(pytester, "V7_one")["views"] == ["sglang", "vllm"]
    result = run(pytester, "--tokfidelity-dataset=V7", "--tokfidelity-view=vllm,vllm")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--tokfidelity-view: a view is named twice in 'vllm,vllm'*"])
    qwen3 = load_tokenizer("qwen3")
    write_dataset(pytester.path / "golden" / "Q7_one", {**manifest("Q7"), "profile": "qwen3", "tokenizer": "qwen3"}, [
        {"id": "q0", "output_ids": qwen3.encode_ordinary("answer") + [qwen3.encode("<|im_end|>")[0]], "finish_reason": "stop"}])
    result = run(pytester, "--tokfidelity-dataset=Q7", "--tokfidelity-view=vllm,sglang-legacy")
    result.assert_outcomes(passed=3, failed=1)
    result.stdout.fnmatch_lines(["*--tokfidelity-view: profile qwen3 has no view 'sglang-legacy'; its views: sglang, vllm*"])


def test_shipped_b3_under_the_vllm_view_through_the_gate(pytester):
    """`pytest --tokfidelity-dataset=B3 --tokfidelity-view=vllm` on a copy of the shipped B3: every sample is
    judged under vllm, named SAMPLE[vllm], none passes on a divergence reviewed under sglang; reviewed under
    vllm, the run is green and its record says it judged vllm, which the gate refuses while the manifest
    lists sglang. With the manifest listing both views, one run judges both and opens the gate."""
    shipped = Path(__file__).resolve().parent.parent / "golden" / "B3_magicoder"
    copy = pytester.path / "golden" / "B3_magicoder"
    shutil.copytree(shipped, copy)
    result = run(pytester, "--tokfidelity-dataset=B3", "--tokfidelity-view=vllm", "-p", "no:cacheprovider")
    outcomes = result.parseoutcomes()
    assert outcomes["passed"] + outcomes["failed"] == 4 + 112 and outcomes["failed"] > 13  # 13 reviewed under sglang
    result.stdout.fnmatch_lines(["*FAILED*B3_magicoder/samples.jsonl::b3-*?vllm?*"])
    run(pytester, "--tokfidelity-dataset=B3", "--tokfidelity-view=vllm", "--snapshot-update")
    result = run(pytester, "--tokfidelity-dataset=B3", "--tokfidelity-view=vllm")
    assert result.parseoutcomes().get("failed", 0) <= 1  # only test_gate_policy, for the known-divergence rate
    rec = record(pytester, "B3_magicoder")
    assert rec["counts"]["samples"] == 112 and rec["counts"]["new"] == 0
    manifest_path = copy / "manifest.json"
    m = json.loads(manifest_path.read_text())
    m.pop("api_view")
    m.update(api_views=["sglang", "vllm"], max_known_divergence_rate=0.5)
    manifest_path.write_text(json.dumps(m, indent=2))
    result = run(pytester, "--tokfidelity-dataset=B3")  # sglang's tests are SAMPLE[sglang] now: reviewed anew
    assert result.parseoutcomes()["failed"] == 13
    run(pytester, "--tokfidelity-dataset=B3", "--snapshot-update")
    run(pytester, "--tokfidelity-dataset=B3").assert_outcomes(passed=4 + 2 * 112)
    rec = record(pytester, "B3_magicoder")
    assert rec["status"] == "open" and rec["views"] == ["sglang", "vllm"]
    assert gate(pytester, "B3", view="vllm").open


def test_results_schema_checks_the_per_view_fields():
    from pipeline.reporting.results import dataset_entry, results_document
    from pipeline.reporting.schema import ResultsError, check_document

    counts = {"samples": 2, "exact": 1, "policy": 0, "known": 1, "new": 0, "bad_input": 0, "tokens": 9, "hunks": 1}
    entry = dataset_entry(
        name="D", counts=counts, samples_total=2, profile="qwen3", tokenizer="qwen3", tokenizer_fingerprint="f",
        view="vllm", golden_files={}, accept={}, max_known_divergence_rate=0.5, gate_note="open", problems=[],
        partial_reasons=[], wall_s=0.1,
    )
    assert entry["views"] == ["vllm"] and entry["by_view"]["vllm"]["rates"]["known_samples"] == 0.5
    doc = json.loads(json.dumps(results_document([entry], [], command=[], partial_reasons=[])))
    assert check_document(doc, "r.json")["datasets"][0]["by_view"]["vllm"]["counts"]["exact"] == 1
    doc["datasets"][0]["by_view"]["sglang"] = doc["datasets"][0]["by_view"]["vllm"]
    with pytest.raises(ResultsError, match=r"r.json: field 'datasets\[0\].by_view': view 'sglang' is not in the dataset's 'views'"):
        check_document(doc, "r.json")
    doc["datasets"][0]["by_view"] = {"vllm": {"counts": {**counts, "exact": -1}, "rates": entry["rates"]}}
    with pytest.raises(ResultsError, match=r"field 'datasets\[0\].by_view.vllm.counts.exact': expected a count"):
        check_document(doc, "r.json")


def test_the_views_table_prints_exact_rates_per_dataset_and_view(tmp_path, capsys):
    from pipeline.reporting.views_table import exact_rates, main, views_table

    doc = {"datasets": [
        {"name": "B3", "counts": {}, "by_view": {"sglang": {"counts": {"exact": 99, "samples": 112}}}},
        {"name": "Q1", "counts": {"exact": 5, "samples": 10}, "view": "sglang"},  # a file written before by_view
    ]}
    later = {"datasets": [{"name": "B3", "counts": {}, "by_view": {"vllm": {"counts": {"exact": 71, "samples": 112}}}}]}
    rates = exact_rates([doc, later])
    assert rates == {"B3": {"sglang": (99, 112), "vllm": (71, 112)}, "Q1": {"sglang": (5, 10)}}
    assert views_table(rates, ("sglang", "vllm")).splitlines() == [
        "| dataset | sglang | vllm |", "|---|---:|---:|", "| B3 | 88.4% (99/112) | 63.4% (71/112) |", "| Q1 | 50.0% (5/10) | – |"]
    (tmp_path / "bad.json").write_text("{}")
    assert main([str(tmp_path / "bad.json")]) == 1
    assert "bad.json: field 'schema'" in capsys.readouterr().err
