"""results.json and report.html: written by real ``pytest --tokfidelity-report`` runs over the shipped
datasets plus a planted-failure dataset (alone and under ``-n 2``), redrawn and merged by
``tokfidelity report``, and checked on hand-made documents for escaping and bad input."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from report_support import PLANTED, SHIPPED, make_golden, run_pytest, run_report_command

from pipeline.core.diagnose import ADVICE, diagnose
from pipeline.core.gate import read_record
from pipeline.reporting.details import SampleDetails
from pipeline.reporting.html import render_report
from pipeline.reporting.results import merge_results, read_results
from pipeline.reporting.schema import ResultsError, check_document

URL = re.compile(r"https?://", re.I)


def _key(doc: dict) -> list[tuple]:
    """What must not depend on how the run was split: every non-exact sample and every count."""
    samples = sorted((s["dataset"], str(s["id"]), s["verdict"], tuple(s.get("classes", ())),
                      json.dumps(s.get("hunks", []), sort_keys=True)) for s in doc["samples"])
    counts = sorted((d["name"], d["samples_run"], json.dumps(d["counts"], sort_keys=True)) for d in doc["datasets"])
    return [samples, counts]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """One lone run and one ``-n 2`` run over the same golden folder."""
    root = tmp_path_factory.mktemp("report")
    make_golden(root)
    lone = run_pytest(root, root / "lone")
    xdist = run_pytest(root, root / "xdist", "-n", "2")
    return root, lone, xdist


def test_a_run_writes_results_that_match_the_run(runs):
    root, lone, _ = runs
    assert lone.returncode == 1, lone.stdout[-2000:]  # the planted failures fail
    doc = read_results(root / "lone" / "results.json")
    assert doc["version"] == 1 and not doc["partial"]
    by_name = {d["name"]: d for d in doc["datasets"]}
    assert sorted(by_name) == sorted((*SHIPPED, PLANTED))
    for name in SHIPPED:  # counts and fingerprints equal what the gate record says
        record = read_record(root / "state", name)
        d = by_name[name]
        assert record["status"] == "open" and d["gate"]["state"] == "open"
        assert {k: d["counts"][k] for k in ("samples", "exact", "known", "new", "tokens")} == \
            {k: record["counts"][k] for k in ("samples", "exact", "known", "new", "tokens")}
        assert d["tokenizer_fingerprint"] == record["tokenizer_fingerprint"]
        assert d["golden_files"] == record["golden_files"]
        assert doc["code"]["fingerprint"] == record["code_fingerprint"]
        views = max(1, len(d.get("views", ())))  # the record counts one test per sample and view
        assert d["samples_total"] == d["samples_run"] == record["counts"]["samples"] // views
    planted = by_name[PLANTED]
    assert planted["gate"]["state"] == "closed" and planted["problems"]
    (check,) = planted["failed_checks"]  # the stop check saw the wrong stop id
    assert check["check"] == "test_stop_tokens" and "163533 'chas'" in check["message"]
    assert all(not by_name[n]["failed_checks"] for n in SHIPPED)
    assert planted["snapshot_update"].endswith(f"--tokfidelity-dataset={PLANTED} --tokfidelity-golden-dir={root / 'golden'} --snapshot-update")
    # one record per non-exact sample, with the verdict the run gave it
    for d in doc["datasets"]:
        mine = [s for s in doc["samples"] if s["dataset"] == d["name"]]
        c = d["counts"]
        assert len(mine) == c["policy"] + c["known"] + c["new"] + c["bad_input"], d["name"]
        assert sum(s["verdict"] == "known" for s in mine) == c["known"]
    verdicts = {s["id"]: s["verdict"] for s in doc["samples"] if s["dataset"] == PLANTED}
    assert verdicts == {"resplit0": "policy", "resplit1": "policy", "ws-added": "new", "wrong-stop": "new",
                        "lone-byte": "new", "bad-line": "bad-input"}
    failed = {line.split("::", 1)[1].split()[0] for line in lone.stdout.splitlines()
              if line.startswith(f"FAILED golden/{PLANTED}/samples.jsonl::") and "::test_" not in line}
    assert failed == {k for k, v in verdicts.items() if v in ("new", "bad-input")}


def test_planted_failures_carry_hunks_windows_and_token_facts(runs):
    root, _, _ = runs
    samples = {s["id"]: s for s in read_results(root / "lone" / "results.json")["samples"] if s["dataset"] == PLANTED}
    stop = samples["wrong-stop"]
    assert stop["classes"] == ["special-token-id"] and stop["detail"] and not stop["texts_identical"]
    hunk = stop["hunks"][0]
    assert hunk["golden_ids"] == [163533] and hunk["rebuilt_ids"] == [163586]
    g, r = hunk["window"]["golden"], hunk["window"]["rebuilt"]
    assert [t["text"] for t in g if t["hunk"]] == ["chas"] and [t["text"] for t in r if t["hunk"]] == ["<|im_end|>"]
    assert [t.get("special", False) for t in r if t["hunk"]] == [True] and not any(t.get("special") for t in g if t["hunk"])
    assert "163533" in stop["report"] and "163586" in stop["report"]
    lone = samples["lone-byte"]
    assert lone["classes"] == ["invalid-utf8"]
    in_hunk = [t for t in lone["hunks"][0]["window"]["golden"] if t["hunk"]]
    assert [t.get("bytes") for t in in_hunk] == [None, "e2"]  # the lone byte, as bytes (its text is U+FFFD)
    ws = samples["ws-added"]
    assert ws["classes"] == ["whitespace"]
    assert any("\n" in t["text"] for t in ws["hunks"][0]["window"]["rebuilt"] if t["hunk"])
    assert samples["bad-line"]["report"].endswith("field 'output_ids': expected a list of token ids, got str")
    assert samples["resplit0"]["texts_identical"] and samples["resplit0"]["hunks"][0]["text_preserving"]


def test_xdist_gives_the_same_results(runs):
    root, lone, xdist = runs
    assert xdist.returncode == lone.returncode, xdist.stdout[-2000:]
    a, b = read_results(root / "lone" / "results.json"), read_results(root / "xdist" / "results.json")
    assert _key(a) == _key(b)
    assert not b["partial"]
    checks = [{d["name"]: [c["check"] for c in d["failed_checks"]] for d in doc["datasets"]} for doc in (a, b)]
    assert checks[0] == checks[1] and checks[0][PLANTED] == ["test_stop_tokens"]
    assert {d["name"]: d["tokenizer_fingerprint"] for d in a["datasets"]} == {d["name"]: d["tokenizer_fingerprint"] for d in b["datasets"]}


def test_the_report_page_is_self_contained_and_lists_every_divergent_sample(runs):
    root, _, _ = runs
    doc = read_results(root / "lone" / "results.json")
    page = (root / "lone" / "report.html").read_text(encoding="utf-8")
    assert "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none';" in page
    assert not URL.search(page), URL.search(page)  # the planted sample's text holds https://example.com
    assert not re.search(r"<(link|img|iframe|object|embed)\b|\bsrc=|@import|url\(", page)
    several = {d["name"] for d in doc["datasets"] if len(d.get("views", ())) > 1}  # named with [VIEW] there
    for s in doc["samples"]:
        view = f'[{s["view"]}]' if s["dataset"] in several else ""
        assert f'data-sample="{s["dataset"]}/{s["id"]}{view}"' in page, s["id"]
    for cls in ("special-token-id", "whitespace", "invalid-utf8"):
        assert ADVICE[cls].split(":")[0] in page
    assert f"--tokfidelity-dataset={PLANTED} --tokfidelity-golden-dir={root / 'golden'} --snapshot-update" in page
    assert 'id="partial" data-complete="1"' in page


def test_a_report_folder_that_is_a_file_is_a_usage_error_before_the_run(tmp_path):
    make_golden(tmp_path)
    (tmp_path / "taken").write_text("a file", encoding="utf-8")
    result = run_pytest(tmp_path, tmp_path / "taken", datasets="P9")
    assert result.returncode == 4, result.stdout[-2000:]  # pytest's usage error
    assert "--tokfidelity-report:" in result.stderr and "is a file" in result.stderr and "Traceback" not in result.stderr
    assert not (tmp_path / "state").exists()


def test_partial_runs_say_so(tmp_path):
    make_golden(tmp_path)
    result = run_pytest(tmp_path, tmp_path / "out", "--tokfidelity-sample=5", datasets="B3")
    assert result.returncode == 0, result.stdout[-2000:]
    doc = read_results(tmp_path / "out" / "results.json")
    assert doc["partial"] and doc["partial_reasons"] == ["--tokfidelity-sample=5"]
    (d,) = doc["datasets"]
    assert d["partial"] and d["samples_run"] == 5 and d["samples_total"] == 112 and d["gate"]["state"] == "unchanged"
    assert "PARTIAL RUN: --tokfidelity-sample=5" in (tmp_path / "out" / "report.html").read_text(encoding="utf-8")


def test_report_command_merges_shards_into_the_whole_run(runs, tmp_path):
    root, _, _ = runs
    shards = []
    names = [*SHIPPED, PLANTED]
    for n, selection in enumerate((" or ".join(names[0::2]), " or ".join(names[1::2]))):
        run_pytest(root, tmp_path / f"shard{n}", "-k", selection)
        shard = read_results(tmp_path / f"shard{n}" / "results.json")
        assert shard["partial"] and shard["partial_reasons"] == [f"-k {selection!r}"]
        shards.append(str(tmp_path / f"shard{n}" / "results.json"))
    merged = run_report_command(*shards, "--out", str(tmp_path / "merged"))
    assert merged.returncode == 0, merged.stderr
    doc = read_results(tmp_path / "merged" / "results.json")
    whole = read_results(root / "lone" / "results.json")
    assert _key(doc) == _key(whole)
    assert not doc["partial"] and doc["sources"] == shards
    assert (tmp_path / "merged" / "report.html").stat().st_size > 10_000
    one = run_report_command(shards[0], "--out", str(tmp_path / "one"))
    assert one.returncode == 0 and "PARTIAL" in one.stdout
    twice = run_report_command(shards[0], shards[0], "--out", str(tmp_path / "twice"))
    assert twice.returncode == 1 and "overlap" in twice.stderr


def test_report_command_redraws_the_same_page_from_results_json(runs, tmp_path):
    root, _, _ = runs
    result = run_report_command(str(root / "lone" / "results.json"), "--out", str(tmp_path))
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "report.html").read_bytes() == (root / "lone" / "report.html").read_bytes()
    assert json.loads((tmp_path / "results.json").read_text()) == json.loads((root / "lone" / "results.json").read_text())


@pytest.mark.parametrize("edit, message", [
    (lambda d: d.update(version=2), "field 'version' is 2"),
    (lambda d: d.update(schema="x"), "not a tokfidelity results file"),
    (lambda d: d["datasets"][0].pop("counts"), "field 'datasets[0].counts': missing"),
    (lambda d: d["samples"][0].update(verdict="maybe"), "field 'samples[0].verdict': 'maybe' is not one of new, known"),
    (lambda d: d["samples"][0]["hunks"][0].pop("golden"), "field 'samples[0].hunks[0].golden': missing"),
    (lambda d: d["samples"][0]["hunks"][0]["window"]["rebuilt"][0].update(text=7),
     "field 'samples[0].hunks[0].window.rebuilt[0].text': expected a string, got a number"),
    (lambda d: d["samples"][0].update(classes="whitespace"), "field 'samples[0].classes': expected a list, got a string"),
])
def test_report_command_names_file_and_field_of_a_bad_results_file(runs, tmp_path, edit, message):
    root, _, _ = runs
    doc = json.loads((root / "lone" / "results.json").read_text(encoding="utf-8"))
    edit(doc)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(doc), encoding="utf-8")
    result = run_report_command(str(bad), "--out", str(tmp_path / "out"))
    assert result.returncode == 1 and str(bad) in result.stderr and message in result.stderr, result.stderr
    assert "Traceback" not in result.stderr and not (tmp_path / "out" / "report.html").exists()
    missing = run_report_command(str(tmp_path / "nope.json"), "--out", str(tmp_path / "out"))
    assert missing.returncode == 1 and "nope.json: cannot read" in missing.stderr


def test_merging_results_of_other_data_is_refused(runs):
    root, _, _ = runs
    doc = read_results(root / "lone" / "results.json")
    other = json.loads(json.dumps(doc))
    other["datasets"][0]["tokenizer_fingerprint"] = "0" * 64
    other["samples"] = []
    with pytest.raises(ResultsError, match="tokenizer_fingerprint.*cannot be merged"):
        merge_results([("a.json", doc), ("b.json", other)])


def test_page_escapes_sample_text_and_makes_whitespace_and_bytes_visible(kimi, profile):
    golden = kimi.encode_ordinary("a <b>x</b>\tsee https://example.org/</script>") + [profile.stop_id]
    rebuilt = kimi.encode_ordinary("a <b>x</b>  see https://example.org/</script>") + [profile.stop_id]
    explain = SampleDetails(kimi, profile)
    diagnosis = diagnose(golden, rebuilt, kimi, profile=profile, finish_reason="stop")

    class Sample:  # what explain reads of a GoldenSample
        id, line, finish_reason = "<script>alert(1)</script>", 3, "stop"

    rec = {**explain(Sample, diagnosis, "divergent"), "dataset": "D<1>", "verdict": "new", "report": diagnosis.render()}
    dataset = {"name": "D<1>", "samples_total": 1, "samples_run": 1, "counts": {k: 0 for k in (
        "samples", "exact", "policy", "known", "new", "bad_input", "tokens", "hunks")}, "rates": {
        "divergent_samples": 1.0, "hunks_per_1k_tokens": 0.0}, "gate": {"state": "closed", "notes": ["closed"]},
        "partial": False, "partial_reasons": [], "problems": [], "wall_s": 0.1, "snapshot_update": "pytest x"}
    doc = {"schema": "tokfidelity-results", "version": 1, "command": [], "partial": False, "partial_reasons": [],
           "datasets": [dataset], "samples": [rec], "detail_limit": 300}
    check_document(doc, "doc")
    page = render_report(doc)
    assert "<script>alert" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "</script>" not in page.split('<script type="application/json"')[0]
    assert not URL.search(page)
    assert "<w>\u21e5</w>" in page and "<w>\u00b7</w>" in page  # the tab and the spaces are visible


def test_details_are_kept_for_text_changes_and_the_first_few_resplits_only(kimi, profile):
    split = kimi.encode_ordinary(" initial") + kimi.encode_ordinary("izer")
    canonical = kimi.encode_ordinary(" initializer")
    explain = SampleDetails(kimi, profile, detail_limit=2)

    class Sample:
        id, line, finish_reason = "s", 1, "stop"

    resplit = diagnose(split, canonical, kimi, profile=profile)
    changed = diagnose(kimi.encode_ordinary("a b"), kimi.encode_ordinary("a  b"), kimi, profile=profile)
    details = [explain(Sample, resplit, "policy")["detail"] for _ in range(4)]
    assert details == [True, True, False, False]
    assert explain(Sample, changed, "divergent")["detail"]  # text changes: always
    assert explain(Sample, resplit, "policy", force=True)["hunks"][0]["window"]["golden"]


def test_new_divergences_beyond_the_detail_limit_are_shown_in_full_and_policy_ones_are_not(pytester, monkeypatch, kimi, profile):
    """Text-preserving samples get token windows only up to the limit; a new divergence (a failing test)
    past it is judged again for its windows."""
    from pipeline.core.golden import write_dataset
    from pipeline.reporting import details

    monkeypatch.setattr(details, "DETAIL_LIMIT", 1)
    think_end = profile.ids["think_end"]
    split = kimi.encode_ordinary("Think.") + [think_end] + kimi.encode_ordinary(" initial") + kimi.encode_ordinary("izer") + [profile.stop_id]
    samples = [{"id": f"split{i}", "output_ids": split, "finish_reason": "stop"} for i in range(4)]
    base = {"profile": "kimi-k2.5", "tokenizer": "kimi-k2.5", "source": "tests/test_report.py"}
    write_dataset(pytester.path / "golden" / "N1_new", {"name": "N1_new", **base}, samples)
    write_dataset(pytester.path / "golden" / "N2_policy", {"name": "N2_policy", **base, "accept": {"non-canonical-split": 0.5}}, samples)
    result = pytester.runpytest("-p", "no:randomly", "--tokfidelity-dataset=N1,N2", f"--tokfidelity-golden-dir={pytester.path / 'golden'}",
                                f"--tokfidelity-state-dir={pytester.path / 'state'}", f"--tokfidelity-report={pytester.path / 'out'}")
    result.assert_outcomes(failed=4, passed=4 + 2 * 4)
    doc = read_results(pytester.path / "out" / "results.json")
    new = [s for s in doc["samples"] if s["dataset"] == "N1_new"]
    policy = [s for s in doc["samples"] if s["dataset"] == "N2_policy"]
    assert [s["verdict"] for s in new] == ["new"] * 4 and all(s["detail"] and s["hunks"][0]["window"] for s in new)
    assert [s["verdict"] for s in policy] == ["policy"] * 4
    assert [s["detail"] for s in policy] == [True, False, False, False]
    assert all("window" not in s["hunks"][0] for s in policy[1:])
    split_ids = kimi.encode_ordinary(" initial") + kimi.encode_ordinary("izer")
    assert all(s["hunks"][0]["golden_ids"] == split_ids and s["hunks"][0]["golden_text"] == [" initial", "izer"]
               and s["hunks"][0]["rebuilt_text"] == [" initializer"] for s in policy)  # ids and texts: every sample
