"""The prompt side of every sample (issue 23): each sample's conversation rendered as the engine does
and compared with its golden prompt_ids; planted failures each named by class and segment, each closing
the gate; reviewable as snapshots; ``--tokfidelity-prompts=off`` says so and ``build`` refuses its gate."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from pipeline.cli import main
from pipeline.core import gate
from pipeline.core.binding import bind_dataset
from pipeline.core.golden import write_dataset
from pipeline.core.prompt_renderers import render_prompt
from test_plugin import KIMI, exact_samples, record, run

GOLDEN = Path(__file__).resolve().parent.parent / "golden"


def golden_lines(name: str) -> dict[str, dict]:
    with open(GOLDEN / name / "samples.jsonl", encoding="utf-8") as f:
        return {s["id"]: s for s in map(json.loads, f)}


def golden_manifest(name: str, **extra) -> dict:
    manifest = json.loads((GOLDEN / name / "manifest.json").read_text())
    return {**manifest, "name": name, "max_known_divergence_rate": 1.0, **extra}


def make(pytester, name: str, source: str, samples: list[dict], **extra) -> Path:
    return write_dataset(pytester.path / "golden" / name, golden_manifest(source, **extra), samples)


def failure_text(result) -> str:
    return result.stdout.str()


# -- planted failures: class, segment, and the gate closed ------------------------------------------
def test_one_character_template_edit_fails_every_affected_sample(pytester):
    tok_dir = pytester.path / "kimi-edited"
    shutil.copytree(KIMI.source, tok_dir)
    b3 = golden_lines("B3_magicoder")
    samples = [b3[i] for i in ("b3-0005", "b3-0017", "b3-0019")]
    jinja = tok_dir / "chat_template.jinja"
    text = jinja.read_text()
    assert text.count("<|im_user|>{{role_name}}<|im_middle|>") == 1
    jinja.write_text(text.replace("<|im_user|>{{role_name}}<|im_middle|>", "<|im_user|>{{role_name}}:<|im_middle|>"))
    make(pytester, "T1_tmpl", "B3_magicoder", samples, tokenizer=str(tok_dir))
    result = run(pytester, "--tokfidelity-dataset=T1")
    result.assert_outcomes(passed=4, failed=3)
    out = failure_text(result)
    assert out.count("the rendered prompt ids differ from the golden prompt_ids (the output is exact or accepted)") == 3
    assert "prompt divergence [template-text] in the message 0 (user)" in out
    assert "prompts: 0 exact, 0 reviewed, 3 new divergences, prompt not checked: 0" in out
    assert record(pytester, "T1_tmpl")["status"] == "closed"


def test_tool_schema_key_order_changed_is_a_tool_declarations_divergence(pytester):
    q1 = golden_lines("Q1_glaive")
    sample = q1["q1-0000"]
    params = sample["tools"][0]["function"]["parameters"]
    sample["tools"][0]["function"]["parameters"] = dict(reversed(list(params.items())))  # same schema, keys reordered
    make(pytester, "T2_keys", "Q1_glaive", [sample, q1["q1-0001"]])
    result = run(pytester, "--tokfidelity-dataset=T2")
    result.assert_outcomes(passed=4 + 1, failed=1)
    assert "prompt divergence [tool-declarations] in the tool declarations" in failure_text(result)
    assert "prompt:tool-declarations" in failure_text(result)
    assert record(pytester, "T2_keys")["status"] == "closed"


def test_dropped_chat_template_kwargs_on_a_qwen3_thinking_off_sample(pytester):
    q1 = golden_lines("Q1_glaive")
    sample = q1["q1-0007"]
    assert sample.pop("chat_template_kwargs") == {"enable_thinking": False}
    make(pytester, "T3_kwargs", "Q1_glaive", [sample])
    result = run(pytester, "--tokfidelity-dataset=T3")
    result.assert_outcomes(passed=4, failed=1)
    assert "prompt divergence [template-variable] in the generation prompt" in failure_text(result)
    assert record(pytester, "T3_kwargs")["status"] == "closed"


def kept_reasoning_sample() -> dict:
    """A Kimi K2.5 conversation whose golden prompt kept an earlier turn's reasoning (preserve_thinking)."""
    tok, profile = bind_dataset("kimi-k2.5", "kimi-k2.5")
    sample = golden_lines("B3_magicoder")["b3-0005"]
    sample["messages"][1]["reasoning_content"] = "The user wants a short answer; keep it brief."
    sample["prompt_ids"] = render_prompt(sample["messages"], None, profile, tok, chat_template_kwargs={"preserve_thinking": True})
    assert sample["prompt_ids"] != render_prompt(sample["messages"], None, profile, tok)
    return sample


