"""--tokfidelity-trainer: SpecForge 0.2.0's preprocessing judged against the engine's ids (pipeline.core.trainers).

The classes are built here on known ids (each could fail), a trainer that trains on exactly the engine's ids
passes, and the real SpecForge with its qwen3-thinking template fails Q1_glaive's samples with the classes the
first look found: the template's newline after <|im_end|> in the mask, and a system prompt the engine never saw."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pipeline.core.fidelity import DIVERGENT, EXACT, Judge
from pipeline.core.golden import parse_sample
from pipeline.core.profiles import bind_profile
from pipeline.core.tokenizer import load_tokenizer
from pipeline.core.trainers import (
    CLASS_PREFIX, EMPTY_REASONING_ADDED, MASK_OFF_BY_N, REASONING_DROPPED, RETOKENIZED, STOP_OUTSIDE_MASK,
    SYSTEM_PROMPT_ADDED, TEMPLATE_HEADER_WRONG, Trainer, TrainerError, classify, last_span, trainer_name,
)

ROOT = Path(__file__).resolve().parent.parent
QWEN = load_tokenizer("qwen3")
PROFILE = bind_profile("qwen3", QWEN)
STOP = PROFILE.stop_id


def q1(n: int = 1) -> list[dict]:
    with open(ROOT / "golden" / "Q1_glaive" / "samples.jsonl", encoding="utf-8") as f:
        return [s for s in map(json.loads, f) if "response" not in s and s.get("prompt_ids")][:n]


def test_each_class_on_known_ids():
    enc = QWEN.encode
    golden = enc("<think>\nAdd them.\n</think>\n\n3<|im_end|>")
    prompt = enc("<|im_start|>user\nWhat is 1 + 2?<|im_end|>\n<|im_start|>assistant\n")

    def output(span):
        return classify(golden, None, [], span, QWEN, PROFILE)[0]

    assert output(golden) == []
    assert output(golden + enc("\n")) == [MASK_OFF_BY_N]
    assert output(golden[:-1]) == [STOP_OUTSIDE_MASK, MASK_OFF_BY_N]
    assert output(enc("3<|im_end|>")) == [REASONING_DROPPED, MASK_OFF_BY_N]
    assert output(enc("<think></think>3<|im_end|>")) == [REASONING_DROPPED]  # emptied, not added
    plain = enc("3<|im_end|>")
    assert classify(plain, None, [], enc("<think>\n\n</think>\n\n3<|im_end|>"), QWEN, PROFILE)[0] == [EMPTY_REASONING_ADDED, MASK_OFF_BY_N]
    split = QWEN.encode_ordinary(" initial") + QWEN.encode_ordinary("izer") + [STOP]
    assert classify(split, None, [], enc(" initializer<|im_end|>"), QWEN, PROFILE)[0] == [RETOKENIZED]
    system = enc("<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n") + prompt
    assert classify(golden, prompt, system, golden, QWEN, PROFILE) == ([], [SYSTEM_PROMPT_ADDED])
    assert classify(golden, prompt, prompt[:-1], golden, QWEN, PROFILE)[1] == [TEMPLATE_HEADER_WRONG]


def test_the_last_masked_span_and_what_comes_before_it():
    assert last_span([1, 2, 3, 4, 5, 6], [0, 1, 0, 0, 1, 1]) == ([1, 2, 3, 4], [5, 6])
    assert last_span([1, 2], [0, 0]) == ([], [])


def test_a_trainer_that_trains_on_the_engine_ids_passes_and_one_that_does_not_is_diagnosed():
    sample = q1()[0]
    parsed = parse_sample(sample, Path("Q1"), 1)
    faithful = Trainer("faithful", lambda m, t, msg: (sample["prompt_ids"] + sample["output_ids"],
                                                      [0] * len(sample["prompt_ids"]) + [1] * len(sample["output_ids"])))
    verdict = Judge(PROFILE, QWEN, "sglang", trainer=faithful)(parsed)
    assert verdict.kind == EXACT and verdict.prompt == "exact"
    newline = QWEN.encode("\n")
    trailing = Trainer("trailing", lambda m, t, msg: (sample["prompt_ids"] + sample["output_ids"] + newline,
                                                      [0] * len(sample["prompt_ids"]) + [1] * (len(sample["output_ids"]) + 1)))
    verdict = Judge(PROFILE, QWEN, "sglang", trainer=trailing)(parsed)
    assert verdict.kind == DIVERGENT and verdict.classes == (CLASS_PREFIX + MASK_OFF_BY_N,)
    assert "mask-off-by-n (+1 tokens)" in verdict.report and "198 '\\n'" in verdict.report


def test_an_answer_the_trainer_made_no_row_of_is_its_own_class():
    """speculators skips a conversation it cannot render (and logs why): that answer is never trained on."""
    from pipeline.core.speculators_adapter import NoTrainingRow
    from pipeline.core.trainers import NO_TRAINING_ROW

    def skipped(messages, tools, message):
        raise NoTrainingRow("speculators made 0 training rows for 1 assistant turns: Render endpoint returned 400")

    verdict = Judge(PROFILE, QWEN, "sglang", trainer=Trainer("skipping", skipped))(parse_sample(q1()[0], Path("Q1"), 1))
    assert verdict.kind == DIVERGENT and verdict.classes == (CLASS_PREFIX + NO_TRAINING_ROW,)
    assert "never sees this answer" in verdict.report and "Render endpoint returned 400" in verdict.report


def test_specs_name_a_specforge_template():
    assert trainer_name("specforge:qwen3-thinking") == "specforge 0.2.0:qwen3-thinking"
    with pytest.raises(TrainerError, match="has no template 'nope'"):
        trainer_name("specforge:nope")
    with pytest.raises(TrainerError, match="expected specforge:TEMPLATE"):
        trainer_name("sglang")
    with pytest.raises(TrainerError, match="speculators needs a running vLLM server.*/v1/chat/completions/render"):
        trainer_name("speculators")
    with pytest.raises(TrainerError, match="expected speculators:http://HOST:PORT"):
        trainer_name("speculators:localhost")
    with pytest.raises(TrainerError, match="no vLLM server answers at http://127.0.0.1:9 "):
        trainer_name("speculators:http://127.0.0.1:9")


def test_speculators_data_preparation_has_no_path_without_a_vllm_server():
    """Why --tokfidelity-trainer=speculators needs a server's address: speculators 0.9.0 renders a conversation
    only through a server. Its batch preparation refuses to run without the render endpoint, and the row
    builder's only source of ids is the HTTP render client (tests/test_speculators_vllm.py runs it on one)."""
    import inspect

    from speculators.data_generation import preprocessing, render_client

    conversation = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    with pytest.raises(ValueError, match="render_endpoint is required"):
        preprocessing._preprocess_batch({"conversations": [conversation]}, False, None, 128)
    assert preprocessing._encode_render.__globals__["render_conversation"] is render_client.render_conversation
    assert "/v1/chat/completions/render" in inspect.getsource(render_client.render_conversation)


