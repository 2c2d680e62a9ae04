"""Multi-turn training records (issue 23): ``build --turns all`` writes one record per trained assistant
turn, its prompt the history as the template re-renders it for that turn, its loss mask exactly that
turn's output ids; checked on every multi-turn golden conversation against the template."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipeline.cli import main
from pipeline.core.binding import bind_dataset
from pipeline.core.golden import load_manifest, read_samples, write_dataset
from pipeline.core.reconstruct import reconstruct_output_ids
from pipeline.core.render import render_prompt

GOLDEN = Path(__file__).resolve().parent.parent / "golden"
MULTI_TURN = ("B1_glaive", "B3_magicoder", "D1_glaive", "Q1_glaive", "smollm2-chat")


def build(folder: Path, out: Path, capsys) -> tuple[list[dict], dict]:
    assert main(["build", "--in", str(folder), "--out", str(out), "--turns", "all", "--no-progress"]) == 0, capsys.readouterr().err
    records = [json.loads(line) for line in (out / "train.jsonl").read_text().splitlines()]
    return records, json.loads((out / "export.json").read_text())


@pytest.mark.parametrize("name", MULTI_TURN)
def test_every_multi_turn_golden_conversation_gets_a_record_per_turn_as_the_template_renders_it(name, tmp_path, capsys):
    manifest = load_manifest(GOLDEN / name)
    tok, profile = bind_dataset(manifest.profile, manifest.tokenizer)
    samples = {s.id: s for s in read_samples(GOLDEN / name)}
    records, meta = build(GOLDEN / name, tmp_path / "out", capsys)
    by_id = {r["id"]: r for r in records}
    expected = rerendered = 0
    for s in samples.values():
        for i, m in enumerate(s.messages):
            if i == 0 or m["role"] != "assistant":
                continue
            expected += 1
            record = by_id[f"{s.id}@messages[{i}]"]
            # independently of build's cached renderer: the official template for messages[:i], then the turn's ids
            prompt = render_prompt(s.messages[:i], s.tools, profile, tok, chat_template_kwargs=s.chat_template_kwargs)
            output = reconstruct_output_ids({**m, "finish_reason": "stop"}, profile, tok)
            assert record["input_ids"] == prompt + output and record["prompt_len"] == len(prompt), (s.id, i)
            assert record["loss_mask"] == [0] * len(prompt) + [1] * len(output) and record["turn"] == i
            assert output[-1] in profile.stop_ids
            # the turn as it was generated, where the template writes it so in the final prompt too; the turns it
            # re-renders otherwise (DeepSeek V3's earlier turns; Kimi's reasoning of earlier answers) are the audit's
            rerendered += s.prompt_ids[: len(prompt) + len(output)] != prompt + output
    assert rerendered == meta["mask_audit"]["history_turns"]
    if name in ("B1_glaive", "B3_magicoder"):  # Kimi K2.5 keeps tool-call turns, and these answers carry no reasoning
        assert rerendered == 0
    assert expected > 0 and meta["turn_records"] == expected and meta["turns"] == "all"
    assert len(records) == len(samples) + expected


def test_kimi_drops_an_earlier_answers_reasoning_from_later_turns_prompts_unless_preserve_thinking(tmp_path, capsys):
    tok, profile = bind_dataset("kimi-k2.5", "kimi-k2.5")
    reasoning = "Two plus two is four; say it plainly."
    messages = [
        {"role": "user", "content": "What is 2 + 2?"},
        {"role": "assistant", "content": "4.", "reasoning_content": reasoning},
        {"role": "user", "content": "And 3 + 3?"},
        {"role": "assistant", "content": "6.", "reasoning_content": "Three plus three is six."},
        {"role": "user", "content": "Thanks."},
    ]
    output = reconstruct_output_ids({"content": "You're welcome.", "reasoning_content": "Polite.", "finish_reason": "stop"}, profile, tok)
    samples = []
    for n, kwargs in enumerate((None, {"preserve_thinking": True})):
        prompt = render_prompt(messages, None, profile, tok, chat_template_kwargs=kwargs)
        samples.append({"id": f"t{n}", "messages": messages, "prompt_ids": prompt, "output_ids": output, "finish_reason": "stop",
                        **({"chat_template_kwargs": kwargs} if kwargs else {})})
    folder = write_dataset(tmp_path / "K9_turns", {"name": "K9", "profile": "kimi-k2.5", "tokenizer": "kimi-k2.5", "source": "test"}, samples)
    records, meta = build(folder, tmp_path / "out", capsys)
    by_id = {r["id"]: r for r in records}
    said = tok.encode_ordinary(reasoning)

    def holds(ids: list[int], part: list[int]) -> bool:
        return any(ids[k : k + len(part)] == part for k in range(len(ids) - len(part) + 1))

    first, later = by_id["t0@messages[1]"], by_id["t0@messages[3]"]
    assert holds(first["input_ids"][first["prompt_len"]:], said)  # the turn's own output carries its reasoning
    assert not holds(later["input_ids"][: later["prompt_len"]], said)  # re-rendered without it for the next turn
    kept = by_id["t1@messages[3]"]
    assert holds(kept["input_ids"][: kept["prompt_len"]], said)  # preserve_thinking keeps it
    assert meta["turn_records"] == 4