def test_reasoning_kept_in_a_kimi_history_turn_is_a_history_divergence(pytester):
    make(pytester, "T4_hist", "B3_magicoder", [kept_reasoning_sample()])
    result = run(pytester, "--tokfidelity-dataset=T4")
    result.assert_outcomes(passed=4, failed=1)
    out = failure_text(result)
    assert "prompt divergence [history] in the history: assistant turn 1 (messages[1])" in out
    assert "preserve_thinking" in out  # the advice
    assert record(pytester, "T4_hist")["status"] == "closed"


def kept_reasoning_tool_conversation() -> tuple[dict, int]:
    """One of B1's multi-turn conversations with tool results whose earlier answer's reasoning (and that of the
    tool-call turn before it) Kimi K2.5's template drops; its golden prompt made with preserve_thinking, as if
    the engine had kept it. Returns the sample and the first assistant turn whose reasoning was kept."""
    tok, profile = bind_dataset("kimi-k2.5", "kimi-k2.5")
    for sample in golden_lines("B1_glaive").values():
        messages = sample["messages"]
        plain = [i for i, m in enumerate(messages) if m["role"] == "assistant" and not m.get("tool_calls")]
        kept = [i for i, m in enumerate(messages) if m["role"] == "assistant" and m.get("reasoning_content") and plain and i <= plain[-1]]
        if messages[0]["role"] == "system" and kept and messages[kept[0]].get("tool_calls") and messages[kept[0] + 1]["role"] == "tool":
            break
    else:
        raise AssertionError("B1 has no conversation with a tool round whose reasoning the template drops")
    assert sample["prompt_ids"] == render_prompt(messages, sample["tools"], profile, tok)  # as shipped: dropped
    sample["prompt_ids"] = render_prompt(messages, sample["tools"], profile, tok, chat_template_kwargs={"preserve_thinking": True})
    assert sample["prompt_ids"] != render_prompt(messages, sample["tools"], profile, tok)
    return sample, kept[0]


def test_reasoning_kept_in_a_kimi_tool_call_history_turn_is_a_history_divergence(pytester):
    """The same planted failure on a conversation with tool results: the kept reasoning is that of a tool-call
    turn (its results follow), named by its message index after the system turn."""
    sample, turn = kept_reasoning_tool_conversation()
    make(pytester, "T9_tools", "B1_glaive", [sample])
    result = run(pytester, "--tokfidelity-dataset=T9")
    result.assert_outcomes(passed=4, failed=1)
    out = failure_text(result)
    assert f"prompt divergence [history] in the history: assistant turn {turn} (messages[{turn}])" in out
    assert "preserve_thinking" in out
    assert "prompts: 0 exact, 0 reviewed, 1 new divergence" in out
    assert record(pytester, "T9_tools")["status"] == "closed"