@pytest.fixture
def q1_project(tmp_path) -> Path:
    shutil.copytree(ROOT / "golden" / "Q1_glaive", tmp_path / "golden" / "Q1_glaive")
    return tmp_path


def _pytest(folder: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:randomly", "-p", "no:cacheprovider", *args],
                          cwd=folder, capture_output=True, text=True, timeout=900, env=env)


def test_specforge_qwen3_thinking_fails_q1_with_named_classes(q1_project):
    run = _pytest(q1_project, "--tokfidelity-dataset=Q1", "--tokfidelity-trainer=specforge:qwen3-thinking")
    assert run.returncode == 1, run.stdout[-2000:] + run.stderr[-2000:]
    out = run.stdout
    assert "Q1_glaive: 70 samples: 0 exact, 70 new divergences" in out
    assert out.count("(judged: trainer specforge 0.2.0:qwen3-thinking)") == 70
    assert "trainer:mask-off-by-n" in out and "trainer:system-prompt-added" in out and "trainer:empty-reasoning-added" in out
    record = json.loads((q1_project / ".tokfidelity" / "gates" / "Q1_glaive.json").read_text())
    assert record["status"] == "closed"
    bad = _pytest(q1_project, "--tokfidelity-dataset=Q1", "--tokfidelity-trainer=specforge:nope")
    assert bad.returncode == 4 and "SpecForge has no template 'nope'" in bad.stderr


KIMI_CLASS = ROOT.parent / "shared" / "engine-code" / "kimi" / "tokenization_kimi.py"  # ../shared/engine-code/README.md


