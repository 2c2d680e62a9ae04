"""Hostile inputs, kept running in CI.

A chat template that divides by zero, recurses, loops without end or writes megabytes; JSON integers
of thousands of digits; a server that trickles its answer forever; a FIFO where a samples file should
be; lone surrogates; duplicate JSON keys. Each must give a located error for the line or file it is
in, and every other line must still be processed.
"""

from __future__ import annotations

import json
import shutil
import threading
import time
from pathlib import Path

import pytest

from pipeline.cli import main
from pipeline.core import render
from pipeline.core.watchdog import TimeLimitExceeded, time_limit
from tokenizer_roots import SHARED  # TOKFIDELITY_TOKENIZERS, else ../shared/tokenizers

# One template, a different attack per conversation (chosen by the first message's content).
HOSTILE_TEMPLATE = """{%- set c = messages[0].content -%}
{%- if c == 'divide' -%}{{ 1/0 }}
{%- elif c == 'recurse' -%}{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}
{%- elif c == 'loop' -%}{% for a in range(100000) %}{% for b in range(100000) %}{% for d in range(100000) %}{% endfor %}{% endfor %}{% endfor %}
{%- elif c == 'silent' -%}{% set s = c * 30000 %}{% for a in s %}{% for b in s %}{% endfor %}{% endfor %}
{%- elif c == 'huge' -%}{{ c * 5000000 }}
{%- elif c == 'digits' -%}{{ 10 ** (c|length * 1000) }}
{%- else -%}<|im_start|>user\n{{ c }}<|im_end|>\n<|im_start|>assistant\n
{%- endif -%}"""


@pytest.fixture()
def hostile_tokenizer(tmp_path):
    folder = tmp_path / "tok"
    shutil.copytree(SHARED / "qwen3", folder)
    (folder / "chat_template.jinja").write_text(HOSTILE_TEMPLATE, encoding="utf-8")
    render._template_files.cache_clear()  # read once per process, by folder
    yield folder
    render._template_files.cache_clear()


def _conversation(content: str) -> str:
    return json.dumps({"messages": [{"role": "user", "content": content}]})


