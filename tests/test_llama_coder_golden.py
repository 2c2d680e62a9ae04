"""The shipped Llama 3.1 and Qwen3-Coder golden sets (golden/L1_glaive, golden/C1_glaive): they rebuild byte
for byte from their scripts, hold what the families need (JSON / XML tool calls with typed, nested,
non-ASCII and multi-line arguments, answers, answers after a tool result, builtin-tool calls for Llama,
length cuts, prompt ids from the family's own template), and under both views they are judged under
(``sglang`` and ``vllm``) every sample without a quirk is rebuilt exactly while each quirk sample
diverges with exactly the class its 'quirk' names."""

from __future__ import annotations

import importlib.util
import json

import pytest

from pipeline.core.fidelity import EXACT, Judge
from pipeline.core.golden import GoldenError, load_manifest, read_samples
from pipeline.core.profiles import bind_profile
from pipeline.core.tokenizer import load_tokenizer
from test_family_golden import GOLDEN, ROOT

DATASETS = {"L1_glaive": ("llama3", "make_llama_golden.py"), "C1_glaive": ("qwen3-coder", "make_coder_golden.py")}


def _samples(name):
    items = list(read_samples(GOLDEN / name))
    assert not [e for e in items if isinstance(e, GoldenError)]
    return items


@pytest.mark.parametrize("name", sorted(DATASETS))
def test_sets_rebuild_byte_for_byte(name, tmp_path):
    script = DATASETS[name][1]
    spec = importlib.util.spec_from_file_location(script[:-3], ROOT / "scripts" / script)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.main(["--out", str(tmp_path)]) == 0
    for file in ("manifest.json", "samples.jsonl"):
        assert (tmp_path / name / file).read_bytes() == (GOLDEN / name / file).read_bytes(), f"{name}/{file}"


@pytest.mark.parametrize("name", sorted(DATASETS))
def test_sets_hold_what_they_should(name):
    manifest = load_manifest(GOLDEN / name)
    assert manifest.profile == DATASETS[name][0] and manifest.views == ("sglang", "vllm")
    tokenizer = load_tokenizer(manifest.tokenizer)
    profile = bind_profile(manifest.profile, tokenizer)
    samples = _samples(name)
    assert all(s.prompt_ids for s in samples) and sum(s.finish_reason == "length" for s in samples) >= 3
    assert sum(1 for s in samples if any(m.get("role") == "tool" for m in s.messages)) >= 5  # multi-turn with tool results
    text = "".join(tokenizer.decode(s.output_ids) for s in samples)
    assert any(ord(c) > 0x2E80 for c in text) and "ü" in text
    # a multi-line value: JSON-escaped in Llama's call, verbatim in Qwen3-Coder's parameter
    assert ("line one\\nline two" if name == "L1_glaive" else "line one\nline two") in text
    m = profile.ids
    if name == "L1_glaive":
        calls = [s for s in samples if tokenizer.decode(s.output_ids).startswith('{"name": ')]
        assert len(calls) >= 15 and '"parameters": {' in text
        assert sum(1 for s in samples if s.output_ids[-1:] == [m["stop.2"]]) >= 2  # builtin tools end <|eom_id|>
    else:
        calls = [s.output_ids.count(m["tool_call_begin"]) for s in samples]
        assert sum(n == 1 for n in calls) >= 10 and sum(n >= 2 for n in calls) >= 3 and sum(n == 0 for n in calls) >= 15
        assert "<parameter=" in text and "<function=" in text


@pytest.mark.parametrize("view", ["sglang", "vllm"])
@pytest.mark.parametrize("name", sorted(DATASETS))
def test_quirks_diverge_as_intended_and_nothing_else_does(name, view):
    manifest = load_manifest(GOLDEN / name)
    tokenizer = load_tokenizer(manifest.tokenizer)
    judge = Judge(bind_profile(manifest.profile, tokenizer), tokenizer, view)
    lines = (GOLDEN / name / "samples.jsonl").read_text(encoding="utf-8").splitlines()
    quirks = {json.loads(line)["id"]: json.loads(line).get("quirk", "none") for line in lines}
    divergent = 0
    for s in _samples(name):
        intended = quirks[s.id].split(":")[0]
        verdict = judge(s)
        if intended == "none":
            assert verdict.kind == EXACT, f"{name}/{s.id} under {view}: unexpected divergence\n{verdict.report}"
        else:
            divergent += 1
            assert list(verdict.classes) == [intended], f"{name}/{s.id}: quirk {quirks[s.id]!r}, classes {verdict.classes}"
    assert divergent >= 3 and divergent / len(quirks) <= manifest.max_known_divergence_rate < divergent / len(quirks) + 0.01
