"""Attacks on the gate, kept running in CI.

Each test plays a hostile or careless user against a real ``pytest --tokfidelity-dataset`` run or a
real gated stage: inputs edited while the suite runs (in the run, or by a process beside it), a
record edited by hand, a stage asked for another profile or tokenizer than the one verified, a lone
pytest killed with ``kill -9``, and a judging process killed mid-run. The pipeline-side attacks
(model-folder code, key echo, concurrent generate...) are in ``test_adversarial_pipeline.py``.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pipeline.cli import main
from pipeline.core import gate
from pipeline.core.golden import write_dataset
from servers.http_server import FaultyServer
from servers.kimi_chat import KimiChat
from test_plugin import KIMI, exact_samples, manifest, split_sample

ROOT = Path(__file__).resolve().parent.parent


def make(root: Path, name: str, samples: list[dict], **extra) -> Path:
    return write_dataset(root / "golden" / name, manifest(name, **extra), samples)


def pytest_cmd(root: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "pytest", "-p", "no:randomly", "-p", "no:cacheprovider",
            f"--tokfidelity-golden-dir={root / 'golden'}", f"--tokfidelity-state-dir={root / 'state'}", *args]


def env(**more) -> dict:
    return {**os.environ, "PYTHONPATH": str(ROOT), **more}


def hooks(root: Path, code: str) -> tuple[str, str]:
    """pytest options that load ``code`` as a plugin (a conftest would not apply to the suite's items)."""
    (root / "tf_attack_hooks.py").write_text(code)
    return ("-p", "tf_attack_hooks")


def attack_env(root: Path, **more) -> dict:
    return env(PYTHONPATH=f"{ROOT}{os.pathsep}{root}", **more)


def is_open(root: Path, name: str, **kw) -> gate.GateStatus:
    return gate.check_gate(name, golden_dir=root / "golden", state_dir=root / "state", **kw)


SLOW_HOOKS = """
import time
from pathlib import Path

def pytest_runtest_call(item):
    if type(item).__name__ == "SampleItem":
        Path("started").touch()  # the samples are indexed and being judged: time for the attacker
        time.sleep({delay})
"""


# -- 1. inputs edited by a process beside the run ------------------------------------------------
@pytest.mark.parametrize("target", ["samples.jsonl", "__snapshots__/fidelity.ambr", "tokenizer_config.json", "manifest.json"])
def test_background_edit_during_a_run_never_leaves_an_open_gate(tmp_path, target):
    tok = tmp_path / "tok"
    shutil.copytree(KIMI.source, tok)
    data = make(tmp_path, "A1_bg", exact_samples(12) + [split_sample()], tokenizer=str(tok), max_known_divergence_rate=0.5)
    subprocess.run(pytest_cmd(tmp_path, "--tokfidelity-dataset=A1", "--snapshot-update"), cwd=tmp_path, env=env(), capture_output=True)
    attack = hooks(tmp_path, SLOW_HOOKS.format(delay=0.15))
    run = subprocess.Popen(pytest_cmd(tmp_path, "--tokfidelity-dataset=A1", *attack), cwd=tmp_path, env=attack_env(tmp_path),
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + 60
    while not (tmp_path / "started").exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert (tmp_path / "started").exists(), "the run never started judging"
    time.sleep(0.3)  # mid-run: 13 samples of 0.15 s each
    path = tok / target if target.startswith("tokenizer") else data / target
    with open(path, "a") as f:
        f.write("\n" if target != "samples.jsonl" else json.dumps(exact_samples(13)[12]) + "\n")
    out, _ = run.communicate(timeout=120)
    status = is_open(tmp_path, "A1", tokenizer=str(tok))
    assert not status.open, out
    rec = gate.read_record(tmp_path / "state", "A1_bg")
    if rec is not None and rec.get("status") == "closed" and "changed" in rec.get("reason", ""):
        assert Path(target).name in rec["reason"]


def test_edit_made_and_undone_between_runs_is_judged_again(tmp_path):
    """Not an attack that fails: after an edit is reverted, a fresh green run opens the gate again."""
    data = make(tmp_path, "A2_redo", exact_samples(3))
    cmd = pytest_cmd(tmp_path, "--tokfidelity-dataset=A2")
    assert subprocess.run(cmd, cwd=tmp_path, env=env(), capture_output=True).returncode == 0
    original = (data / "samples.jsonl").read_bytes()
    (data / "samples.jsonl").write_bytes(original + b"\n\n")
    assert not is_open(tmp_path, "A2").open
    (data / "samples.jsonl").write_bytes(original)
    assert is_open(tmp_path, "A2").open


# -- 5. records edited by hand --------------------------------------------------------------------
@pytest.mark.parametrize("edit", [
    lambda r: r["counts"].update(new=7),
    lambda r: r["counts"].update(bad_input=3),
    lambda r: r["counts"].update(samples=40, exact=40),
    lambda r: r["counts"].update(exact=-1),
    lambda r: r.update(profile="kimi-k2"),
    lambda r: r.update(view="vllm"),
    lambda r: r.update(views=["vllm"]),
    lambda r: r.update(views=["sglang", "sglang"]),
    lambda r: r.update(views="sglang"),
    lambda r: r.update(tokenizer_fingerprint="0" * 64),
    lambda r: r.update(format=99),
    lambda r: r.update(golden_files={}),
    lambda r: r.update(code_files={"pipeline/core/gate.py": "0" * 64}),
    lambda r: r.update(status="closed"),
    lambda r: r.update(counts=[1, 2]),
], ids=["new", "bad_input", "samples", "negative", "profile", "view", "views", "views-twice", "views-string", "fingerprint", "format", "golden", "code", "status", "counts-list"])
def test_hand_edited_record_never_opens(tmp_path, edit):
    make(tmp_path, "A3_rec", exact_samples(3))
    assert subprocess.run(pytest_cmd(tmp_path, "--tokfidelity-dataset=A3"), cwd=tmp_path, env=env(), capture_output=True).returncode == 0
    assert is_open(tmp_path, "A3").open
    path = gate.record_path(tmp_path / "state", "A3_rec")
    rec = json.loads(path.read_text())
    edit(rec)
    path.write_text(json.dumps(rec))
    assert not is_open(tmp_path, "A3").open


# -- 2. a stage asked for another profile or tokenizer than the one verified ---------------------
@pytest.fixture(scope="module")
def kimi_chat():
    return KimiChat()


@pytest.mark.parametrize("option", [["--profile", "kimi-k2"], ["--profile", "chatml"], ["--tokenizer", "qwen3"], ["--tokenizer", "kimi-k2"]])
def test_generate_with_another_profile_or_tokenizer_sends_nothing(tmp_path, kimi_chat, capsys, option):
    from servers.gates import open_gate

    data = make(tmp_path, "A4_gen", exact_samples(1))
    open_gate(data, tmp_path / "state")
    prompts = tmp_path / "prompts.jsonl"
    prompts.write_text(json.dumps({"id": "p0", "messages": [{"role": "user", "content": "hi"}]}) + "\n")
    out = tmp_path / "out"
    with FaultyServer(kimi_chat) as server:
        code = main(["generate", "--dataset", "A4", "--golden-dir", str(tmp_path / "golden"), "--state-dir", str(tmp_path / "state"),
                     "--prompts", str(prompts), "--out", str(out), "--base-url", server.url, "--no-progress", *option])
    err = capsys.readouterr().err
    assert code == 3, err
    assert server.requests == [] and not out.exists()
    assert "refused, nothing was sent or written" in err and option[1] in err


def test_hidden_states_and_train_with_another_tokenizer_run_nothing(tmp_path, capsys):
    from servers.gates import open_gate

    data = make(tmp_path, "A5_gpu", exact_samples(1))
    open_gate(data, tmp_path / "state")
    marker = tmp_path / "ran"
    common = ["--dataset", "A5", "--golden-dir", str(tmp_path / "golden"), "--state-dir", str(tmp_path / "state"), "--tokenizer", "qwen3"]
    (tmp_path / "train.jsonl").write_text("")
    for stage in (["hidden-states", "--data", str(tmp_path / "train.jsonl"), "--out", str(tmp_path / "hs"), "--command", f"touch {marker}"],
                  ["train", "--data", str(tmp_path / "train.jsonl"), "--out", str(tmp_path / "run"), "--command", f"touch {marker}"]):
        assert main([*stage, *common]) == 3
    assert not marker.exists() and not (tmp_path / "hs").exists() and not (tmp_path / "run").exists()
    assert capsys.readouterr().err.count("refused") == 2


# -- 12. judging processes die with their parent; a dead judge does not fail the rest -------------
PIDS_HOOKS = """
import os, signal, time
from pathlib import Path

def _children():
    kids = []
    for task in Path(f"/proc/{os.getpid()}/task").iterdir():
        kids += [int(p) for p in (task / "children").read_text().split()]
    return kids

def pytest_runtest_call(item):
    if item.nodeid.endswith("samples.jsonl::s3"):
        kids = _children()
        Path(os.environ["TF_PIDS"]).write_text(" ".join(map(str, kids)))
        if os.environ["TF_MODE"] == "hang":
            time.sleep(300)
        elif os.environ["TF_MODE"] == "stop":  # every judge: the next answer pytest waits for never comes
            for kid in kids:
                os.kill(kid, signal.SIGSTOP)
        else:
            os.kill(kids[0], signal.SIGKILL)
            time.sleep(0.5)
"""


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.skipif(sys.platform != "linux", reason="judging processes are forked on Linux only")
def test_kill_9_of_a_lone_pytest_leaves_no_judge(tmp_path):
    make(tmp_path, "A6_kill", exact_samples(40))
    attack = hooks(tmp_path, PIDS_HOOKS)
    pids = tmp_path / "pids"
    run = subprocess.Popen(pytest_cmd(tmp_path, "--tokfidelity-dataset=A6", *attack), cwd=tmp_path,
                           env=attack_env(tmp_path, TF_PIDS=str(pids), TF_MODE="hang", TOKFIDELITY_JUDGES="2"),
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while not (pids.exists() and pids.read_text()) and time.monotonic() < deadline:
            time.sleep(0.1)
        judges = [int(p) for p in pids.read_text().split()]
        assert len(judges) == 2 and all(_alive(p) for p in judges)
    finally:
        run.send_signal(signal.SIGKILL)
        run.wait()
    deadline = time.monotonic() + 5
    while any(_alive(p) for p in judges) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(_alive(p) for p in judges), "judging processes outlived their pytest"


@pytest.mark.skipif(sys.platform != "linux", reason="judging processes are forked on Linux only")
def test_a_killed_judge_is_replaced_and_every_sample_is_still_judged(tmp_path):
    from pytest_tokfidelity.judges import AHEAD, WARM

    n = WARM + AHEAD + 100  # more than the samples judged while collecting, plus one window judged ahead
    make(tmp_path, "A7_judge", exact_samples(n))
    attack = hooks(tmp_path, PIDS_HOOKS)
    result = subprocess.run(pytest_cmd(tmp_path, "--tokfidelity-dataset=A7", *attack), cwd=tmp_path, capture_output=True, text=True,
                            env=attack_env(tmp_path, TF_PIDS=str(tmp_path / "pids"), TF_MODE="kill", TOKFIDELITY_JUDGES="2"), timeout=300)
    assert result.returncode == 0, result.stdout[-3000:]
    assert f"{n + 4} passed" in result.stdout
    assert "the remaining samples are judged on threads" in result.stdout
    assert is_open(tmp_path, "A7").open


# -- a stuck judge neither hangs the run nor lets the gate open ---------------------------------
def _stuck_run(tmp_path, name: str, n: int, hooks_code: str, *options: str, **more_env) -> tuple[subprocess.CompletedProcess, float]:
    make(tmp_path, name, exact_samples(n))
    attack = hooks(tmp_path, hooks_code)
    started = time.monotonic()
    result = subprocess.run(pytest_cmd(tmp_path, f"--tokfidelity-dataset={name.split('_')[0]}", *attack, *options), cwd=tmp_path,
                            capture_output=True, text=True, timeout=240,
                            env=attack_env(tmp_path, TF_PIDS=str(tmp_path / "pids"), TOKFIDELITY_JUDGES="2", **more_env))
    return result, time.monotonic() - started


def _outcomes(out: str) -> tuple[int, int]:
    import re

    last = out.strip().splitlines()[-1]
    found = dict((kind, int(k)) for k, kind in re.findall(r"(\d+) (passed|failed)", last))
    return found.get("passed", 0), found.get("failed", 0)


@pytest.mark.skipif(sys.platform != "linux", reason="judging processes are forked on Linux only")
def test_a_sigstopped_judge_is_replaced_and_the_run_fails_with_the_gate_closed(tmp_path):
    from pytest_tokfidelity.judges import AHEAD, WARM

    n = WARM + AHEAD + 100  # judging goes on well past the test that stops the judges
    result, took = _stuck_run(tmp_path, "A9_stop", n, PIDS_HOOKS, TF_MODE="stop")
    out = result.stdout
    judges = (tmp_path / "pids").read_text().split()
    assert len(judges) == 2
    assert result.returncode == 1, out[-3000:]
    assert took < 120, took  # found by the liveness check, within seconds: no 120 s deadline waited out
    passed, failed = _outcomes(out)
    assert failed >= 1 and passed + failed == n + 4, out[-2000:]
    assert any(f"judging process {pid} is stopped (state T, as after SIGSTOP)" in out for pid in judges), out[-3000:]
    assert "at most 120 s on one sample: --tokfidelity-sample-timeout" in out
    assert "the remaining samples are judged on threads" in out
    assert not is_open(tmp_path, "A9").open
    record = gate.read_record(tmp_path / "state", "A9_stop")
    assert record is not None and record["status"] == "closed" and f"{failed} test(s) failed" in record["reason"]


SLOW_SAMPLE_HOOKS = """
import time
from pipeline.core import fidelity

judge = fidelity.Judge._output  # each sample's output side, one at a time or in a chunk (Judge.output_side_chunk)

def never_ends_on_s7(self, sample, *args):  # a sample whose judging never ends (a judging process inherits this)
    if getattr(sample, "id", None) == "s7":
        time.sleep(600)
    return judge(self, sample, *args)

fidelity.Judge._output = never_ends_on_s7
"""


@pytest.mark.skipif(sys.platform != "linux", reason="judging processes are forked on Linux only")
def test_a_judge_past_the_sample_timeout_is_replaced_and_its_samples_fail(tmp_path):
    result, took = _stuck_run(tmp_path, "A10_slow", 40, SLOW_SAMPLE_HOOKS, "--tokfidelity-sample-timeout=3")
    out = result.stdout
    assert result.returncode == 1, out[-3000:]
    assert took < 60, took
    passed, failed = _outcomes(out)
    assert "FAILED" in out and "golden/A10_slow/samples.jsonl::s7" in out
    assert 1 <= failed <= 32 and passed + failed == 44, out[-2000:]  # what the stuck judge held: s7's chunk, at most
    assert "has been on one sample for" in out and "at most 3 s on one sample: --tokfidelity-sample-timeout" in out
    assert "(judging golden/A10_slow/samples.jsonl::s7)" in out  # the sample it was on, as a node id that runs it alone
    assert "(`pytest golden/A10_slow/samples.jsonl::s7` runs it alone)" in out
    assert not is_open(tmp_path, "A10").open


def test_the_sample_timeout_must_be_a_number_of_seconds(tmp_path):
    make(tmp_path, "A11_opt", exact_samples(1))
    result = subprocess.run(pytest_cmd(tmp_path, "--tokfidelity-dataset=A11", "--tokfidelity-sample-timeout=-1"), cwd=tmp_path,
                            env=env(), capture_output=True, text=True, timeout=120)
    assert result.returncode == 4 and "--tokfidelity-sample-timeout: expected seconds from 0" in result.stderr


# -- 16. an xdist worker that crashes mid-run ------------------------------------------------------
CRASH_HOOKS = """
import os

def pytest_runtest_call(item):
    if item.nodeid.endswith("samples.jsonl::s5") and os.environ.get("PYTEST_XDIST_WORKER"):
        os._exit(1)
"""


@pytest.mark.slow
def test_a_crashed_xdist_worker_keeps_the_gate_shut_and_the_wall_time_sane(tmp_path):
    make(tmp_path, "A8_crash", exact_samples(30))
    attack = hooks(tmp_path, CRASH_HOOKS)
    result = subprocess.run(pytest_cmd(tmp_path, "--tokfidelity-dataset=A8", "-n", "2", *attack), cwd=tmp_path,
                            env=attack_env(tmp_path), capture_output=True, text=True, timeout=300)
    out = result.stdout
    assert result.returncode != 0 and "crashed" in out, out[-3000:]
    seconds = float(out.split(" tokens in ", 1)[1].split(" s", 1)[0])
    assert 0 < seconds < 300, out[-2000:]
    rec = gate.read_record(tmp_path / "state", "A8_crash")
    assert rec is not None and rec["status"] == "closed", out[-2000:]
    assert not is_open(tmp_path, "A8").open