# -- reviewed as snapshots, counted, summarised -------------------------------------------------------
def test_a_prompt_divergence_is_reviewable_as_a_snapshot_entry(pytester):
    path = make(pytester, "T5_snap", "B3_magicoder", [kept_reasoning_sample()])
    run(pytester, "--tokfidelity-dataset=T5", "--snapshot-update")
    ledger = (path / "__snapshots__" / "fidelity.ambr").read_text()
    assert '"prompt": {"class": "history"' in ledger and '"segment": "history: assistant turn 1 (messages[1])"' in ledger
    result = run(pytester, "--tokfidelity-dataset=T5")
    result.assert_outcomes(passed=4 + 1)
    assert "prompts: 0 exact, 1 reviewed, prompt not checked: 0" in result.stdout.str()
    assert record(pytester, "T5_snap")["status"] == "open"


def test_samples_without_prompt_ids_are_counted_as_not_checked(pytester):
    b3 = golden_lines("B3_magicoder")
    samples = [b3["b3-0005"], *exact_samples(2)]  # exact_samples record no prompt_ids
    make(pytester, "T6_count", "B3_magicoder", samples)
    result = run(pytester, "--tokfidelity-dataset=T6")
    result.assert_outcomes(passed=4 + 3)
    assert "prompts: 1 exact, 0 reviewed, prompt not checked: 2" in result.stdout.str()
    rec = record(pytester, "T6_count")
    assert rec["prompts"] == "on" and rec["counts"]["prompt_exact"] == 1 and rec["counts"]["prompt_unchecked"] == 2


# -- --tokfidelity-prompts=off ----------------------------------------------------------------------------
def test_prompts_off_skips_the_prompt_verdicts_and_its_gate_says_so_and_build_refuses_it(pytester, capsys):
    path = make(pytester, "T7_off", "B3_magicoder", [kept_reasoning_sample()])
    result = run(pytester, "--tokfidelity-dataset=T7", "--tokfidelity-prompts=off")
    result.assert_outcomes(passed=4 + 1)
    assert "prompts: off (--tokfidelity-prompts=off): 1 sample not rendered" in result.stdout.str()
    state = pytester.path / "state"
    assert record(pytester, "T7_off")["prompts"] == "off"
    status = gate.check_gate("T7", golden_dir=pytester.path / "golden", state_dir=state)
    assert status.open and not status.prompts_checked and "Its prompts were not verified" in status.message
    code = main(["build", "--in", str(path), "--out", str(pytester.path / "built"), "--state-dir", str(state), "--no-progress"])
    assert code == 3
    err = capsys.readouterr().err
    assert "opened by a run with --tokfidelity-prompts=off" in err and not (pytester.path / "built" / "train.jsonl").exists()
    # a run with prompt verdicts on fails the planted history sample, and closes the gate again
    run(pytester, "--tokfidelity-dataset=T7").assert_outcomes(passed=4, failed=1)
    assert record(pytester, "T7_off")["status"] == "closed"


def test_results_json_and_report_show_the_prompt_hunk(pytester):
    make(pytester, "T8_report", "B3_magicoder", [kept_reasoning_sample()])
    out = pytester.path / "report"
    run(pytester, "--tokfidelity-dataset=T8", f"--tokfidelity-report={out}").assert_outcomes(passed=4, failed=1)
    doc = json.loads((out / "results.json").read_text())
    (sample,) = doc["samples"]
    assert sample["verdict"] == "new" and "prompt:history" in sample["classes"]
    assert sample["prompt"]["class"] == "history" and sample["prompt"]["segment"] == "history: assistant turn 1 (messages[1])"
    assert "preserve_thinking" in sample["prompt"]["advice"]
    html = (out / "report.html").read_text()
    assert "prompt: history in the history: assistant turn 1 (messages[1])" in html


