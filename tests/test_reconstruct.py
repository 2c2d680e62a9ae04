"""reconstruct_output_ids on real tokenizers, and the ``tokfidelity reconstruct`` command (JSONL in/out)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pipeline.core.profiles import bind_profile
from pipeline.core.reconstruct import ReconstructionError, reconstruct_output_ids
from pipeline.core.responses import ResponseError
from pipeline.core.tokenizer import load_tokenizer

ROOT = Path(__file__).resolve().parent.parent


def _call(name, arguments, call_id=None):
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def test_layout_and_ids(kimi, profile):
    tokenizer = kimi
    ids = reconstruct_output_ids({"reasoning": "Hmm.", "content": "Yes.", "finish_reason": "stop"}, profile, tokenizer)
    enc = tokenizer.encode_ordinary
    assert ids == enc("Hmm.") + [163607] + enc("Yes.") + [163586]


@pytest.mark.parametrize(
    "reasoning_fields",
    [
        {"reasoning": "Hmm."},
        {"reasoning_content": "Hmm."},
        {"reasoning_details": [{"type": "reasoning.text", "text": "Hm"}, {"type": "reasoning.summary", "summary": "x"}, {"type": "reasoning.text", "text": "m."}]},
    ],
)
def test_reasoning_from_any_field(kimi, profile, reasoning_fields):
    tokenizer = kimi
    ids = reconstruct_output_ids({**reasoning_fields, "content": "Yes.", "finish_reason": "stop"}, profile, tokenizer)
    assert tokenizer.decode(ids) == "Hmm.</think>Yes.<|im_end|>"


def test_literal_marker_text_in_content_stays_ordinary(kimi, profile):
    tokenizer = kimi
    ids = reconstruct_output_ids({"reasoning": "r", "content": "say <|im_end|> and </think>", "finish_reason": "stop"}, profile, tokenizer)
    assert ids.count(163586) == 1 and ids[-1] == 163586
    assert ids.count(163607) == 1
    assert tokenizer.decode(ids) == "r</think>say <|im_end|> and </think><|im_end|>"


def test_length_has_no_stop_and_open_reasoning_has_no_think_end(kimi, profile):
    tokenizer = kimi
    cut_in_reasoning = reconstruct_output_ids({"reasoning": "still", "content": "", "finish_reason": "length"}, profile, tokenizer)
    assert cut_in_reasoning == tokenizer.encode_ordinary("still")
    cut_in_content = reconstruct_output_ids({"reasoning": "r", "content": "par", "finish_reason": "length"}, profile, tokenizer)
    assert cut_in_content == tokenizer.encode_ordinary("r") + [163607] + tokenizer.encode_ordinary("par")


def test_tool_call_ids_kept_when_model_shaped_else_rebuilt(kimi, profile):
    tokenizer = kimi
    response = {
        "reasoning": "r",
        "content": None,
        "tool_calls": [_call("get", '{"a": 1}', "functions.get:5"), _call("put", "{}", "call_8f3a"), _call("del", "{}")],
        "finish_reason": "tool_calls",
    }
    text = tokenizer.decode(reconstruct_output_ids(response, profile, tokenizer))
    assert text == (
        "r</think><|tool_calls_section_begin|>"
        '<|tool_call_begin|>functions.get:5<|tool_call_argument_begin|>{"a": 1}<|tool_call_end|>'
        "<|tool_call_begin|>functions.put:1<|tool_call_argument_begin|>{}<|tool_call_end|>"
        "<|tool_call_begin|>functions.del:2<|tool_call_argument_begin|>{}<|tool_call_end|>"
        "<|tool_calls_section_end|><|im_end|>"
    )


def test_full_chat_completion_body(kimi, profile):
    tokenizer = kimi
    body = {"choices": [{"message": {"role": "assistant", "reasoning_content": "r", "content": "c"}, "finish_reason": "stop"}]}
    assert tokenizer.decode(reconstruct_output_ids(body, profile, tokenizer)) == "r</think>c<|im_end|>"


def test_chatml_refuses_reasoning_and_tools():
    tokenizer = load_tokenizer("qwen3")
    profile = bind_profile("chatml", tokenizer)
    assert reconstruct_output_ids({"content": "hi", "finish_reason": "stop"}, profile, tokenizer) == tokenizer.encode_ordinary("hi") + [151645]
    with pytest.raises(ReconstructionError, match="'reasoning'.*no reasoning section"):
        reconstruct_output_ids({"reasoning": "r", "content": "hi", "finish_reason": "stop"}, profile, tokenizer)
    with pytest.raises(ReconstructionError, match="'tool_calls'.*no tool-call format"):
        reconstruct_output_ids({"content": "", "tool_calls": [_call("f", "{}")], "finish_reason": "tool_calls"}, profile, tokenizer)


@pytest.mark.parametrize(
    "response, field",
    [
        ({"content": "x"}, "finish_reason"),
        ({"content": 3, "finish_reason": "stop"}, "content"),
        ({"content": "", "finish_reason": "done"}, "finish_reason"),
        ({"content": "", "tool_calls": [{"function": {"name": "f", "arguments": {"a": 1}}}], "finish_reason": "stop"}, "tool_calls[0].function.arguments"),
        ({"choices": [], "finish_reason": "stop"}, "choices"),
        ({"index": 0, "message": {"content": "lost"}, "finish_reason": "stop"}, "content"),  # a choice, not a body
        ({"text": "lost", "finish_reason": "stop"}, "content"),  # a legacy completions answer
        ({"reasoning_details": [{"type": "reasoning.text", "text": 5}], "finish_reason": "stop"}, "reasoning_details[0].text"),
    ],
)
def test_bad_responses_name_the_field(kimi, profile, response, field):
    tokenizer = kimi
    with pytest.raises(ResponseError) as info:
        reconstruct_output_ids(response, profile, tokenizer)
    assert info.value.field == field


# -- the command ---------------------------------------------------------------------------
def _tokfidelity(*args: str, stdin: str) -> subprocess.CompletedProcess:
    script = Path(sys.executable).parent / "tokfidelity"
    command = [str(script)] if script.exists() else [sys.executable, "-m", "pipeline.cli"]
    return subprocess.run(
        [*command, *args], input=stdin, capture_output=True, text=True, cwd=ROOT, env=os.environ.copy(), timeout=120
    )


def test_cli_jsonl_in_order_with_bad_lines_named(kimi, profile):
    tokenizer = kimi
    good = {"reasoning": "Hmm.", "content": "Yes.", "tool_calls": None, "finish_reason": "stop"}
    tool = {"reasoning": "r", "content": "", "tool_calls": [_call("get", '{"q": 1}', "functions.get:0")], "finish_reason": "tool_calls"}
    lines = [
        json.dumps(good),
        "{not json",
        json.dumps({"content": "x", "finish_reason": "maybe"}),
        "",
        json.dumps(tool),
    ]
    result = _tokfidelity("reconstruct", "--profile", "kimi-k2.5", "--tokenizer", "kimi-k2.5", stdin="\n".join(lines) + "\n")
    assert result.returncode == 1, result.stderr
    out = [json.loads(line) for line in result.stdout.splitlines()]
    assert len(out) == 4  # one per non-blank input line, in order
    assert out[0] == {"output_ids": reconstruct_output_ids(good, profile, tokenizer)}
    assert out[1]["line"] == 2 and "not valid JSON" in out[1]["error"]
    assert out[2]["line"] == 3 and "finish_reason" in out[2]["error"]
    assert out[3] == {"output_ids": reconstruct_output_ids(tool, profile, tokenizer)}
    assert "<stdin>:2:" in result.stderr and "<stdin>:3:" in result.stderr


def test_cli_deeply_nested_line_is_named_and_the_rest_still_comes_out():
    lines = ["[" * 100_000 + "]" * 100_000, '{"content": "hi", "finish_reason": "stop"}']
    result = _tokfidelity("reconstruct", "--profile", "kimi-k2.5", "--tokenizer", "kimi-k2.5", stdin="\n".join(lines) + "\n")
    assert result.returncode == 1 and "Traceback" not in result.stderr
    out = [json.loads(line) for line in result.stdout.splitlines()]
    assert out[0] == {"error": "not valid JSON: nested too deeply", "line": 1} and "output_ids" in out[1]


def test_cli_line_with_bytes_that_are_not_utf8_is_named_not_guessed():
    script = Path(sys.executable).parent / "tokfidelity"
    command = [str(script)] if script.exists() else [sys.executable, "-m", "pipeline.cli"]
    data = b'{"content": "a", "finish_reason": "stop"}\n{"content": "caf\xe9", "finish_reason": "stop"}\n{"content": "b", "finish_reason": "stop"}\n'
    for locale in ("C.UTF-8", "C"):
        result = subprocess.run([*command, "reconstruct", "--profile", "kimi-k2.5", "--tokenizer", "kimi-k2.5"], input=data,
                                capture_output=True, cwd=ROOT, env={**os.environ, "LC_ALL": locale, "LANG": locale}, timeout=120)
        assert result.returncode == 1, result.stderr
        out = [json.loads(line) for line in result.stdout.splitlines()]
        assert out[1] == {"error": "not UTF-8: byte 0xe9 at column 17", "line": 2}
        assert "output_ids" in out[0] and "output_ids" in out[2]


def test_cli_output_closed_early_stops_quietly():
    import threading

    script = Path(sys.executable).parent / "tokfidelity"
    command = [str(script)] if script.exists() else [sys.executable, "-m", "pipeline.cli"]
    lines = b'{"content": "hello world", "finish_reason": "stop"}\n' * 50_000
    process = subprocess.Popen([*command, "reconstruct", "--profile", "kimi-k2.5", "--tokenizer", "kimi-k2.5"], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT, env=os.environ.copy())

    def feed():
        for stream_op in (lambda: process.stdin.write(lines), process.stdin.close, process.stdin.close):
            try:
                stream_op()
            except BrokenPipeError:  # the command has stopped reading: expected here
                pass

    feeder = threading.Thread(target=feed, daemon=True)
    feeder.start()
    assert json.loads(process.stdout.readline())["output_ids"]
    process.stdout.close()  # as `| head -1` does
    stderr = process.stderr.read().decode()
    process.stderr.close()
    feeder.join(timeout=60)
    assert process.wait(timeout=120) == 141 and "Traceback" not in stderr, stderr


def test_cli_all_good_exits_zero_and_bad_profile_is_usage_error():
    ok = _tokfidelity("reconstruct", "--profile", "kimi-k2", "--tokenizer", "kimi-k2", stdin='{"content": "hi", "finish_reason": "stop"}\n')
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout)["output_ids"][-1] == 163586
    bad = _tokfidelity("reconstruct", "--profile", "nope", "--tokenizer", "kimi-k2", stdin="")
    assert bad.returncode == 2 and "unknown profile 'nope'" in bad.stderr


def test_cli_qwen3_reads_reasoning_content_or_reasoning_and_ignores_extra_fields():
    """`tokfidelity reconstruct --profile qwen3` rebuilds Qwen3's layout: <think> block, the "\\n\\n" and
    "\\n" the tool-call parser strips around the content, the call's JSON body, <|im_end|>."""
    tok = load_tokenizer("qwen3")
    m = bind_profile("qwen3", tok).ids
    call = {"id": "call_8f2a9c", "type": "function", "function": {"name": "get", "arguments": '{"q": 1}'}}
    lines = [
        {"id": "a", "reasoning_content": "\nHm.\n", "content": "Let me look.", "tool_calls": [call], "finish_reason": "tool_calls"},
        {"id": "b", "model": "qwen3", "reasoning": "\nHm.\n", "content": "Let me look.", "tool_calls": [call], "finish_reason": "tool_calls"},
        {"id": "c", "content": "Thinking was off.", "finish_reason": "stop"},
    ]
    out = _tokfidelity("reconstruct", "--profile", "qwen3", "--tokenizer", "qwen3", stdin="".join(json.dumps(x) + "\n" for x in lines))
    assert out.returncode == 0, out.stderr
    got = [json.loads(line)["output_ids"] for line in out.stdout.splitlines()]
    enc = tok.encode_ordinary
    with_call = ([m["think_begin"]] + enc("\nHm.\n") + [m["think_end"]] + enc("\n\nLet me look.\n") + [m["tool_call_begin"]]
                 + enc('\n{"name": "get", "arguments": {"q": 1}}\n') + [m["tool_call_end"], m["stop"]])
    assert got == [with_call, with_call, enc("Thinking was off.") + [m["stop"]]]
