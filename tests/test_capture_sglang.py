"""SGLangEngine against a real HTTP server on 127.0.0.1 that speaks SGLang's /generate and chat shapes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipeline.stages.prompts import Prompt
from pipeline.stages.capture.sglang_engine import SGLangEngine, SGLangError
from pipeline.cli import main
from pipeline.core.golden import load_manifest, read_samples
from pipeline.core.prompt_renderers import render_prompt
from servers.http_server import FaultyServer
from servers.sglang import SGLangAnswers

SAMPLING = {"seed": 1, "temperature": 0.7, "top_p": 0.9, "max_new_tokens": 64}
PROMPT = Prompt("p1", [{"role": "user", "content": "Say hello."}])


@pytest.fixture(scope="module")
def answers():
    return SGLangAnswers()


def test_generate_mode_sends_our_prompt_ids_and_keeps_output_ids_verbatim(answers):
    tok, profile = answers.tok, answers.profile
    with FaultyServer(answers) as server:
        engine = SGLangEngine(server.url, profile, tok, mode="generate")
        capture = engine.capture(PROMPT, SAMPLING)
    path, body = server.requests[0]
    assert path == "/generate"
    assert body["input_ids"] == render_prompt(PROMPT.messages, None, profile, tok) == capture.prompt_ids
    assert body["sampling_params"] == {"temperature": 0.7, "top_p": 0.9, "seed": 1, "max_new_tokens": 64, "skip_special_tokens": False}
    want, _ = answers.output_ids(tok.decode(capture.prompt_ids), 64)
    assert capture.output_ids == want
    assert capture.output_ids[-1] == profile.stop_id
    # the non-canonical split survives: re-encoding the text would give other ids
    assert tok.encode(tok.decode(capture.output_ids)) != capture.output_ids
    assert capture.finish_reason == {"type": "stop", "matched": profile.stop_id}
    assert capture.meta["completion_tokens"] == len(capture.output_ids)


def test_generate_mode_length_and_per_prompt_max(answers):
    with FaultyServer(answers) as server:
        engine = SGLangEngine(server.url, answers.profile, answers.tok)
        capture = engine.capture(Prompt("p2", PROMPT.messages, max_tokens=3), SAMPLING)
    assert server.requests[0][1]["sampling_params"]["max_new_tokens"] == 3
    assert len(capture.output_ids) == 3 and capture.finish_reason == {"type": "length", "length": 3}


def test_chat_mode_uses_return_token_ids_and_compares_rendering(answers):
    with FaultyServer(answers) as server:
        engine = SGLangEngine(server.url, answers.profile, answers.tok, mode="chat")
        same = engine.capture(PROMPT, SAMPLING)
        differs = engine.capture(Prompt("p3", [{"role": "user", "content": "[server-template-differs]"}]), SAMPLING)
    body = server.requests[0][1]
    assert server.requests[0][0] == "/v1/chat/completions"
    assert body["return_token_ids"] is True and body["max_tokens"] == 64 and body["stream"] is False
    assert same.meta["prompt_render"] == "same"
    # SGLang 0.5.23 puts both lists on the choice; the golden sample keeps where they came from
    assert same.meta["ids_fields"] == ["choices[0].prompt_token_ids", "choices[0].response_token_ids"]
    assert same.response == {"content": "(parsed text)", "finish_reason": "stop"}
    assert same.output_ids[-1] == answers.profile.stop_id
    assert same.finish_reason == {"type": "stop", "matched": answers.profile.stop_id}
    assert differs.meta["prompt_render"]["first_difference"] == 3
    assert differs.prompt_ids[3] == 198  # the server's ids are what is recorded


def test_transient_faults_are_retried(answers):
    with FaultyServer(answers) as server:
        server.faults.extend(["500", "reset", "truncated", "429"])
        engine = SGLangEngine(server.url, answers.profile, answers.tok)
        engine.retry = type(engine.retry)(max_retries=5, base_delay=0.01)
        capture = engine.capture(PROMPT, SAMPLING)
    assert len(server.requests) == 5 and capture.output_ids[-1] == answers.profile.stop_id


def test_server_without_token_ids_is_an_error_naming_the_field(answers):
    def no_ids(path, body):
        return answers(path, {**body, "return_token_ids": False})

    with FaultyServer(no_ids) as server:
        engine = SGLangEngine(server.url, answers.profile, answers.tok, mode="chat")
        with pytest.raises(SGLangError, match=r"no output ids in the answer .*choices\[0\]\.response_token_ids"):
            engine.capture(PROMPT, SAMPLING)


def test_capture_command_writes_a_golden_dataset(tmp_path, answers):
    prompts = tmp_path / "prompts.jsonl"
    prompts.write_text("".join(json.dumps({"id": f"q{i}", "messages": [{"role": "user", "content": "x" * i}]}) + "\n" for i in range(1, 4)))
    with FaultyServer(answers) as server:
        code = main(["capture", "--engine", "sglang", "--url", server.url, "--dataset", "S1_sglang",
                     "--prompts", str(prompts), "--out", str(tmp_path / "golden"), "--max-new-tokens", "50"])
    assert code == 0
    dataset = tmp_path / "golden" / "S1_sglang"
    manifest = load_manifest(dataset)
    assert manifest.profile == "kimi-k2.5" and manifest.raw["engine"]["engine"] == "sglang"
    samples = list(read_samples(dataset))
    assert [s.id for s in samples] == ["q1", "q2", "q3"]
    for s in samples:
        assert s.prompt_ids == render_prompt(s.messages, None, answers.profile, answers.tok)
        assert s.output_ids == answers.output_ids(answers.tok.decode(s.prompt_ids), 50)[0]


def test_prompt_with_a_lone_surrogate_is_captured_and_the_run_goes_on(tmp_path, answers):
    prompts = tmp_path / "prompts.jsonl"
    prompts.write_text('{"id": "a", "messages": [{"role": "user", "content": "hi"}]}\n'
                       '{"id": "b", "messages": [{"role": "user", "content": "bad \\ud800"}]}\n'
                       '{"id": "c", "messages": [{"role": "user", "content": "yo"}]}\n')
    with FaultyServer(answers) as server:
        code = main(["capture", "--engine", "sglang", "--url", server.url, "--dataset", "S2_sglang",
                     "--prompts", str(prompts), "--out", str(tmp_path / "golden"), "--max-new-tokens", "20"])
    assert code == 0
    samples = list(read_samples(tmp_path / "golden" / "S2_sglang"))
    assert [s.id for s in samples] == ["a", "b", "c"] and samples[1].messages[0]["content"] == "bad \ud800"