# -- the prompt judge itself ------------------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(p.name for p in GOLDEN.iterdir() if (p / "manifest.json").is_file()))
def test_every_shipped_sample_renders_to_its_prompt_ids(name):
    """G1 included: gpt-oss prompts through openai-harmony's render_conversation_for_completion."""
    from pipeline.core.golden import load_manifest, read_samples
    from pipeline.core.prompt_check import PROMPT_EXACT, PromptJudge
    from pipeline.core.prompt_renderers import use_manifest_template

    manifest = load_manifest(GOLDEN / name)
    tok, profile = bind_dataset(manifest.profile, manifest.tokenizer)
    use_manifest_template(manifest, profile, tok)  # the template file the manifest names (D31), checked
    judge = PromptJudge(profile, tok)
    samples = list(read_samples(GOLDEN / name))
    verdicts = {s.id: judge(s) for s in samples}
    assert all(s.prompt_ids for s in samples)
    assert {k: v for k, v in verdicts.items() if v != PROMPT_EXACT} == {}


def test_piecewise_encoding_is_the_tokenizers_own_encoding():
    from pipeline.core.prompt_check import _Encoder
    from pipeline.core.render import render_text

    tok, profile = bind_dataset("kimi-k2.5", "kimi-k2.5")
    encoder = _Encoder(tok)
    assert encoder.piecewise
    texts = [render_text(s["messages"], s.get("tools"), profile, tok) for s in golden_lines("B1_glaive").values()]
    texts += ["<|im_end|><|im_end|>plain", "x" * 30_000 + "<|im_end|>", "", "<|im_user|>" + "word " * 40 + "<|im_middle|>"]
    for _ in range(2):  # the second time from the cache
        assert [encoder(t) for t in texts] == [tok.encode(t) for t in texts]
    assert encoder.cache  # the tool declarations and system turns were kept


def test_samples_of_one_conversation_share_its_rendering_and_each_meets_its_own_prompt_ids(monkeypatch):
    """n samples of one prompt are rendered and encoded once (``conversation_ids``' memo), and each is still
    compared with its own prompt_ids: a wrong one among them fails, whichever comes first."""
    from dataclasses import replace

    from pipeline.core import chat_renderer
    from pipeline.core.golden import parse_sample
    from pipeline.core.prompt_check import PROMPT_EXACT, PromptDivergence, PromptJudge

    monkeypatch.setattr(chat_renderer, "_said", {})  # the NaN's render by transformers is said in this test alone
    tok, profile = bind_dataset("kimi-k2.5", "kimi-k2.5")
    line = next(s for s in golden_lines("B1_glaive").values() if s.get("tools"))
    right = parse_sample(line, Path("B1.jsonl"), 1)
    wrong = replace(right, prompt_ids=right.prompt_ids[:-1] + [tok.encode_ordinary("x")[0]])  # the last id changed
    short = replace(right, prompt_ids=right.prompt_ids[:-1])
    for order in ((right, wrong, short), (wrong, short, right)):
        judge = PromptJudge(profile, tok)
        verdicts = {id(s): judge(s) for s in order}
        assert verdicts[id(right)] == PROMPT_EXACT
        assert isinstance(verdicts[id(wrong)], PromptDivergence) and isinstance(verdicts[id(short)], PromptDivergence)
        assert len(judge._conversations) == 1  # one conversation, rendered once
    # the same conversation as JSON but another value (a NaN writes as null), or another type (1, 1.0, true),
    # or another key order: another input to the template, rendered on its own
    judge = PromptJudge(profile, tok)
    tool = {"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {
        "n": {"type": "integer", "default": None}}}}}
    messages = [{"role": "user", "content": "hi"}]
    for default in (None, float("nan"), 1, 1.0, True):
        tools = [json.loads(json.dumps(tool))]
        tools[0]["function"]["parameters"]["properties"]["n"]["default"] = default
        assert judge.conversation_ids(messages, tools, None) == PromptJudge(profile, tok).ids(messages, tools, None)
    reordered = [{"content": "hi", "role": "user"}]
    assert judge.conversation_ids(reordered, None, None) == PromptJudge(profile, tok).ids(reordered, None, None)
    assert judge.conversation_ids(messages, None, None) == PromptJudge(profile, tok).ids(messages, None, None)
    assert len(judge._conversations) == 6  # null and NaN share a key: the NaN one was rendered, not taken from it


