"""tokfidelity generate against a real chat-completions server on 127.0.0.1: gate, checks, faults, resume."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pipeline.cli import main
from pipeline.stages.generate import RECORDS_FILE, RUN_FILE, load_finished
from pipeline.core.golden import write_dataset
from servers.gates import open_gate
from servers.http_server import FaultyServer
from servers.kimi_chat import KimiChat

ROOT = Path(__file__).resolve().parent.parent
CLI = [sys.executable, "-m", "pipeline.cli"]


@pytest.fixture(scope="module")
def kimi_chat():
    return KimiChat()


@pytest.fixture
def golden(tmp_path):
    golden_dir = tmp_path / "golden"
    write_dataset(
        golden_dir / "T1_kimi",
        {"name": "T1_kimi", "profile": "kimi-k2.5", "tokenizer": "kimi-k2.5", "source": "test"},
        [{"id": "g0", "output_ids": [163607, 163586], "finish_reason": "stop"}],
    )
    return golden_dir


@pytest.fixture
def gate_open(golden, tmp_path):
    open_gate(golden / "T1_kimi", tmp_path / "state")


def write_prompts(path: Path, n: int, extra=lambda i: {}) -> Path:
    with open(path, "w") as f:
        for i in range(n):
            f.write(json.dumps({"id": f"p{i}", "messages": [{"role": "user", "content": f"question {i}"}], **extra(i)}) + "\n")
    return path


def gen_args(golden, prompts, out, url, *more):
    return ["generate", "--dataset", "T1", "--golden-dir", str(golden), "--prompts", str(prompts), "--out", str(out),
            "--base-url", url, "--state-dir", str(Path(out).parent / "state"), "--no-progress", "--retry-base-delay", "0.01", *more]


def records(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / RECORDS_FILE).read_text().splitlines()]


def test_closed_gate_refuses_with_no_request_and_no_file(tmp_path, golden, monkeypatch, capsys, kimi_chat):
    prompts = write_prompts(tmp_path / "prompts.jsonl", 3)
    out = tmp_path / "out"
    with FaultyServer(kimi_chat) as server:
        code = main(gen_args(golden, prompts, out, server.url))
    assert code == 3
    assert server.requests == []
    assert not out.exists()
    err = capsys.readouterr().err
    assert "closed" in err and "pytest --tokfidelity-dataset=T1_kimi" in err


def test_generate_checks_usage_and_totals(tmp_path, golden, gate_open, monkeypatch, capsys, kimi_chat):
    monkeypatch.setenv("OPENROUTER_API_KEY", "sk-or-never-written-42")
    tags = {3: " [bad-usage]", 4: " [no-usage]"}
    prompts = tmp_path / "prompts.jsonl"
    with open(prompts, "w") as f:
        for i in range(6):
            row = {"id": f"p{i}", "messages": [{"role": "user", "content": f"q{i}{tags.get(i, '')}"}], "max_tokens": 100 + i}
            if i == 5:
                row["tools"] = [{"type": "function", "function": {"name": "search", "parameters": {"type": "object"}}}]
            f.write(json.dumps(row) + "\n")
    out = tmp_path / "out"
    with FaultyServer(kimi_chat) as server:
        server.faults.extend(["429", "500", "reset"])
        code = main(gen_args(golden, prompts, out, server.url, "--concurrency", "2", "--provider-order", "Moonshot,Fireworks",
                             "--allow-fallbacks", "false", "--temperature", "0.6",
                             "--reasoning", '{"effort": "high"}', "--extra-body", '{"seed": 7}'))
    assert code == 1  # two flagged records
    rows = {r["id"]: r for r in records(out)}
    assert sorted(rows) == [f"p{i}" for i in range(6)]
    assert {k: r["check"] for k, r in rows.items()} == {
        "p0": "ok", "p1": "ok", "p2": "ok", "p3": "usage_mismatch", "p4": "usage_missing", "p5": "ok"}
    assert "+" in rows["p3"]["check_detail"] or "-1" in rows["p3"]["check_detail"]
    # the ids are the real Kimi ids of the answer: reasoning, </think>, content, (tool section), <|im_end|>
    tok = kimi_chat.tokenizer
    assert tok.decode(rows["p0"]["output_ids"]) == "The user said: q0. Answer briefly.</think>You said «q0» 🙂<|im_end|>"
    assert 163595 in rows["p5"]["output_ids"] and rows["p5"]["output_ids"][-1] == 163586
    bodies = [b for _, b in server.requests]
    assert all(b["provider"] == {"order": ["Moonshot", "Fireworks"], "allow_fallbacks": False} for b in bodies)
    assert {b["max_tokens"] for b in bodies} == {100, 101, 102, 103, 104, 105}
    assert all(b["temperature"] == 0.6 and b["reasoning"] == {"effort": "high"} and b["seed"] == 7 for b in bodies)
    assert all(b["model"] == "moonshotai/kimi-k2.5" for b in bodies)
    assert {b["messages"][0]["content"] for b in bodies if "tools" in b} == {"q5"}
    assert server.headers[0]["Authorization"] == "Bearer sk-or-never-written-42"
    assert len(server.requests) == 6 + 3
    summary = json.loads((out / "summary.json").read_text())
    assert summary["samples"] == 6 and summary["flagged"] == 2
    assert summary["checks"]["usage_mismatch"] == 1 and summary["checks"]["usage_missing"] == 1
    assert summary["completion_tokens"] == sum((r["usage"] or {}).get("completion_tokens", 0) for r in rows.values())
    assert abs(summary["cost"] - 0.005) < 1e-9
    for path in out.iterdir():
        assert "sk-or-never-written-42" not in path.read_text()
    err = capsys.readouterr().err
    assert "sk-or-never-written-42" not in err
    assert "usage_mismatch 1" in err and "2 records are flagged" in err

    # a second run asks for nothing and writes nothing
    size = (out / RECORDS_FILE).stat().st_size
    with FaultyServer(kimi_chat) as server:
        main(gen_args(golden, prompts, out, server.url))
    assert server.requests == [] and (out / RECORDS_FILE).stat().st_size == size


def test_failed_samples_are_not_written_and_retried_next_run(tmp_path, golden, gate_open, monkeypatch, kimi_chat):
    prompts = write_prompts(tmp_path / "prompts.jsonl", 3)
    out = tmp_path / "out"
    with FaultyServer(kimi_chat) as server:
        server.faults.extend(["500"] * 3)  # with concurrency 1 and 2 retries, p0 fails for good
        assert main(gen_args(golden, prompts, out, server.url, "--concurrency", "1", "--max-retries", "2")) == 1
    assert [r["id"] for r in records(out)] == ["p1", "p2"]
    with FaultyServer(kimi_chat) as server:
        assert main(gen_args(golden, prompts, out, server.url)) == 0
        assert len(server.requests) == 1
    assert sorted(r["id"] for r in records(out)) == ["p0", "p1", "p2"]


def test_torn_last_line_is_cut_and_redone(tmp_path, golden, gate_open, monkeypatch, kimi_chat):
    prompts = write_prompts(tmp_path / "prompts.jsonl", 3)
    out = tmp_path / "out"
    with FaultyServer(kimi_chat) as server:
        assert main(gen_args(golden, prompts, out, server.url)) == 0
    path = out / RECORDS_FILE
    lines = path.read_bytes().splitlines(keepends=True)
    torn_id = json.loads(lines[-1])["id"]
    path.write_bytes(b"".join(lines[:-1]) + lines[-1][:40])  # as if killed mid-write
    done, _, cut = load_finished(path)
    assert cut == 40 and torn_id not in done and path.read_bytes().endswith(b"\n")
    with FaultyServer(kimi_chat) as server:
        assert main(gen_args(golden, prompts, out, server.url)) == 0
        assert [b["messages"][0]["content"] for _, b in server.requests] == [f"question {torn_id[1:]}"]
    assert sorted(r["id"] for r in records(out)) == ["p0", "p1", "p2"]


@pytest.mark.parametrize("line", ['{"id": ["p0"], "check": "ok"}', '{"id": "p0", "check": "ok", "usage": [1]}'])
def test_hand_edited_record_is_named_not_a_traceback(tmp_path, line):
    path = tmp_path / RECORDS_FILE
    path.write_text('{"id": "ok", "check": "ok"}\n' + line + "\n")
    with pytest.raises(ValueError, match=f"{RECORDS_FILE}:2: not a generation record"):
        load_finished(path)


def test_lone_surrogate_in_a_prompt_does_not_stop_the_run(tmp_path, golden, gate_open, kimi_chat):
    prompts = write_prompts(tmp_path / "prompts.jsonl", 3, extra=lambda i: {"messages": [{"role": "user", "content": "bad \ud800"}]} if i == 1 else {})
    out = tmp_path / "out"
    with FaultyServer(kimi_chat) as server:
        assert main(gen_args(golden, prompts, out, server.url, "--concurrency", "1")) == 0
    by_id = {r["id"]: r for r in records(out)}
    assert sorted(by_id) == ["p0", "p1", "p2"] and by_id["p1"]["messages"][0]["content"] == "bad \ud800"
    assert json.loads((out / "summary.json").read_text())["samples"] == 3


def test_job_repr_never_shows_the_api_key(kimi_chat):
    from pipeline.stages.generate import GenerationJob

    secret = "sk-or-v1-" + "0123456789abcdef" * 4
    job = GenerationJob(out_dir=Path("out"), profile=kimi_chat.profile, tokenizer=kimi_chat.tokenizer, base_url="http://127.0.0.1:1",
                        api_key=secret, model="m", request_defaults={})
    assert secret[:12] not in repr(job) and secret[:12] not in str(job)


def test_other_settings_in_the_same_folder_are_refused(tmp_path, golden, gate_open, monkeypatch, capsys, kimi_chat):
    prompts = write_prompts(tmp_path / "prompts.jsonl", 1)
    out = tmp_path / "out"
    with FaultyServer(kimi_chat) as server:
        assert main(gen_args(golden, prompts, out, server.url)) == 0
        assert main(gen_args(golden, prompts, out, server.url, "--model", "other/model")) == 2
    assert "other settings" in capsys.readouterr().err


def test_unreadable_run_json_is_a_usage_error_naming_it(tmp_path, golden, gate_open, monkeypatch, capsys, kimi_chat):
    prompts = write_prompts(tmp_path / "prompts.jsonl", 1)
    out = tmp_path / "out"
    out.mkdir()
    (out / RUN_FILE).write_text('{"dataset": "T1_ki')  # torn or hand-edited
    with FaultyServer(kimi_chat) as server:
        assert main(gen_args(golden, prompts, out, server.url)) == 2
        assert server.requests == []
    assert f"{out / RUN_FILE} is not readable as a JSON object" in capsys.readouterr().err


@pytest.mark.parametrize("url", ["127.0.0.1:8000/v1", "http://[::1", "ftp://127.0.0.1/v1", "http://127.0.0.1:99999"])
def test_bad_base_url_is_a_usage_error_before_anything_is_written(tmp_path, golden, gate_open, capsys, url):
    prompts = write_prompts(tmp_path / "prompts.jsonl", 1)
    out = tmp_path / "out"
    assert main(gen_args(golden, prompts, out, url, "--max-retries", "0")) == 2
    assert f"--base-url: base URL {url!r}" in capsys.readouterr().err
    assert not out.exists()


def test_out_that_is_a_file_is_a_usage_error(tmp_path, golden, gate_open, monkeypatch, capsys, kimi_chat):
    prompts = write_prompts(tmp_path / "prompts.jsonl", 1)
    out = tmp_path / "out"
    out.write_text("not a folder")
    with FaultyServer(kimi_chat) as server:
        assert main(gen_args(golden, prompts, out, server.url)) == 2
        assert server.requests == []
    assert f"--out {out} is a file" in capsys.readouterr().err


def test_bad_prompt_line_is_named_and_skipped_the_rest_still_runs(tmp_path, golden, gate_open, monkeypatch, capsys, kimi_chat):
    prompts = tmp_path / "prompts.jsonl"
    prompts.write_text(
        '{"id": "a", "messages": [{"role": "user", "content": "x"}], "max_tokens": 64}\n'
        '{"id": "b", "messages": "hi"}\n'
    )
    with FaultyServer(kimi_chat) as server:
        assert main(gen_args(golden, prompts, tmp_path / "out", server.url)) == 1  # the bad line makes the run not clean
        assert [body["messages"][0]["content"] for _, body in server.requests] == ["x"]
        assert server.requests[0][1]["max_tokens"] == 64
    err = capsys.readouterr().err
    assert f"{prompts}:2: field 'messages'" in err and "1 prompt lines were skipped" in err
    assert [r["id"] for r in records(tmp_path / "out")] == ["a"]


def test_only_bad_prompt_lines_send_nothing(tmp_path, golden, gate_open, monkeypatch, capsys, kimi_chat):
    prompts = tmp_path / "prompts.jsonl"
    prompts.write_text('{"id": "b", "messages": "hi"}\n')
    with FaultyServer(kimi_chat) as server:
        assert main(gen_args(golden, prompts, tmp_path / "out", server.url)) == 2
        assert server.requests == []
    assert "no usable prompts" in capsys.readouterr().err


@pytest.mark.slow
def test_kill_9_mid_run_then_resume_loses_and_duplicates_nothing(tmp_path, golden, gate_open, kimi_chat):
    n = 100
    prompts = write_prompts(tmp_path / "prompts.jsonl", n)
    out = tmp_path / "out"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with FaultyServer(kimi_chat, delay=0.05) as server:
        args = CLI + gen_args(golden, prompts, out, server.url, "--concurrency", "4")
        proc = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        path = out / RECORDS_FILE
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if path.exists() and path.read_bytes().count(b"\n") >= 15:
                break
            assert proc.poll() is None, proc.stderr.read().decode()
            time.sleep(0.01)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        first = path.read_bytes().count(b"\n")
        assert 15 <= first < n, "the run must be killed in the middle"
        requested_before = len(server.requests)
        open_gate(golden / "T1_kimi", tmp_path / "state")  # fresh record: others may edit the tree meanwhile
        resumed = subprocess.run(args, env=env, capture_output=True, text=True, timeout=120)
        assert resumed.returncode == 0, resumed.stderr
    ids = [r["id"] for r in records(out)]
    assert sorted(ids) == sorted(f"p{i}" for i in range(n)), "every prompt exactly once"
    assert len(ids) == len(set(ids))
    assert all(r["check"] == "ok" for r in records(out))
    # the resume asked only for what was not already written
    # (a request the kill cut short can land in the log after requested_before was read: it has no body)
    resumed_contents = [b["messages"][0]["content"] for _, b in server.requests[requested_before:] if "messages" in b]
    done_first = set(ids[:first])
    assert not any(f"question {i}" in resumed_contents for i in range(n) if f"p{i}" in done_first)
    assert f"{first} already done" in resumed.stderr or "already done" in resumed.stderr


def test_gate_closes_when_golden_data_changes_after_the_green_run(tmp_path, golden, gate_open, capsys, kimi_chat):
    samples = golden / "T1_kimi" / "samples.jsonl"
    samples.write_text(samples.read_text().replace("163607", "163606"))
    prompts = write_prompts(tmp_path / "prompts.jsonl", 2)
    out = tmp_path / "out"
    with FaultyServer(kimi_chat) as server:
        assert main(gen_args(golden, prompts, out, server.url)) == 3
    assert server.requests == [] and not out.exists()
    assert "golden file samples.jsonl changed" in capsys.readouterr().err


def test_credentials_in_the_base_url_never_reach_a_file_or_message(tmp_path, golden, gate_open, monkeypatch, capsys, kimi_chat):
    prompts = write_prompts(tmp_path / "prompts.jsonl", 2)
    out = tmp_path / "out"
    with FaultyServer(kimi_chat) as server:
        url = server.url.replace("http://", "http://user:s3cr3t-pw@")
        server.faults.extend(["500"] * 40)  # every attempt fails: the error message names the URL
        code = main(gen_args(golden, prompts, out, url, "--max-retries", "1"))
    assert code == 1
    err = capsys.readouterr().err
    assert "failed" in err and "s3cr3t-pw" not in err
    for path in out.iterdir():
        assert b"s3cr3t-pw" not in path.read_bytes(), path
    assert json.loads((out / RUN_FILE).read_text())["base_url"] == server.url


def test_blank_api_key_is_no_key(tmp_path, golden, gate_open, monkeypatch, capsys):
    prompts = write_prompts(tmp_path / "prompts.jsonl", 1)
    args = gen_args(golden, prompts, tmp_path / "out", "unused")
    i = args.index("--base-url")
    del args[i : i + 2]  # the default: OpenRouter, which needs a key
    monkeypatch.setenv("OPENROUTER_API_KEY", "  \n")
    assert main(args) == 2
    assert "set OPENROUTER_API_KEY" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