def test_kimi_runs_through_its_pinned_class_and_nothing_else(tmp_path, monkeypatch):
    from pipeline.core.tokenizer import tokenizer_location
    from pipeline.core.trainers import TOKENIZER_CLASS_ENV, load_trainer

    folder = tokenizer_location("moonshotai/Kimi-K2.5")
    monkeypatch.delenv(TOKENIZER_CLASS_ENV, raising=False)
    with pytest.raises(TrainerError, match="auto_map.*set TOKFIDELITY_TOKENIZER_CLASS"):
        load_trainer("specforge:kimi-k2-thinking", folder)
    marker = tmp_path / "ran"
    other = tmp_path / "tokenization_kimi.py"  # not the pinned file: refused before a line of it runs
    other.write_text(KIMI_CLASS.read_text() + f"\nopen({str(marker)!r}, 'w').write('ran')\n")
    monkeypatch.setenv(TOKENIZER_CLASS_ENV, str(other))
    with pytest.raises(TrainerError, match="is none of the pinned tokenizer classes; refusing to run it"):
        load_trainer("specforge:kimi-k2-thinking", folder)
    assert not marker.exists()
    monkeypatch.setenv(TOKENIZER_CLASS_ENV, str(KIMI_CLASS))
    trainer = load_trainer("specforge:kimi-k2-thinking", folder)
    assert trainer.name == "specforge 0.2.0:kimi-k2-thinking"
    with open(ROOT / "golden" / "B1_glaive" / "samples.jsonl", encoding="utf-8") as f:
        sample = next(s for s in map(json.loads, f) if "response" not in s and s.get("prompt_ids"))
    kimi = load_tokenizer("kimi-k2.5")
    verdict = Judge(bind_profile("kimi-k2.5", kimi), kimi, "sglang", trainer=trainer)(parse_sample(sample, Path("B1"), 1))
    assert verdict.kind == DIVERGENT  # the template's <think> in the mask, its own tool declarations in the prompt
    assert CLASS_PREFIX + MASK_OFF_BY_N in verdict.classes and "mask-off-by-n (+1 tokens)" in verdict.report
    assert "163606 '<think>'" in verdict.report
    with open(ROOT / "golden" / "B3_magicoder" / "samples.jsonl", encoding="utf-8") as f:
        answer = parse_sample(json.loads(f.readline()), Path("B3"), 1)  # a final answer with reasoning, no tools
    kept = load_trainer("specforge:kimi-k2-thinking", folder, {"preserve_thinking": True})
    assert kept.name == "specforge 0.2.0:kimi-k2-thinking preserve_thinking=True"
    dropped = Judge(bind_profile("kimi-k2.5", kimi), kimi, "sglang", trainer=trainer)(answer)
    assert CLASS_PREFIX + REASONING_DROPPED in dropped.classes  # K2.5's template writes the last answer as history
    assert CLASS_PREFIX + REASONING_DROPPED not in Judge(bind_profile("kimi-k2.5", kimi), kimi, "sglang", trainer=kept)(answer).classes


def _golden(dataset: str, sample_id: str):
    with open(ROOT / "golden" / dataset / "samples.jsonl", encoding="utf-8") as f:
        for line, raw in enumerate(f, 1):
            if json.loads(raw)["id"] == sample_id:
                return parse_sample(json.loads(raw), Path(dataset), line)
    raise LookupError(sample_id)


def _judge(dataset: str, template: str, **options):
    """(judge, the trainer) for SpecForge's ``template`` on ``dataset``, loaded as the option loads it."""
    from pipeline.core.binding import bind_dataset
    from pipeline.core.golden import load_manifest
    from pipeline.core.prompt_renderers import use_manifest_template
    from pipeline.core.tokenizer import tokenizer_location
    from pipeline.core.trainers import load_trainer

    manifest = load_manifest(ROOT / "golden" / dataset)
    location = tokenizer_location(manifest.tokenizer)
    tokenizer, profile = bind_dataset(manifest.profile, location)
    use_manifest_template(manifest, profile, tokenizer)  # as the plugin does first: the manifest's chat template
    trainer = load_trainer(f"specforge:{template}", location, None, manifest.profile, **options)
    return Judge(profile, tokenizer, manifest.views[0], trainer=trainer), trainer


