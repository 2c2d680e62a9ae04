"""results.json as input: every field is checked on reading, with
an error that names the file and the field and never a traceback; results.json and report.html are
written together or not at all; merged files are complete only when they ran every sample once; a
sample id holding a lone surrogate is bad input, located. Fast: documents are made in-process
(report_support.small_document) and runs use a small dataset of exact samples."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from report_support import ROOT, planted_samples, run_pytest, run_report_command, small_document

from pipeline.core.golden import GoldenError, parse_sample, write_dataset
from pipeline.reporting import results as results_module
from pipeline.reporting.html import render_report
from pipeline.reporting.results import merge_results, read_results, write_outputs
from pipeline.reporting.schema import ResultsError, check_document


@pytest.fixture(scope="module")
def doc(kimi, profile):
    return json.loads(json.dumps(small_document(kimi, profile)))


def _copy(doc: dict) -> dict:
    return json.loads(json.dumps(doc))


def _leaves(value, path=()):
    """(path, value) of every string, number and true/false in a document."""
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _leaves(v, (*path, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _leaves(v, (*path, i))
    else:
        yield path, value


def _set(doc: dict, path: tuple, value) -> dict:
    out = _copy(doc)
    target = out
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return out


def _field(path: tuple) -> str:
    return "".join(f"[{k}]" if isinstance(k, int) else f".{k}" for k in path).lstrip(".")


def test_the_document_made_in_process_has_every_kind_of_field(doc):
    """The fixture the tests below edit: every optional part is there (windows, bytes, specials, ran)."""
    keys = {k for path, _ in _leaves(doc) for k in path if isinstance(k, str)}
    assert {"window", "bytes", "special", "ran", "failed_checks", "golden_text", "libraries", "line", "report"} <= keys
    assert check_document(_copy(doc), "r.json") == doc


def test_every_number_field_holding_markup_is_refused_with_its_path(doc):
    numbers = [(p, v) for p, v in _leaves(doc) if type(v) in (int, float) and p != ("version",)]
    assert len(numbers) > 200
    for path, _ in numbers:
        with pytest.raises(ResultsError) as e:
            check_document(_set(doc, path, '<img src=x onerror="document.title=1">'), "r.json")
        span = path[-1] in (0, 1) and str(e.value).startswith(f"r.json: field '{_field(path[:-1])}': expected [start, end]")
        assert str(e.value).startswith(f"r.json: field '{_field(path)}': expected ") or span, (path, str(e.value))


def test_every_true_false_field_holding_something_else_is_refused(doc):
    flags = [p for p, v in _leaves(doc) if type(v) is bool]
    assert len(flags) > 50
    for path in flags:
        with pytest.raises(ResultsError, match=rf"field '{_field(path)}'".replace("[", r"\[").replace("]", r"\]")):
            check_document(_set(doc, path, "yes"), "r.json")


def _deep(n: int):
    return json.loads("[" * n + "]" * n)


MALFORMED = [  # (edit, what the error names)
    (lambda d: d.update(created=7), "field 'created': expected a string, got a number"),
    (lambda d: d.update(code=["x"]), "field 'code': expected an object, got a list"),
    (lambda d: d["code"].update(fingerprint=["x"]), "field 'code.fingerprint': expected a string"),
    (lambda d: d.update(command="pytest"), "field 'command': expected a list, got a string"),
    (lambda d: d["command"].append(3), "field 'command[1]': expected a string"),
    (lambda d: d["datasets"][0].update(rates="high"), "field 'datasets[0].rates': expected an object, got a string"),
    (lambda d: d["datasets"][0]["gate"].pop("state"), "field 'datasets[0].gate.state': missing"),
    (lambda d: d["datasets"][0]["gate"].update(state="ajar"), "field 'datasets[0].gate.state': 'ajar' is not one of"),
    (lambda d: d["datasets"][0]["gate"].update(notes=_deep(900)), "field 'datasets[0].gate.notes[0]': expected a string"),
    (lambda d: d["datasets"][0]["counts"].update(new=-1), "field 'datasets[0].counts.new': expected a count"),
    (lambda d: d["datasets"][0]["counts"]["new_by_class"].update(whitespace="1"), "field 'datasets[0].counts.new_by_class.whitespace'"),
    (lambda d: d["datasets"][0].update(problems=[{"a": 1}]), "field 'datasets[0].problems[0]': expected a string, got an object"),
    (lambda d: d["datasets"][0]["failed_checks"][0].pop("message"), "field 'datasets[0].failed_checks[0].message': missing"),
    (lambda d: d["datasets"][0].update(ran=[[0, 99]]), "field 'datasets[0].ran': range [0, 99] goes past"),
    (lambda d: d["datasets"][0].update(ran=[[0, 5], [3, 9]]), "field 'datasets[0].ran': ranges must be sorted and apart"),
    (lambda d: d["datasets"].append(_copy(d["datasets"][0])), "field 'datasets[1].name': 'P9_planted' is listed twice"),
    (lambda d: d.update(samples={"0": 1}), "field 'samples': expected a list, got an object"),
    (lambda d: d["samples"][0].update(line="<img src=x>"), "field 'samples[0].line': expected a count"),
    (lambda d: d["samples"][0].update(id=5), "field 'samples[0].id': expected a string, got a number"),
    (lambda d: d["samples"][0].update(dataset="other"), "field 'samples[0].dataset': names 'other', which is not in 'datasets'"),
    (lambda d: d["samples"][1]["hunks"][0].update(golden=[9, 2]), "field 'samples[1].hunks[0].golden': expected [start, end]"),
    (lambda d: d["samples"][1]["hunks"][0].update(golden=[-2000, 3]), "field 'samples[1].hunks[0].golden': expected [start, end]"),
    (lambda d: d["samples"][3]["hunks"][1]["window"]["golden"][0].update(bytes="zz"),
     "field 'samples[3].hunks[1].window.golden[0].bytes': expected the hex"),
    (lambda d: d["samples"][1]["hunks"][0]["window"]["golden"][0].update(i=None),
     "field 'samples[1].hunks[0].window.golden[0].i': expected a count"),
    (lambda d: d["datasets"][0]["rates"].update(divergent_samples=float("inf")), "not JSON: Infinity is not a number"),
]


@pytest.mark.parametrize("edit, message", MALFORMED, ids=[m[1][:40] for m in MALFORMED])
def test_a_malformed_results_file_is_refused_by_field_and_the_old_report_kept(doc, tmp_path, edit, message):
    bad = _copy(doc)
    edit(bad)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(bad), encoding="utf-8")
    with pytest.raises(ResultsError) as e:
        read_results(path)
    assert str(e.value).startswith(f"{path}: ") and message in str(e.value), str(e.value)


def test_report_command_on_malformed_files_says_where_and_leaves_the_old_files(doc, tmp_path):
    """One CLI run per kind of breakage that crashed before (through the real command): exit 1, the
    file and field named, no traceback, and the out folder's results.json and report.html untouched."""
    out = tmp_path / "out"
    out.mkdir()
    for name in ("results.json", "report.html"):
        (out / name).write_text(f"old {name}", encoding="utf-8")
    files = []
    for n, (edit, _) in enumerate(MALFORMED):
        bad = _copy(doc)
        edit(bad)
        files.append(tmp_path / f"bad{n}.json")
        files[-1].write_text(json.dumps(bad), encoding="utf-8")
    (tmp_path / "deep.json").write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")
    (tmp_path / "bigint.json").write_text('{"schema": "tokfidelity-results", "version": 1, "x": ' + "9" * 5000 + "}")
    (tmp_path / "binary.json").write_bytes(b"\xff\xfe{}")
    os.mkfifo(tmp_path / "fifo.json")
    files += [tmp_path / n for n in ("deep.json", "bigint.json", "binary.json", "fifo.json")]
    script = (
        "import sys\nfrom pipeline.cli import main\n"
        "for f in sys.argv[2:]:\n"
        "    try:\n        code = main(['report', f, '--out', sys.argv[1]])\n"
        "    except SystemExit as e:\n        code = e.code\n"
        "    print('EXIT', code, flush=True)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    result = subprocess.run([sys.executable, "-c", script, str(out), *map(str, files)], env=env, capture_output=True,
                            text=True, timeout=300)
    assert "Traceback" not in result.stderr, result.stderr[-3000:]
    assert result.stdout.split() == ["EXIT", "1"] * len(files), result.stdout
    errors = [line for line in result.stderr.splitlines() if line.startswith("tokfidelity report: ")]
    assert len(errors) == len(files), result.stderr
    for f, line in zip(files, errors):
        assert f"tokfidelity report: {f}: " in line, line
    assert "nested too deeply" in errors[-4] and "not JSON" in errors[-3] and "not UTF-8" in errors[-2]
    assert "cannot read: is a FIFO (named pipe), not a regular file" in errors[-1]
    assert {p.name: p.read_text() for p in out.iterdir()} == {"results.json": "old results.json", "report.html": "old report.html"}


