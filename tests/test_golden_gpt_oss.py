"""golden/G1_harmony: gpt-oss turns rendered by openai-harmony. It loads, rebuilds byte for byte, every
output parses back with openai-harmony, each intended quirk shows as its divergence class (one sample per
class) and nothing else diverges."""

from __future__ import annotations

import importlib.util
import json
import math
from pathlib import Path

import pytest
from openai_harmony import Role

from pipeline.core.fidelity import EXACT, Judge
from pipeline.core.golden import GoldenError, load_manifest, read_samples
from pipeline.core.harmony import harmony_encoding
from pipeline.core.profiles import bind_profile
from pipeline.core.tokenizer import load_tokenizer

ROOT = Path(__file__).resolve().parent.parent
G1 = ROOT / "golden" / "G1_harmony"
# The classes G1's quirks show (not special-token-id: no slip of a gpt-oss model gives a one-for-one special id
# swap through SGLang's parser; an engine stop on <|endoftext|> instead of <|return|> is stop-token).
ALL_CLASSES = {
    "stop-token", "dropped-text", "non-canonical-split", "marker-text", "whitespace",
    "tool-args-json", "tool-call-id", "truncated-utf8", "invalid-utf8", "message-structure",
}


@pytest.fixture(scope="module")
def oss():
    tokenizer = load_tokenizer("o200k_harmony")
    return tokenizer, bind_profile("gpt-oss", tokenizer)


@pytest.fixture(scope="module")
def samples():
    items = list(read_samples(G1))
    assert not [e for e in items if isinstance(e, GoldenError)]
    return items


def _quirks() -> dict[str, str]:
    lines = G1.joinpath("samples.jsonl").read_text(encoding="utf-8").splitlines()
    return {json.loads(line)["id"]: json.loads(line).get("quirk", "none") for line in lines}


def test_loads_and_says_how_it_was_made(samples):
    m = load_manifest(G1)
    assert (m.name, m.profile, m.tokenizer, m.api_view) == ("G1_harmony", "gpt-oss", "o200k_harmony", "sglang")
    assert "CONSTRUCTED, not captured" in m.source and "openai-harmony" in m.source
    assert len(samples) >= 60 and m.raw["samples"] == len(samples)
    assert all(s.prompt_ids and s.messages for s in samples)


def test_rebuilds_byte_for_byte(tmp_path):
    spec = importlib.util.spec_from_file_location("make_gpt_oss_golden", ROOT / "scripts" / "make_gpt_oss_golden.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    assert script.main(["--out", str(tmp_path)]) == 0
    for file in ("manifest.json", "samples.jsonl"):
        assert (tmp_path / "G1_harmony" / file).read_bytes() == (G1 / file).read_bytes(), file


def test_outputs_parse_back_with_openai_harmony(oss, samples):
    """Every complete output without a quirk is harmony openai-harmony reads: channels, recipients."""
    tokenizer, profile = oss
    harmony = harmony_encoding(tokenizer)
    quirks = _quirks()
    kinds = {"calls": 0, "several": 0, "answers": 0, "cut": 0, "non-ascii args": 0, "nested args": 0}
    for s in samples:
        if s.finish_reason == "length":
            kinds["cut"] += 1
            continue
        if quirks[s.id] != "none":
            continue
        messages = [m.to_dict() for m in harmony.parse_messages_from_completion_tokens(s.output_ids, Role.ASSISTANT)]
        calls = [m for m in messages if m.get("recipient")]
        assert all(m["channel"] in ("analysis", "commentary", "final") for m in messages), s.id
        assert all(c["recipient"].startswith("functions.") and c["content_type"] == "<|constrain|>json" for c in calls)
        args = [json.loads(c["content"][0]["text"]) for c in calls]
        kinds["calls"] += bool(calls)
        kinds["several"] += len(calls) > 1
        kinds["answers"] += messages[-1]["channel"] == "final"
        kinds["non-ascii args"] += any(not c["content"][0]["text"].isascii() for c in calls)
        kinds["nested args"] += any(isinstance(v, (dict, list)) for a in args for v in a.values())
    assert min(kinds.values()) >= 3, kinds


def test_quirks_diverge_as_intended_and_nothing_else_does(oss, samples):
    tokenizer, profile = oss
    judge = Judge(profile, tokenizer, "sglang")
    quirks = _quirks()
    seen, divergent = set(), 0
    for s in samples:
        intended = quirks[s.id].split(":")[0]
        verdict = judge(s)
        if intended == "none":
            assert verdict.kind == EXACT, f"{s.id}: unexpected divergence\n{verdict.report}"
        else:
            divergent += 1
            assert verdict.classes[0] == intended, f"{s.id}: quirk {quirks[s.id]!r} but classes {verdict.classes}"
            seen.add(intended)
    assert seen == ALL_CLASSES, f"classes not exercised: {ALL_CLASSES - seen}"
    assert load_manifest(G1).max_known_divergence_rate == math.ceil(1000 * divergent / len(samples)) / 1000