# -- 6. hostile or runaway chat templates -------------------------------------------------------
def test_a_hostile_template_fails_its_line_and_keeps_the_others(hostile_tokenizer, tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(render, "RENDER_SECONDS", 1.0)
    attacks = ["divide", "recurse", "loop", "silent", "huge", "digits"]
    path = tmp_path / "conversations.jsonl"
    path.write_text("\n".join(_conversation(c) for c in ["hello", *attacks, "bye"]) + "\n", encoding="utf-8")
    start = time.monotonic()
    code = main(["render", "--profile", "qwen3", "--tokenizer", str(hostile_tokenizer), str(path)])
    took = time.monotonic() - start
    out, err = capsys.readouterr()
    lines = [json.loads(line) for line in out.splitlines()]
    assert code == 1 and len(lines) == 8, err
    assert "prompt_ids" in lines[0] and "prompt_ids" in lines[7]
    errors = {c: lines[i + 1] for i, c in enumerate(attacks)}
    assert all(e["line"] == i + 2 for i, e in enumerate(errors.values()))
    assert "ZeroDivisionError" in errors["divide"]["error"]
    assert "RecursionError" in errors["recurse"]["error"]
    assert "did not finish rendering this conversation in 1 s" in errors["loop"]["error"]
    assert "did not finish rendering this conversation in 1 s" in errors["silent"]["error"]
    assert "over the limit of 16,777,216" in errors["huge"]["error"]
    assert "ValueError" in errors["digits"]["error"]
    assert "Traceback" not in err and f"{path}:4:" in err
    assert took < 30  # two limits of 1 s, not a run without end
    assert len(out) < 10_000  # no 25 MB line


def test_a_build_leaves_out_the_sample_whose_template_never_ends(hostile_tokenizer, tmp_path, monkeypatch, capsys):
    from pipeline.core.golden import write_dataset
    from pipeline.core.tokenizer import load_tokenizer

    monkeypatch.setattr(render, "RENDER_SECONDS", 1.0)
    tok = load_tokenizer(str(hostile_tokenizer))
    samples = [{"id": f"s{i}", "messages": [{"role": "user", "content": c}], "output_ids": tok.encode("ok") + [tok.encode("<|im_end|>")[0]],
                "finish_reason": "stop"} for i, c in enumerate(["hello", "loop", "bye"])]
    data = write_dataset(tmp_path / "golden" / "X1_hostile", {"name": "X1_hostile", "profile": "qwen3", "tokenizer": str(hostile_tokenizer),
                                                              "source": "test"}, samples)
    code = main(["build", "--in", str(data), "--out", str(tmp_path / "out")])
    out, err = capsys.readouterr()
    rows = [json.loads(line) for line in (tmp_path / "out" / "train.jsonl").read_text().splitlines()]
    assert [r["id"] for r in rows] == ["s0", "s2"], out + err
    said = out + err  # the summary's stream is the build command's choice
    assert code == 1 and "Traceback" not in said
    assert "samples.jsonl:2 (id 's1'): field 'messages'" in said and "did not finish rendering this conversation in 1 s" in said


def test_the_time_limit_works_in_any_thread_and_never_leaks_out_of_its_block():
    caught: list[str] = []

    def spin(seconds: float) -> None:
        try:
            with time_limit(seconds):
                while True:
                    pass
        except TimeLimitExceeded:
            caught.append(threading.current_thread().name)

    threads = [threading.Thread(target=spin, args=(0.2,), name=f"t{i}") for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert sorted(caught) == ["t0", "t1", "t2"]
    # Blocks that end right at their deadline: a late exception is withdrawn, never raised after the block.
    escaped = 0
    for _ in range(200):
        try:
            try:
                with time_limit(0.0):
                    time.sleep(0.0005)
            except TimeLimitExceeded:
                pass
            for _ in range(2000):  # plenty of bytecodes in which a leaked exception would arrive
                pass
        except TimeLimitExceeded:
            escaped += 1
    assert escaped == 0


# -- 7. JSON integers longer than Python reads (4,300 digits) -----------------------------------
LONG = "9" * 5000


def test_long_integers_are_a_located_error_in_every_jsonl_reader(tmp_path):
    from pipeline.core.golden import GoldenError, read_samples
    from pipeline.stages.prompts import PromptError, read_prompts
    from pytest_tokfidelity.index import SampleIndex

    good = {"id": "a", "messages": [{"role": "user", "content": "hi"}], "output_ids": [1, 2], "finish_reason": "stop"}
    folder = tmp_path / "X1"
    folder.mkdir()
    (folder / "samples.jsonl").write_text(json.dumps(good) + "\n" + '{"id": "b", "output_ids": [1, ' + LONG + "]}\n"
                                          + json.dumps({**good, "id": "c"}) + "\n")
    samples = list(read_samples(folder))
    assert [getattr(s, "id", None) for s in samples] == ["a", None, "c"]
    assert isinstance(samples[1], GoldenError) and samples[1].line == 2
    assert "an integer of 5,000 digits (column 31)" in str(samples[1])
    index = SampleIndex(folder / "samples.jsonl")
    with open(index.path, "rb") as f:
        read = [index.read(i, f.fileno()) for i in range(len(index))]
    assert isinstance(read[1], GoldenError) and "5,000 digits" in str(read[1]) and read[2].id == "c"
    prompts = tmp_path / "prompts.jsonl"
    prompts.write_text(json.dumps({"id": "p1", "messages": good["messages"]}) + "\n"
                       + '{"id": "p2", "messages": [], "max_tokens": ' + LONG + "}\n")
    items = list(read_prompts(prompts))
    assert items[0].id == "p1" and isinstance(items[1], PromptError) and "prompts.jsonl:2" in str(items[1])
    assert "5,000 digits" in str(items[1])


def test_long_integers_in_a_manifest_name_its_line(tmp_path):
    from pipeline.core.golden import GoldenError, load_manifest

    (tmp_path / "manifest.json").write_text('{\n  "name": "X1",\n  "max_known_divergence_rate": ' + LONG + "\n}\n")
    with pytest.raises(GoldenError) as e:
        load_manifest(tmp_path)
    assert e.value.line == 3 and "5,000 digits (column 32)" in str(e.value)


def test_reconstruct_render_and_build_keep_the_lines_after_a_long_integer(tmp_path, capsys, monkeypatch):
    import io
    import sys

    response = {"choices": [{"message": {"role": "assistant", "content": "Hello"}, "finish_reason": "stop"}]}
    long_line = '{"choices": [], "usage": {"completion_tokens": ' + LONG + "}}"
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(f"{json.dumps(response)}\n{long_line}\n{json.dumps(response)}\n".encode())))
    assert main(["reconstruct", "--profile", "qwen3", "--tokenizer", "qwen3"]) == 1
    out, err = capsys.readouterr()
    lines = [json.loads(line) for line in out.splitlines()]
    assert "output_ids" in lines[0] and lines[1]["line"] == 2 and "5,000 digits" in lines[1]["error"] and lines[2] == lines[0]
    assert "Traceback" not in err

    conversations = tmp_path / "c.jsonl"
    conversations.write_text(_conversation("hi") + '\n{"messages": [], "x": ' + LONG + "}\n" + _conversation("hi") + "\n")
    assert main(["render", "--profile", "qwen3", "--tokenizer", "qwen3", str(conversations)]) == 1
    out, err = capsys.readouterr()
    lines = [json.loads(line) for line in out.splitlines()]
    assert "prompt_ids" in lines[0] and lines[1]["line"] == 2 and "5,000 digits" in lines[1]["error"] and lines[2] == lines[0]

    from pipeline.core.golden import write_dataset
    from pipeline.core.tokenizer import load_tokenizer

    tok = load_tokenizer("qwen3")
    sample = {"messages": [{"role": "user", "content": "hi"}], "output_ids": tok.encode("ok<|im_end|>"), "finish_reason": "stop"}
    data = write_dataset(tmp_path / "golden" / "X1_long", {"name": "X1_long", "profile": "qwen3", "tokenizer": "qwen3", "source": "t"},
                         [{"id": "s0", **sample}, {"id": "s2", **sample}])
    samples = (data / "samples.jsonl").read_text().splitlines()
    (data / "samples.jsonl").write_text(samples[0] + '\n{"id": "s1", "output_ids": [' + LONG + "]}\n" + samples[1] + "\n")
    code = main(["build", "--in", str(data), "--out", str(tmp_path / "out")])
    out, err = capsys.readouterr()
    rows = [json.loads(line) for line in (tmp_path / "out" / "train.jsonl").read_text().splitlines()]
    assert [r["id"] for r in rows] == ["s0", "s2"] and "Traceback" not in out + err
    assert "samples.jsonl:2" in out + err and "5,000 digits" in out + err, out + err