def test_the_newer_classes_on_known_ids():
    """A cut answer the template closes, the engine's system part missing, a whitespace-only prompt difference
    (against the header's own newline at the end), and tool calls written as the model wrote them after the
    template's own separator."""
    from pipeline.core.trainers import PROMPT_WHITESPACE, STOP_ADDED, SYSTEM_PROMPT_DROPPED, TOOL_CALL_RERENDERED

    enc = QWEN.encode
    cut = enc("The answer is")
    assert classify(cut, None, [], cut + enc("<|im_end|>\n"), QWEN, PROFILE)[0] == [STOP_ADDED, MASK_OFF_BY_N]
    call = '<tool_call>\n{"name": "f", "arguments": {}}\n</tool_call><|im_end|>'
    assert classify(enc("Now." + call), None, [], enc("Now.\n" + call), QWEN, PROFILE)[0] == [TOOL_CALL_RERENDERED]
    from pipeline.core.tokenizer import load_tokenizer

    ds = load_tokenizer("deepseek-ai/DeepSeek-V3.1")
    v31 = bind_profile("deepseek-v3.1", ds)
    question = "Will it rain in Paris today, and should I bring an umbrella to the museum?"
    user = ds.encode(f"<｜begin▁of▁sentence｜><｜User｜>{question}<｜Assistant｜></think>")
    tools = ds.encode(f"<｜begin▁of▁sentence｜>\n\n## Tools\nf<｜User｜>{question}<｜Assistant｜></think>")
    assert classify([], tools, user, [], ds, v31)[1] == [SYSTEM_PROMPT_DROPPED]
    inside = ds.encode(f"<｜begin▁of▁sentence｜>Be brief.\n\n## Tools\nf\n\nToday is Monday.<｜User｜>{question}<｜Assistant｜></think>")
    kept = ds.encode(f"<｜begin▁of▁sentence｜>Be brief.\n\nToday is Monday.<｜User｜>{question}<｜Assistant｜></think>")
    assert classify([], inside, kept, [], ds, v31)[1] == [SYSTEM_PROMPT_DROPPED]  # the declarations left out
    assert classify([], kept, inside, [], ds, v31)[1] == [SYSTEM_PROMPT_ADDED]
    assert classify([], user, ds.encode("  ") + user, [], ds, v31)[1] == [PROMPT_WHITESPACE]
    answer = ds.encode("Hi.<｜end▁of▁sentence｜>")
    moved = ds.encode("<｜Assistant｜></think>Hi.<｜end▁of▁sentence｜>")  # the prompt's header and empty block, trained on
    assert classify(answer, None, [], moved, ds, v31)[0] == [TEMPLATE_HEADER_WRONG, EMPTY_REASONING_ADDED, MASK_OFF_BY_N]


def test_earlier_tool_calls_reach_the_trainer_as_the_api_holds_them():
    from pipeline.core.trainers import api_messages

    stored = [{"role": "assistant", "content": "", "tool_calls": [
        {"id": "c0", "type": "function", "function": {"name": "f", "arguments": {"city": "São Paulo"}}}]}]
    sent = api_messages(stored)
    assert sent[0]["tool_calls"][0]["function"]["arguments"] == '{"city": "São Paulo"}'
    assert stored[0]["tool_calls"][0]["function"]["arguments"] == {"city": "São Paulo"}  # the sample untouched
    assert api_messages(sent) == sent


def test_specforge_llama3_and_qwen3_coder_on_their_datasets():
    """Llama 3.1 (its folder's 3.1 template) and Qwen3-Coder (its template, Qwen3's vocabulary lent beside it):
    SpecForge's system prompt, a cut answer closed by <|eot_id|>, a tool call re-serialised by the template."""
    from pipeline.core.trainers import STOP_ADDED, TOOL_CALL_RERENDERED

    judge, trainer = _judge("L1_glaive", "llama3")
    assert trainer.name == "specforge 0.2.0:llama3" and trainer.rendered_by == ""
    cut = judge(_golden("L1_glaive", "l1-0031"))  # cut at the token limit: the template closes the turn
    assert {CLASS_PREFIX + STOP_ADDED, CLASS_PREFIX + SYSTEM_PROMPT_ADDED} <= set(cut.classes), cut.report
    assert "128009 '<|eot_id|>'" in cut.report
    call = judge(_golden("L1_glaive", "l1-0007"))  # compact JSON the model wrote, json.dumps'd by the template
    assert CLASS_PREFIX + TOOL_CALL_RERENDERED in call.classes, call.report
    judge, trainer = _judge("C1_glaive", "qwen3-instruct")
    verdict = judge(_golden("C1_glaive", "c1-0009"))  # content right before <tool_call>: the template adds "\n"
    assert CLASS_PREFIX + TOOL_CALL_RERENDERED in verdict.classes and verdict.prompt == CLASS_PREFIX + SYSTEM_PROMPT_ADDED


