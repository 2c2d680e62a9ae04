"""The shipped Qwen3 and DeepSeek-V3 golden sets (golden/Q1_glaive, golden/D1_glaive): they rebuild byte
for byte from scripts/make_family_golden.py, hold what the issue asks for (reasoning, content, one and
several calls, nested and non-ASCII arguments, length cuts), every sample whose information survives the
sglang view is rebuilt exactly, each quirk sample diverges with exactly the class its 'quirk' names, and
the plugin, run without reviewed snapshots, fails exactly the quirk samples with those classes."""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path

import pytest

from pipeline.core.fidelity import EXACT, Judge
from pipeline.core.golden import GoldenError, load_manifest, read_samples
from pipeline.core.profiles import bind_profile
from pipeline.core.tokenizer import load_tokenizer

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "golden"
DATASETS = {"Q1_glaive": "qwen3", "D1_glaive": "deepseek-v3"}
# Classes each format can show; Qwen3's output has no call ids and no marker a parser ignores, DeepSeek-V3's
# no call ids, so tool-call-id cannot occur (the API's invented ids are never used).
CLASSES = {
    "Q1_glaive": {"stop-token", "non-canonical-split", "marker-text", "whitespace", "tool-args-json", "dropped-text",
                  "truncated-utf8", "invalid-utf8"},
    "D1_glaive": {"special-token-id", "stop-token", "non-canonical-split", "marker-text", "whitespace", "tool-args-json",
                  "dropped-text", "truncated-utf8", "invalid-utf8"},
}


def _samples(name):
    items = list(read_samples(GOLDEN / name))
    assert not [e for e in items if isinstance(e, GoldenError)]
    return items


def _quirks(name):
    lines = (GOLDEN / name / "samples.jsonl").read_text(encoding="utf-8").splitlines()
    return {json.loads(line)["id"]: json.loads(line).get("quirk", "none") for line in lines}


# Each golden script and the sets it writes: Q1/D1 and D31/D32 are written through the families' case generators.
REBUILT = {"make_family_golden.py": tuple(DATASETS), "make_deepseek_golden.py": ("D31_glaive", "D32_glaive")}


@pytest.mark.parametrize("script_name", sorted(REBUILT))
def test_family_sets_rebuild_byte_for_byte(script_name, tmp_path):
    spec = importlib.util.spec_from_file_location(script_name[:-3], ROOT / "scripts" / script_name)
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    assert script.main(["--out", str(tmp_path)]) == 0
    for name in REBUILT[script_name]:
        for file in ("manifest.json", "samples.jsonl"):
            assert (tmp_path / name / file).read_bytes() == (GOLDEN / name / file).read_bytes(), f"{name}/{file}"


@pytest.mark.parametrize("name", sorted(DATASETS))
def test_family_set_holds_what_it_should(name):
    manifest = load_manifest(GOLDEN / name)
    assert manifest.profile == DATASETS[name] and manifest.api_view == "sglang"
    assert "CONSTRUCTED, not captured" in manifest.source
    tokenizer = load_tokenizer(manifest.tokenizer)
    profile = bind_profile(manifest.profile, tokenizer)
    samples = _samples(name)
    assert len(samples) >= 60 and manifest.raw["samples"] == len(samples)
    m = profile.ids
    calls = [s.output_ids.count(m["tool_call_begin"]) for s in samples]
    assert sum(1 for n in calls if n == 1) >= 10 and sum(1 for n in calls if n >= 2) >= 5
    assert sum(1 for n in calls if n == 0) >= 15  # content-only answers
    assert sum(1 for s in samples if s.finish_reason == "length") >= 5
    assert all(s.prompt_ids for s in samples)
    text = "".join(tokenizer.decode(s.output_ids) for s in samples)
    assert '{"filter' in text or '"filters": {' in text  # nested arguments
    assert any(ord(c) > 0x2E80 for c in text) and "ü" in text  # non-ASCII (CJK, accents)
    if name == "Q1_glaive":
        thinking = [s for s in samples if s.output_ids and s.output_ids[0] == m["think_begin"]]
        assert 40 <= len(thinking) < len(samples)  # both thinking modes
        think_off = tokenizer.encode("<think>\n\n</think>\n\n")
        for s in samples:
            if s not in thinking and s.finish_reason != "length":
                assert s.prompt_ids[-len(think_off):] == think_off, s.id  # enable_thinking=false in the prompt


@pytest.mark.parametrize("name", sorted(DATASETS))
def test_family_quirks_diverge_as_intended_and_nothing_else_does(name):
    manifest = load_manifest(GOLDEN / name)
    tokenizer = load_tokenizer(manifest.tokenizer)
    judge = Judge(bind_profile(manifest.profile, tokenizer), tokenizer, "sglang")
    quirks = _quirks(name)
    seen, divergent = set(), 0
    for s in _samples(name):
        intended = quirks[s.id].split(":")[0]
        verdict = judge(s)
        if intended == "none":
            assert verdict.kind == EXACT, f"{name}/{s.id}: unexpected divergence\n{verdict.report}"
        else:
            divergent += 1
            assert list(verdict.classes) == [intended], f"{name}/{s.id}: quirk {quirks[s.id]!r}, classes {verdict.classes}"
            seen.add(intended)
    assert seen == CLASSES[name]
    n = len(quirks)
    assert divergent / n <= manifest.max_known_divergence_rate < divergent / n + 0.01


def test_plugin_fails_exactly_the_quirk_samples_without_reviewed_snapshots(pytester):
    for name in DATASETS:
        shutil.copytree(GOLDEN / name, pytester.path / "golden" / name, ignore=shutil.ignore_patterns("__snapshots__"))
    result = pytester.runpytest("-p", "no:randomly", f"--tokfidelity-state-dir={pytester.path / 'state'}",
                                "--tokfidelity-dataset=Q1,D1")
    for name in DATASETS:
        for sample_id, quirk in _quirks(name).items():
            intended = quirk.split(":")[0]
            if intended != "none":
                result.stdout.fnmatch_lines([f"*{name}/{sample_id} (line *): the rebuilt ids differ from the golden ids: {intended}"])
    failed = sum(1 for q in [*_quirks("Q1_glaive").values(), *_quirks("D1_glaive").values()] if not q.startswith("none"))
    outcomes = result.parseoutcomes()
    assert outcomes["failed"] == failed, result.stdout.str()[-3000:]


@pytest.mark.parametrize("name", sorted(DATASETS))
def test_family_sets_build_and_render_to_their_prompt_ids(name, tmp_path, capsys):
    """`tokfidelity build` renders every prompt with the real chat template (Qwen3's thinking-off samples with
    their chat_template_kwargs) and gets the golden prompt_ids back."""
    from pipeline.cli import main

    assert main(["build", "--in", str(GOLDEN / name), "--out", str(tmp_path / "out"), "--no-progress"]) == 0, capsys.readouterr().err
    meta = json.loads((tmp_path / "out" / "export.json").read_text())
    assert meta["samples"] == meta["prompt_ids_checked"] == len(_quirks(name))