# -- 9. a server that trickles its answer: --timeout is a deadline for the whole request --------
def test_a_trickling_server_meets_the_deadline_of_the_whole_request(tmp_path, monkeypatch, capsys):
    from servers.http_server import FaultyServer
    from servers.kimi_chat import KimiChat
    from test_adversarial_pipeline import _gate_and_prompts, _gen_args

    golden, prompts = _gate_and_prompts(tmp_path, 2)
    monkeypatch.setenv("OPENROUTER_API_KEY", "sk-test")
    # each byte arrives well within httpx's read timeout; the body would take about 30 s
    kimi = KimiChat()
    kimi("/chat/completions", {"model": "m", "messages": [{"role": "user", "content": "warm up"}]})  # answers at once from now on
    with FaultyServer(kimi, hang_seconds=30, trickle_every=0.1) as server:
        server.faults.append("trickle")
        start = time.monotonic()
        code = main(_gen_args(golden, prompts, tmp_path / "out", server.url, "--concurrency", "1", "--timeout", "1.5",
                              "--max-retries", "0"))
        took = time.monotonic() - start
    out, err = capsys.readouterr()
    assert took < 10, f"waited {took:.0f} s with --timeout 1.5"
    assert code == 1 and "no complete answer within 1.5 s (--timeout)" in err, out + err
    records = [json.loads(line) for line in (tmp_path / "out" / "generations.jsonl").read_text().splitlines()]
    assert len(records) == 1  # the other prompt was answered