def test_deepseek_v31_gets_the_template_kept_apart_and_v32_its_encoder():
    """V3.1's folder holds no template: the trainer's tokenizer gets the one the prompts were rendered with. V3.2
    has none at all: its encoder answers apply_chat_template, with thinking on as SpecForge's deepseek-v32 asks,
    so an answer generated with thinking off gets an empty block, and one the encoder refuses stops SpecForge;
    with the tokenizer files alone SpecForge renders its fallback, which drops the tool declarations."""
    from pipeline.core.trainers import NO_TRAINING_ROW, SYSTEM_PROMPT_DROPPED

    judge, trainer = _judge("D31_glaive", "deepseek-v3")
    assert trainer.rendered_by == "chat template chat_template.xinference.jinja"
    plain = judge(_golden("D31_glaive", "d31-0048"))  # thinking off: the prompt's </think> in the trained span
    assert CLASS_PREFIX + EMPTY_REASONING_ADDED in plain.classes and "128799 '</think>'" in plain.report
    judge, trainer = _judge("D32_glaive", "deepseek-v32")
    assert trainer.rendered_by == "the model's encoder"
    thinking = judge(_golden("D32_glaive", "d32-0000"))  # the generation prompt's <think> trained on
    assert CLASS_PREFIX + MASK_OFF_BY_N in thinking.classes and "mask-off-by-n (+1 tokens)" in thinking.report
    assert thinking.prompt == CLASS_PREFIX + TEMPLATE_HEADER_WRONG and "128798 '<think>'" in thinking.report
    off = judge(_golden("D32_glaive", "d32-0002"))  # generated with thinking off, rendered with it on
    assert CLASS_PREFIX + EMPTY_REASONING_ADDED in off.classes, off.report
    refused = judge(_golden("D32_glaive", "d32-0005"))  # no reasoning and no calls, in thinking mode
    assert refused.classes == (CLASS_PREFIX + NO_TRAINING_ROW,) and "EncoderRefused" in refused.report
    judge, trainer = _judge("D32_glaive", "deepseek-v32", model_template=False)
    assert trainer.name.endswith("(no chat template: SpecForge's fallback rendering)")
    assert judge(_golden("D32_glaive", "d32-0000")).prompt == CLASS_PREFIX + SYSTEM_PROMPT_DROPPED


def test_a_mask_that_takes_more_text_over_a_lost_split_is_both_classes():
    """The engine's non-canonical split and the template's newline after <|im_end|>, in one span."""
    golden = QWEN.encode_ordinary(" initial") + QWEN.encode_ordinary("izer") + [STOP]
    span = QWEN.encode(" initializer<|im_end|>\n")
    assert classify(golden, None, [], span, QWEN, PROFILE)[0] == [RETOKENIZED, MASK_OFF_BY_N]
    sample = parse_sample({**q1()[0], "output_ids": golden, "finish_reason": {"type": "stop", "matched": STOP}}, Path("Q1"), 1)
    trainer = Trainer("split", lambda m, t, msg: (sample.prompt_ids + span, [0] * len(sample.prompt_ids) + [1] * len(span)))
    verdict = Judge(PROFILE, QWEN, "sglang", trainer=trainer)(sample)
    assert "mask-off-by-n (the text '\\n' added)" in verdict.report, verdict.report


def test_an_earlier_tool_call_written_otherwise_in_the_prompt_is_named():
    """The engines hand an earlier call's arguments to DeepSeek-V3.1's template differently (SGLang the JSON
    string, which the template's tojson quotes again; vLLM the parsed object): the prompt differs inside that call."""
    from pipeline.core.tokenizer import load_tokenizer
    from pipeline.core.trainers import TOOL_CALL_RERENDERED

    ds = load_tokenizer("deepseek-ai/DeepSeek-V3.1")
    v31 = bind_profile("deepseek-v3.1", ds)

    def prompt(arguments: str) -> list[int]:
        return ds.encode("<｜begin▁of▁sentence｜><｜User｜>Weather in Seoul?<｜Assistant｜></think><｜tool▁calls▁begin｜>"
                         f"<｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{arguments}<｜tool▁call▁end｜><｜tool▁calls▁end｜>"
                         "<｜end▁of▁sentence｜><｜tool▁output▁begin｜>rain, 8 degrees<｜tool▁output▁end｜>The tool says it rains "
                         "in Seoul today, so take an umbrella with you when you go out.")
    engine, trainer = prompt('"{\\"city\\":\\"Seoul\\"}"'), prompt('{"city":"Seoul"}')
    assert classify([], engine, trainer, [], ds, v31)[1] == [TOOL_CALL_RERENDERED]


def test_the_docs_name_every_class_with_its_advice():
    from pipeline.core.trainers import ADVICE, CLASSES

    text = (ROOT / "docs" / "trainers.md").read_text(encoding="utf-8")
    missing = [c for c in CLASSES if f"| `{c}` |" not in text]
    assert missing == [] and set(ADVICE) == set(CLASSES)