def test_a_judged_chunk_gives_each_sample_the_verdict_it_gets_judged_alone(tmp_path):
    """A judging process runs a chunk's output sides, then its prompt sides (each pass keeps its own code and
    tables in the CPU's caches): every sample's verdict is still the one ``Judge`` gives it alone, whichever
    side diverged, a conversation that cannot be rendered and a broken line included."""
    from pipeline.core.fidelity import BAD_INPUT, DIVERGENT, EXACT
    from pytest_tokfidelity.dataset import DatasetRun

    b3 = list(golden_lines("B3_magicoder").values())
    kept = kept_reasoning_sample()
    unrenderable = {**b3[1], "id": "b3-unrenderable", "messages": [{"role": "user", "content": 7}]}
    both = {**kept, "id": "b3-both", "output_ids": _one_resplit(kept["output_ids"])}  # both sides diverge
    samples = [b3[0], {**kept, "id": "b3-kept"}, unrenderable, both, *b3[3:40]]
    path = write_dataset(tmp_path / "golden" / "C1_chunk", golden_manifest("B3_magicoder"), samples)
    with open(path / "samples.jsonl", "a", encoding="utf-8") as f:
        f.write('{"id": "broken", "output_ids": [1, 2\n')
    ds = DatasetRun(0, path, None, None)
    judge, error = ds.setup()
    assert error is None
    positions = list(range(len(ds.index)))
    began = []
    chunk = ds.judge_positions(positions, began.append).verdicts
    alone = {p: judge(ds.index.read(p, ds.fd)) for p in positions}
    assert chunk == alone
    assert sorted(set(began)) == positions  # the progress a stuck judge is named by covers every sample
    kinds = [(v.kind, v.prompt) for v in chunk.values()]
    assert (EXACT, "exact") in kinds and (DIVERGENT, "history") in kinds and kinds.count((BAD_INPUT, "")) == 2
    assert chunk[3].kind == DIVERGENT and chunk[3].prompt == "history" and chunk[3].output_diverged
    assert any(v.kind != EXACT and v.prompt == "exact" for v in chunk.values())  # an output side alone not exact
    ds.close()


def test_the_renderer_is_compiled_before_the_judges_fork(tmp_path):
    """A lone run's judges inherit transformers' renderer and the compiled template (dataset.before_fork);
    a dataset without prompt_ids compiles nothing."""
    from pipeline.core import render
    from pytest_tokfidelity.dataset import DatasetRun

    b3 = list(golden_lines("B3_magicoder").values())
    with_prompts = write_dataset(tmp_path / "golden" / "P1", golden_manifest("B3_magicoder"), b3[:3])
    without = write_dataset(tmp_path / "golden" / "P2", golden_manifest("B3_magicoder"),
                            [{k: v for k, v in s.items() if k != "prompt_ids"} for s in b3[:3]])
    render._renderer.cache_clear()
    for path, compiled in ((without, 0), (with_prompts, 1)):
        ds = DatasetRun(0, path, None, None)
        assert ds.setup()[1] is None
        ds.before_fork()
        assert render._renderer.cache_info().currsize == compiled, path.name
        ds.close()
    assert render.renderer_for(ds.setup()[0].tokenizer) is render.renderer_for(ds.setup()[0].tokenizer)


def _one_resplit(ids: list[int]) -> list[int]:
    """The ids with one token of 4 or more ASCII bytes written as two tokens (the text unchanged)."""
    tok, _ = bind_dataset("kimi-k2.5", "kimi-k2.5")
    for j, i in enumerate(ids):
        b = tok.token_bytes(i)
        if len(b) >= 4 and b.isascii() and b.isalpha():
            halves = tok.encode_ordinary(b[:2].decode()) + tok.encode_ordinary(b[2:].decode())
            if len(halves) == 2:
                return ids[:j] + halves + ids[j + 1 :]
    raise AssertionError("no token to re-split")