def test_results_and_report_are_written_together_or_not_at_all(doc, tmp_path, monkeypatch):
    out = tmp_path / "out"
    out.mkdir()
    for name in ("results.json", "report.html"):
        (out / name).write_text(f"old {name}", encoding="utf-8")

    def broken(_doc):
        raise RuntimeError("drawing failed")

    import pipeline.reporting.html as html

    monkeypatch.setattr(html, "render_page", broken)
    with pytest.raises(RuntimeError):
        write_outputs(doc, out)
    monkeypatch.undo()
    real_write = type(out).write_bytes

    def disk_full(self, data):
        if ".results.json." in self.name:
            raise OSError(28, "No space left on device")
        return real_write(self, data)

    monkeypatch.setattr(type(out), "write_bytes", disk_full)
    with pytest.raises(OSError):
        write_outputs(doc, out)
    monkeypatch.undo()
    assert sorted(p.name for p in out.iterdir()) == ["report.html", "results.json"]  # no temporary file left
    assert [(out / n).read_text() for n in ("results.json", "report.html")] == ["old results.json", "old report.html"]
    paths = write_outputs(doc, out)
    assert [p.name for p in paths] == ["results.json", "report.html"]
    assert read_results(paths[0]) == doc and (out / "report.html").read_bytes() == render_report(doc).encode()