def test_a_response_with_a_long_integer_is_an_incomplete_body_not_a_traceback():
    from pipeline.stages.client import ApiError, ChatClient, RetryPolicy
    from servers.http_server import FaultyServer

    body = b'{"choices": [], "usage": {"completion_tokens": ' + LONG.encode() + b"}}"

    async def go(url):
        async with ChatClient(url, None, timeout=5, retry=RetryPolicy(max_retries=1, base_delay=0.01)) as c:
            return await c.chat({"model": "m", "messages": []})

    import asyncio

    with FaultyServer(lambda path, request: (200, body)) as server:
        with pytest.raises(ApiError) as e:
            asyncio.run(go(server.url))
    assert e.value.attempts == 2 and "5,000 digits" not in str(e.value) and "not complete JSON" in str(e.value)


# -- 12. a FIFO (or a device) where an input file should be: refused, never waited on -----------
def test_a_fifo_samples_file_fails_the_suite_instead_of_blocking_it(tmp_path):
    import os
    import subprocess
    import sys

    from pipeline.core.golden import write_dataset
    from test_plugin import manifest

    data = write_dataset(tmp_path / "golden" / "F1_fifo", manifest("F1_fifo"), [])
    (data / "samples.jsonl").unlink()
    os.mkfifo(data / "samples.jsonl")
    root = Path(__file__).resolve().parent.parent
    result = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:randomly", "-p", "no:cacheprovider",
                             f"--tokfidelity-golden-dir={tmp_path / 'golden'}", f"--tokfidelity-state-dir={tmp_path / 'state'}",
                             "--tokfidelity-dataset=F1"], cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(root)},
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 1, result.stdout[-3000:]
    assert "is a FIFO (named pipe), not a regular file" in result.stdout


def test_fifo_and_device_inputs_are_named_errors(tmp_path, capsys):
    import os

    from pipeline.core.golden import GoldenError, load_manifest
    from pipeline.stages.generate import load_finished
    from pipeline.stages.prompts import PromptError, read_prompts

    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    assert main(["render", "--profile", "qwen3", "--tokenizer", "qwen3", str(fifo)]) == 2
    assert "is a FIFO (named pipe), not a regular file" in capsys.readouterr().err
    assert main(["render", "--profile", "qwen3", "--tokenizer", "qwen3", "/dev/zero"]) == 2
    assert "is a character device, not a regular file" in capsys.readouterr().err
    with pytest.raises(PromptError, match="is a FIFO"):
        list(read_prompts(fifo))
    with pytest.raises(ValueError, match="is a FIFO"):
        load_finished(fifo)
    (tmp_path / "ds").mkdir()
    os.mkfifo(tmp_path / "ds" / "manifest.json")
    with pytest.raises(GoldenError, match="is a FIFO"):
        load_manifest(tmp_path / "ds")


# -- 14. a lone surrogate is reported, never encoded as U+FFFD in silence ----------------------
@pytest.mark.parametrize("model", ["kimi-k2.5", "qwen3"])  # tiktoken wrote U+FFFD; tokenizers raised a TypeError
def test_reconstruct_and_render_name_a_lone_surrogate(tmp_path, capsys, monkeypatch, model):
    import io
    import sys

    good = {"choices": [{"message": {"role": "assistant", "content": "Hello \ud83d\ude00"}, "finish_reason": "stop"}]}
    bad = '{"choices": [{"message": {"role": "assistant", "content": "x\\udc80y"}, "finish_reason": "stop"}]}'
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(f"{json.dumps(good)}\n{bad}\n{json.dumps(good)}\n".encode())))
    assert main(["reconstruct", "--profile", model, "--tokenizer", model]) == 1
    out, err = capsys.readouterr()
    lines = [json.loads(line) for line in out.splitlines()]
    assert "output_ids" in lines[0] and lines[2] == lines[0] and "Traceback" not in err
    assert lines[1] == {"line": 2, "error": "field 'choices[0].message.content': a lone surrogate U+DC80 at character 1 (half of a "
                        "UTF-16 pair, not a character: a tokenizer refuses it or writes U+FFFD); fix the text"}

    conversations = tmp_path / "c.jsonl"
    conversations.write_text(_conversation("hi") + '\n{"messages": [{"role": "user", "content": "a"}, {"role": "user", "content": "\\ud800"}]}\n'
                             + _conversation("hi") + "\n")
    assert main(["render", "--profile", model, "--tokenizer", model, str(conversations)]) == 1
    out, err = capsys.readouterr()
    lines = [json.loads(line) for line in out.splitlines()]
    assert "prompt_ids" in lines[0] and lines[2] == lines[0] and "Traceback" not in err
    assert lines[1]["line"] == 2 and lines[1]["error"].startswith("field 'messages[1].content': a lone surrogate U+D800 at character 0")
    assert f"{conversations}:2: field 'messages[1].content'" in err