def test_a_lone_surrogate_anywhere_in_a_document_is_written_and_drawn_visibly(doc, tmp_path):
    bad = _copy(doc)
    bad["samples"][0]["report"] = "x\ud800y"
    bad["samples"][4]["id"] = "id\udc00"
    paths = write_outputs(bad, tmp_path)
    page = paths[1].read_text(encoding="utf-8")
    assert '<w class="inv">\\ud800</w>' in page and "id\\udc00" in page
    assert read_results(paths[0]) == bad  # written as \ud800 escapes: read back the same


# -- merged files -------------------------------------------------------------------------------

def _part(doc: dict, ran: list[list[int]], samples_run: int, reason: str) -> dict:
    out = _copy(doc)
    d = out["datasets"][0]
    d.update(ran=ran, samples_run=samples_run, partial=True, partial_reasons=[reason])
    d["counts"]["samples"] = samples_run
    out.update(partial=True, partial_reasons=[reason], samples=[])
    return out


def test_merged_files_that_overlap_are_refused_even_when_the_counts_add_up(doc):
    """-k "not s8" (8 samples) merged with -k s0 (1): 9 of 9 by count, but s0 twice and s8 never."""
    a = _part(doc, [[0, 8]], 8, "-k 'not s8'")
    b = _part(doc, [[0, 1]], 1, "-k 's0'")
    with pytest.raises(ResultsError, match="b.json: dataset P9_planted: samples at positions 0..0 were run in an earlier"):
        merge_results([("a.json", a), ("b.json", b)])


def test_merged_files_are_complete_only_when_they_ran_every_sample(doc):
    halves = [_part(doc, [[0, 4]], 4, "-k a"), _part(doc, [[4, 9]], 5, "-k b")]
    merged = merge_results([("a", halves[0]), ("b", halves[1])])
    assert not merged["partial"] and merged["datasets"][0]["ran"] == [[0, 9]]
    gap = merge_results([("a", halves[0]), ("b", _part(doc, [[5, 9]], 4, "-k b"))])
    assert gap["partial"] and gap["datasets"][0]["ran"] == [[0, 4], [5, 9]]
    old = _copy(halves[1])
    del old["datasets"][0]["ran"]  # a file written before 'ran' existed: cannot tell
    unknown = merge_results([("a", halves[0]), ("b", old)])
    assert unknown["partial"] and "cannot be told" in " ".join(unknown["partial_reasons"])
    whole = merge_results([("whole", {**doc, "datasets": [{k: v for k, v in doc["datasets"][0].items() if k != "ran"}]})])
    assert not whole["partial"]  # a complete file without 'ran' covers every sample


def _exact_dataset(root, kimi, profile, n: int = 6):
    samples = [s for s in planted_samples() if s["id"].startswith("ok")][:n]
    write_dataset(root / "golden" / "E1_exact", {"name": "E1_exact", "profile": "kimi-k2.5", "tokenizer": "kimi-k2.5",
                                                 "source": "tests/test_report_input.py"}, samples)
    return [s["id"] for s in samples]


def test_real_overlapping_k_runs_do_not_merge_into_a_complete_run(tmp_path, kimi, profile):
    """The issue's reproduction on a small dataset: -k "not ok5" and -k ok0, each a real pytest run."""
    ids = _exact_dataset(tmp_path, kimi, profile)
    first = run_pytest(tmp_path, tmp_path / "a", "-k", "not ok5", datasets="E1")
    second = run_pytest(tmp_path, tmp_path / "b", "-k", "ok0", datasets="E1")
    assert first.returncode == 0 and second.returncode == 0, first.stdout[-2000:] + second.stdout[-2000:]
    a, b = read_results(tmp_path / "a" / "results.json"), read_results(tmp_path / "b" / "results.json")
    assert a["datasets"][0]["ran"] == [[0, 5]] and b["datasets"][0]["ran"] == [[0, 1]] and len(ids) == 6
    merged = run_report_command(str(tmp_path / "a" / "results.json"), str(tmp_path / "b" / "results.json"),
                                "--out", str(tmp_path / "m"))
    assert merged.returncode == 1 and "the files overlap" in merged.stderr and "Traceback" not in merged.stderr
    assert not (tmp_path / "m").exists()
    rest = run_pytest(tmp_path, tmp_path / "c", "-k", "ok5", "-n", "2", datasets="E1")  # xdist: workers say what ran
    assert rest.returncode == 0, rest.stdout[-2000:]
    assert read_results(tmp_path / "c" / "results.json")["datasets"][0]["ran"] == [[5, 6]]
    whole = run_report_command(str(tmp_path / "a" / "results.json"), str(tmp_path / "c" / "results.json"),
                               "--out", str(tmp_path / "w"))
    assert whole.returncode == 0 and "PARTIAL" not in whole.stdout, whole.stdout + whole.stderr
    assert 'data-complete="1"' in (tmp_path / "w" / "report.html").read_text(encoding="utf-8")


# -- a lone surrogate in a sample id ------------------------------------------------------------

def test_parse_sample_refuses_an_id_with_a_lone_surrogate(tmp_path):
    obj = json.loads('{"id": "a\\ud800b", "output_ids": [1], "finish_reason": "stop"}')
    with pytest.raises(GoldenError) as e:
        parse_sample(obj, tmp_path / "samples.jsonl", 7)
    assert e.value.line == 7 and e.value.field == "id" and "lone surrogate (\\ud800 at character 2)" in str(e.value)
    assert parse_sample({**obj, "id": "a\u00e9\U0001f600"}, tmp_path, 1).id == "a\u00e9\U0001f600"


def test_a_surrogate_id_is_bad_input_of_its_line_and_the_report_is_written(tmp_path, kimi, profile):
    _exact_dataset(tmp_path, kimi, profile, n=2)
    path = tmp_path / "golden" / "E1_exact" / "samples.jsonl"
    with open(path, "a", encoding="utf-8") as f:
        line = json.dumps({"id": "x", "output_ids": [1], "finish_reason": "stop"}).replace('"x"', '"x\\ud800"')
        f.write(line + "\n")
    result = run_pytest(tmp_path, tmp_path / "out", datasets="E1")
    assert result.returncode == 1, result.stdout[-3000:]
    assert "Traceback" not in result.stdout + result.stderr and "UnicodeEncodeError" not in result.stdout
    assert "FAILED golden/E1_exact/samples.jsonl::line-3" in result.stdout, result.stdout[-3000:]
    doc = read_results(tmp_path / "out" / "results.json")
    (bad,) = [s for s in doc["samples"] if s["verdict"] == "bad-input"]
    assert bad["id"] == "line-3" and "samples.jsonl:3: " in bad["report"] and "field 'id'" in bad["report"] and "lone surrogate" in bad["report"]
    assert (tmp_path / "out" / "report.html").stat().st_size > 5_000


def test_a_report_that_cannot_be_written_fails_the_run(tmp_path, kimi, profile):
    """A --tokfidelity-report folder that cannot be made (here under /proc, which refuses even root) is said
    once and fails the run: a run whose report is missing must not exit 0 after printing "cannot write"."""
    _exact_dataset(tmp_path, kimi, profile, n=2)
    result = run_pytest(tmp_path, __import__("pathlib").Path("/proc/tokfidelity-no-such-report"), datasets="E1")
    assert result.returncode == 1, result.stdout[-2000:]
    assert "--tokfidelity-report: cannot write to /proc/tokfidelity-no-such-report" in result.stdout
    assert "the run fails" in result.stdout and "Traceback" not in result.stdout + result.stderr