# -- 14. a key written twice in golden data: refused, located ----------------------------------
def test_duplicate_keys_in_golden_samples_and_manifests_are_refused(tmp_path):
    from pipeline.core.golden import GoldenError, load_manifest, read_samples, write_dataset
    from pytest_tokfidelity.index import SampleIndex

    good = {"messages": [{"role": "user", "content": "hi"}], "output_ids": [1, 2], "finish_reason": "stop"}
    data = write_dataset(tmp_path / "X1", {"name": "X1", "profile": "qwen3", "tokenizer": "qwen3", "source": "t"},
                         [{"id": f"s{i}", **good} for i in range(4)])
    lines = (data / "samples.jsonl").read_text().splitlines()
    lines[1] = lines[1].replace('"output_ids":[1,2]', '"output_ids":[1,2],"output_ids":[3]')  # reviewers see [1, 2]
    lines[2] = lines[2].replace('"content":"hi"', '"content": "hi", "content": "bye"')  # nested, not compact
    tricky = {"id": "s3", **good, "messages": [{"role": "user", "content": 'say "a": 1, \\"b\\": 2 and "c" :'}]}
    lines[3] = json.dumps(tricky, indent=None)  # spaced, keys look-alikes in a string: no duplicate, so it reads
    (data / "samples.jsonl").write_text("\n".join(lines) + "\n")
    read = list(read_samples(data))
    index = SampleIndex(data / "samples.jsonl")
    with open(index.path, "rb") as f:
        indexed = [index.read(i, f.fileno()) for i in range(len(index))]
    for samples in (read, indexed):
        assert [s.id for s in samples if not isinstance(s, GoldenError)] == ["s0", "s3"]
        errors = [s for s in samples if isinstance(s, GoldenError)]
        assert [(e.line, e.field) for e in errors] == [(2, "output_ids"), (3, "messages[0].content")]
        assert "key 'output_ids' appears twice in one object" in str(errors[0]) and "remove one" in str(errors[0])

    (data / "manifest.json").write_text('{\n  "name": "X1",\n  "profile": "qwen3",\n  "tokenizer": "qwen3",\n'
                                        '  "source": "t",\n  "profile": "chatml"\n}\n')
    with pytest.raises(GoldenError) as e:
        load_manifest(data)
    assert (e.value.line, e.value.field) == (6, "profile") and "appears twice" in str(e.value)


def test_generate_names_the_prompt_line_with_a_long_integer_and_runs_the_others(tmp_path, monkeypatch, capsys):
    from servers.http_server import FaultyServer
    from servers.kimi_chat import KimiChat
    from test_adversarial_pipeline import _gate_and_prompts, _gen_args

    golden, prompts = _gate_and_prompts(tmp_path, 2)
    lines = prompts.read_text().splitlines()
    prompts.write_text(lines[0] + '\n{"id": "px", "messages": [], "max_tokens": ' + LONG + "}\n" + lines[1] + "\n")
    monkeypatch.setenv("OPENROUTER_API_KEY", "sk-test")
    with FaultyServer(KimiChat()) as server:
        code = main(_gen_args(golden, prompts, tmp_path / "out", server.url, "--concurrency", "1"))
    out, err = capsys.readouterr()
    assert f"{prompts}:2: not valid JSON: an integer of 5,000 digits" in out + err and "Traceback" not in out + err
    records = [json.loads(line) for line in (tmp_path / "out" / "generations.jsonl").read_text().splitlines()]
    assert sorted(r["id"] for r in records) == ["p0", "p1"] and code == 1
