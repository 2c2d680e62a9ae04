"""Attacks on gates, stages and files, kept running in CI.

Each test plays a hostile or careless user, or a hostile machine: another build's export.json put
beside a train.jsonl, a shard with no samples, a read-only or full disk, a gate record nested
thousands deep, a restrictive or permissive umask, Ctrl-C in the middle of ``generate``.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from pipeline.cli import main
from pipeline.stages.export import SEAL_FIELD, export_seal
from servers.gates import open_gate

ROOT = Path(__file__).resolve().parent.parent


# --------------------------------------------------------------------------------------------
# 1. A gated stage runs only on the very files `tokfidelity build` wrote with the verified tokenizer
# --------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def b1_d1(tmp_path_factory):
    """B1's gate open; B1 and D1 (another model's tokenizer) built, each into its own folder."""
    root = tmp_path_factory.mktemp("b1d1")
    for name in ("B1_glaive", "D1_glaive"):
        shutil.copytree(ROOT / "golden" / name, root / "golden" / name)
        assert main(["build", "--in", str(root / "golden" / name), "--out", str(root / name), "--no-progress"]) in (0, 1)
        assert (root / name / "train.jsonl").stat().st_size > 0
    return root


def gated(root: Path, dataset: str = "B1") -> list[str]:
    open_gate(root / "golden" / f"{dataset}_glaive", root / "state")  # fresh: an edited code tree closes older records
    return ["--dataset", dataset, "--golden-dir", str(root / "golden"), "--state-dir", str(root / "state")]


def mixed(root: Path, tmp_path: Path) -> Path:
    """The issue's attack: B1's export.json (right tokenizer fingerprint) beside D1's train.jsonl."""
    data = tmp_path / "mixed"
    data.mkdir()
    shutil.copy(root / "D1_glaive" / "train.jsonl", data / "train.jsonl")
    for name in ("export.json", "left_out.jsonl"):
        shutil.copy(root / "B1_glaive" / name, data / name)
    return data


@pytest.mark.parametrize("stage", ["train", "hidden-states"])
def test_another_builds_export_json_beside_train_jsonl_is_refused(b1_d1, tmp_path, capsys, stage):
    data = mixed(b1_d1, tmp_path)
    marker = tmp_path / "ran"
    command = f"{sys.executable} -c \"import pathlib; pathlib.Path(r'{marker}').write_text('ran')\" {{data}}"
    code = main([stage, *gated(b1_d1), "--data", str(data), "--out", str(tmp_path / "out"), "--command", command])
    err = capsys.readouterr().err
    assert code == 2, err
    assert f"{data / 'train.jsonl'} is not the file this build wrote" in err
    assert "gate of B1_glaive open" not in err
    assert not marker.exists() and not (tmp_path / "out").exists()


def test_the_verified_build_runs_and_says_each_file_was_hashed_once(b1_d1, tmp_path, capfd, monkeypatch):
    from pipeline.stages import built_data

    hashed = []
    real = built_data.file_pin
    monkeypatch.setattr(built_data, "file_pin", lambda path: hashed.append(Path(path).name) or real(path))
    out = tmp_path / "run"
    command = f"{sys.executable} -c \"import sys, pathlib; pathlib.Path(sys.argv[2]).mkdir(); (pathlib.Path(sys.argv[2]) / 'n').write_text(str(len(open(sys.argv[1]).readlines())))\" {{data}} {{out}}"
    assert main(["train", *gated(b1_d1), "--data", str(b1_d1 / "B1_glaive"), "--out", str(out), "--command", command]) == 0
    err = capfd.readouterr().err
    rows = json.loads((b1_d1 / "B1_glaive" / "export.json").read_text())["files"]["train.jsonl"]["rows"]
    assert (out / "n").read_text() == str(rows) and rows > 0
    assert sorted(hashed) == ["left_out.jsonl", "train.jsonl"]  # each pinned file hashed once, nothing twice
    assert f"verified left_out.jsonl (" in err and f"train.jsonl ({rows} rows, sha256 " in err and "each file hashed once" in err


def test_build_pins_every_file_it_writes(b1_d1):
    from pipeline.stages.built_data import file_pin

    meta = json.loads((b1_d1 / "D1_glaive" / "export.json").read_text())
    assert sorted(meta["files"]) == ["left_out.jsonl", "train.jsonl"]
    for name, pin in meta["files"].items():
        assert pin == file_pin(b1_d1 / "D1_glaive" / name)
    assert meta["files"]["train.jsonl"]["rows"] == meta["samples"]


def copy_build(root: Path, tmp_path: Path) -> Path:
    data = tmp_path / "data"
    shutil.copytree(root / "B1_glaive", data)
    return data


@pytest.mark.parametrize("attack, message", [
    ("edit-one-id", "train.jsonl is not the file this build wrote"),
    ("drop-a-line", "train.jsonl is not the file this build wrote"),
    ("edit-left-out", "left_out.jsonl is not the file this build wrote"),
    ("no-pins", "field 'files' (the sha256 and rows of each file the build wrote) is missing"),
    ("pin-outside", "is not a file name of the build folder"),
    ("pin-missing-file", "extra.jsonl is missing or not a regular file"),
    ("data-is-left-out", "expected a `tokfidelity build` --out folder or the train.jsonl in it"),
])
def test_edited_or_unpinned_build_output_is_refused_naming_the_file(b1_d1, tmp_path, capsys, attack, message):
    data = copy_build(b1_d1, tmp_path)
    train, meta_path = data / "train.jsonl", data / "export.json"
    meta = json.loads(meta_path.read_text())
    lines = train.read_text().splitlines(keepends=True)
    target = data
    if attack == "edit-one-id":
        row = json.loads(lines[0])
        row["id"] = row["id"][:-1] + "X"
        train.write_text(json.dumps(row, separators=(",", ":")) + "\n" + "".join(lines[1:]))
    elif attack == "drop-a-line":
        train.write_text("".join(lines[1:]))
    elif attack == "edit-left-out":
        with open(data / "left_out.jsonl", "a") as f:
            f.write('{"where": "x", "id": "x", "reason": "added"}\n')
    elif attack == "no-pins":
        del meta["files"]
    elif attack == "pin-outside":
        meta["files"]["../train.jsonl"] = meta["files"]["train.jsonl"]
    elif attack == "pin-missing-file":
        meta["files"]["extra.jsonl"] = meta["files"]["train.jsonl"]
    elif attack == "data-is-left-out":
        target = data / "left_out.jsonl"
    if attack in ("no-pins", "pin-outside", "pin-missing-file"):  # sealed again, as a build that wrote these pins would
        meta[SEAL_FIELD] = export_seal(meta)
    meta_path.write_text(json.dumps(meta))
    marker = tmp_path / "ran"
    command = f"{sys.executable} -c \"import pathlib; pathlib.Path(r'{marker}').write_text('ran')\""
    assert main(["train", *gated(b1_d1), "--data", str(target), "--out", str(tmp_path / "out"), "--command", command]) == 2
    assert message in capsys.readouterr().err
    assert not marker.exists()


# --------------------------------------------------------------------------------------------
# 13. A record nested thousands deep reads as unreadable: the gate stays closed, the file is named
# --------------------------------------------------------------------------------------------
def small_dataset(root: Path, name: str = "A1_small", n: int = 3) -> Path:
    from pipeline.core.golden import write_dataset
    from test_plugin import exact_samples, manifest

    return write_dataset(root / "golden" / name, manifest(name), exact_samples(n))


DEEP = '{"status": "open", "format": 1, "counts": ' + "[" * 100_000 + "]" * 100_000 + "}"


def test_a_deeply_nested_gate_record_keeps_the_gate_closed_and_names_it(tmp_path, capsys):
    dataset = small_dataset(tmp_path)
    path = tmp_path / "state" / "gates" / f"{dataset.name}.json"
    path.parent.mkdir(parents=True)
    path.write_text(DEEP)
    common = ["--dataset", dataset.name, "--golden-dir", str(tmp_path / "golden"), "--state-dir", str(tmp_path / "state")]
    assert main(["gate", "check", *common]) == 1
    err = capsys.readouterr().err
    assert f"the record is unreadable ({path}: nested too deeply to be a gate record)" in err
    marker = tmp_path / "ran"
    (tmp_path / "train.jsonl").write_text("")
    assert main(["train", *common, "--data", str(tmp_path / "train.jsonl"), "--out", str(tmp_path / "run"), "--command", f"touch {marker}"]) == 3
    assert "nested too deeply" in capsys.readouterr().err and not marker.exists()
    assert main(["gate", "show", *common]) == 0  # shows what it could read: that the record is unreadable
    assert json.loads(capsys.readouterr().out)["status"] == "unreadable"


def test_a_deeply_nested_shard_record_is_refused_by_the_merge_naming_it(tmp_path, capsys):
    dataset = small_dataset(tmp_path)
    gates = tmp_path / "state" / "gates"
    gates.mkdir(parents=True)
    for i in (1, 2):
        (gates / f"{dataset.name}.shard-{i}-of-2.json").write_text(DEEP)
    assert main(["gate", "merge", "--dataset", dataset.name, "--golden-dir", str(tmp_path / "golden"), "--state-dir", str(tmp_path / "state")]) == 1
    err = capsys.readouterr().err
    for i in (1, 2):
        assert f"{gates / f'{dataset.name}.shard-{i}-of-2.json'}: unreadable (nested too deeply to be a shard record)" in err
    from pipeline.core.gate import read_record

    assert read_record(tmp_path / "state", dataset.name)["status"] == "closed"


# --------------------------------------------------------------------------------------------
# 5. A shard that holds no sample writes its record, so the merge of all N can open the gate
# --------------------------------------------------------------------------------------------
def pytest_run(root: Path, *args: str, preexec_fn=None) -> subprocess.CompletedProcess:
    """``pytest`` over ``root/golden`` with state dir ``root/state`` (a later --tokfidelity-state-dir wins)."""
    cmd = [sys.executable, "-m", "pytest", "-p", "no:randomly", "-p", "no:cacheprovider",
           f"--tokfidelity-golden-dir={root / 'golden'}", f"--tokfidelity-state-dir={root / 'state'}", *args]
    return subprocess.run(cmd, cwd=root, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)},
                          timeout=600, preexec_fn=preexec_fn)


def test_empty_shards_write_their_records_and_the_merge_opens_the_gate(tmp_path):
    from pipeline.core.shards import shard_number

    dataset = small_dataset(tmp_path, n=3)
    held = {shard_number(f"s{i}", 4) for i in range(3)}
    assert len(held) < 4  # 3 samples over 4 shards: at least one shard is empty
    for i in range(1, 5):
        result = pytest_run(tmp_path, f"--tokfidelity-dataset={dataset.name}", f"--tokfidelity-shard={i}/4")
        assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
        assert f"shard {i}/4 green" in result.stdout
        record = json.loads((tmp_path / "state" / "gates" / f"{dataset.name}.shard-{i}-of-4.json").read_text())
        assert record["status"] == "green" and record["expected"] == (i in held) * sum(shard_number(f"s{k}", 4) == i for k in range(3))
    argv = ["gate", "merge", "--dataset", dataset.name, "--golden-dir", str(tmp_path / "golden"), "--state-dir", str(tmp_path / "state")]
    assert main(argv) == 0
    from pipeline.core.gate import check_gate

    assert check_gate(dataset.name, golden_dir=tmp_path / "golden", state_dir=tmp_path / "state").open


def test_an_empty_shard_still_fails_on_a_failed_dataset_check(tmp_path):
    """Empty, but its whole-dataset checks still decide: a bad stop token fails every shard, the empty ones too."""
    from pipeline.core.golden import write_dataset
    from pipeline.core.shards import shard_number
    from test_plugin import CHAS, exact_samples, kimi_ids, manifest

    samples = exact_samples(2) + [{"id": "bad-stop", "output_ids": kimi_ids("a", "b", CHAS), "finish_reason": "stop"}]
    write_dataset(tmp_path / "golden" / "A2_stops", manifest("A2_stops"), samples)
    empty = next(i for i in range(1, 5) if i not in {shard_number(s["id"], 4) for s in samples})
    result = pytest_run(tmp_path, "--tokfidelity-dataset=A2_stops", f"--tokfidelity-shard={empty}/4")
    assert result.returncode == 1
    record = json.loads((tmp_path / "state" / "gates" / f"A2_stops.shard-{empty}-of-4.json").read_text())
    assert record["status"] == "failed" and record["expected"] == 0


# --------------------------------------------------------------------------------------------
# 14a. Files are written with the mode the umask gives any new file, not mkstemp's 0600
# --------------------------------------------------------------------------------------------
@pytest.fixture
def umask():
    old = os.umask(0o022)
    yield lambda mask: os.umask(mask)
    os.umask(old)


@pytest.mark.parametrize("mask, mode", [(0o022, 0o644), (0o002, 0o664), (0o077, 0o600), (0o000, 0o666)])
def test_records_results_and_build_output_honour_the_umask(tmp_path, umask, mask, mode):
    from pipeline.core import gate
    from pipeline.core.files import atomic_write
    from pipeline.stages.export import write_export

    umask(mask)
    written = [
        atomic_write(tmp_path / "summary.json", "{}"),
        gate.write_closed_record("A1", state_dir=tmp_path / "state", reason="test"),
        write_export(tmp_path / "build", [{"id": "x", "input_ids": [1], "loss_mask": [1]}], {"format": "t"}),
    ]
    written += [tmp_path / "build" / "export.json", tmp_path / "build" / "left_out.jsonl"]
    for path in written:
        assert path.stat().st_mode & 0o777 == mode, path
    assert not [p for p in tmp_path.rglob(".*.tmp")]  # no temporary file left behind


# --------------------------------------------------------------------------------------------
# 11. Read-only or full disk: a located error naming the file, never a traceback
# --------------------------------------------------------------------------------------------
def _mount_tmpfs(folder: Path, options: str) -> bool:
    """A tmpfs at ``folder`` where this user may mount one (root with CAP_SYS_ADMIN); False otherwise."""
    if os.geteuid() != 0 or not shutil.which("mount"):
        return False
    return subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(folder)], capture_output=True).returncode == 0


@pytest.fixture
def read_only(tmp_path):
    """``freeze(folder)`` makes a folder made by ``make()`` really read-only: a tmpfs remounted read-only
    where this user may mount (root: permissions do not stop it), else its write permission removed."""
    made: list[tuple[Path, bool]] = []

    def make(name: str = "ro") -> Path:
        folder = tmp_path / name
        folder.mkdir()
        made.append((folder, _mount_tmpfs(folder, "size=1m")))
        if os.geteuid() == 0 and not made[-1][1]:
            pytest.skip("root without the right to mount: no way to make a folder read-only for this user")
        return folder

    def freeze(folder: Path) -> Path:
        mounted = dict(made)[folder]
        if mounted:
            subprocess.run(["mount", "-o", "remount,ro", str(folder)], check=True)
        else:
            for sub in [folder, *[p for p in folder.rglob("*") if p.is_dir()]]:
                sub.chmod(0o555)
        return folder

    yield make, freeze
    for folder, mounted in made:
        if mounted:
            subprocess.run(["umount", str(folder)], check=True)
        else:
            for sub in [folder, *[p for p in folder.rglob("*") if p.is_dir()]]:
                sub.chmod(0o755)


def gen_setup(root: Path, n: int = 3) -> tuple[Path, Path]:
    """A gated dataset T1_kimi and ``n`` prompts."""
    golden = root / "golden"
    small_dataset(root, "T1_kimi", 1)
    open_gate(golden / "T1_kimi", root / "state")
    prompts = root / "prompts.jsonl"
    prompts.write_text("".join(json.dumps({"id": f"p{i}", "messages": [{"role": "user", "content": f"question {i}"}]}) + "\n"
                               for i in range(n)))
    return golden, prompts


def gen_args(root: Path, golden: Path, prompts: Path, out: Path, url: str, *more: str) -> list[str]:
    return ["generate", "--dataset", "T1", "--golden-dir", str(golden), "--state-dir", str(root / "state"), "--prompts", str(prompts),
            "--out", str(out), "--base-url", url, "--no-progress", "--retry-base-delay", "0.01", *more]


def command_into(stage: str, root: Path, out: Path, url: str = "http://127.0.0.1:9") -> list[str]:
    if stage == "build":  # a real golden dataset: records with prompts, so train.jsonl has lines to write
        shutil.copytree(ROOT / "golden" / "B1_glaive", root / "golden" / "B1_glaive")
        return ["build", "--in", str(root / "golden" / "B1_glaive"), "--out", str(out), "--no-progress"]
    if stage == "generate":
        golden, prompts = gen_setup(root)
        return gen_args(root, golden, prompts, out, url, "--max-retries", "0")
    generations = root / "gen"
    generations.mkdir()
    (generations / "run.json").write_text(json.dumps({"profile": "kimi-k2.5", "tokenizer": "kimi-k2.5"}))
    (generations / "generations.jsonl").write_text("")
    return ["golden-from", "--generations", str(generations), "--dataset", "X1_from", "--out", str(out)]


@pytest.mark.parametrize("stage", ["build", "generate", "golden-from"])
def test_an_out_folder_on_a_read_only_disk_is_named(tmp_path, read_only, capsys, stage):
    make, freeze = read_only
    out = freeze(make()) / "out"
    code = main(command_into(stage, tmp_path, out))
    err = capsys.readouterr().err
    assert code == 1, err
    assert f"{out}" in err and ("Read-only file system [EROFS]" in err or "Permission denied [EACCES]" in err), err
    assert "make it writable, or give another folder" in err


@pytest.mark.parametrize("stage", ["build", "generate", "golden-from"])
def test_an_out_folder_under_a_file_is_named(tmp_path, capsys, stage):
    (tmp_path / "afile").write_text("x")
    out = tmp_path / "afile" / "out"
    code = main(command_into(stage, tmp_path, out))
    err = capsys.readouterr().err
    assert code == 1, err
    assert f"{out}" in err and "Not a directory [ENOTDIR]" in err and "a part of that path is a file" in err, err


def limited(size: int):
    """For a subprocess: files may not grow past ``size`` bytes (writes then fail with EFBIG, as on a full disk)."""
    def apply() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # else the kernel kills the writer instead of failing the write
        resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))
    return apply


def cli_run(args: list[str], size: int, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pipeline.cli", *args], cwd=cwd, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "PYTHONPATH": str(ROOT), "PYTHONDONTWRITEBYTECODE": "1"}, preexec_fn=limited(size))


def test_build_on_a_full_disk_names_the_file(tmp_path):
    out = tmp_path / "out"
    result = cli_run(command_into("build", tmp_path, out), 100, tmp_path)  # small files (a temp-dir probe) fit
    assert result.returncode == 1, result.stderr
    assert f"{out / 'train.jsonl'}: File too large [EFBIG]" in result.stderr and "free space" in result.stderr
    assert "Traceback" not in result.stderr
    assert not (out / "train.jsonl").exists() and not [p for p in out.iterdir() if p.name.endswith(".tmp")]


@pytest.mark.parametrize("disk", ["read-only", "full"])
def test_gate_merge_into_an_unwritable_state_dir_names_the_record(tmp_path, read_only, disk):
    dataset = small_dataset(tmp_path)
    make, freeze = read_only
    state = make("state") if disk == "read-only" else tmp_path / "state"
    (state / "gates").mkdir(parents=True)
    (state / "gates" / f"{dataset.name}.shard-1-of-1.json").write_text("{}")
    if disk == "read-only":
        freeze(state)
    args = ["gate", "merge", "--dataset", dataset.name, "--golden-dir", str(tmp_path / "golden"), "--state-dir", str(state)]
    result = cli_run(args, 100 if disk == "full" else resource.RLIM_INFINITY, tmp_path)
    assert result.returncode == 1, result.stderr
    assert f"the gate of {dataset.name} is unchanged: its record cannot be written: {state / 'gates' / dataset.name}.json: " in result.stderr
    assert "Traceback" not in result.stderr


def test_a_read_only_state_dir_is_a_usage_error_before_the_run(tmp_path, read_only):
    dataset = small_dataset(tmp_path)
    make, freeze = read_only
    folder = freeze(make())
    result = pytest_run(tmp_path, f"--tokfidelity-dataset={dataset.name}", f"--tokfidelity-state-dir={folder / 'state'}")
    assert result.returncode == 4, result.stdout[-2000:] + result.stderr[-2000:]
    assert f"--tokfidelity-state-dir: {folder} is " in result.stderr and "gate records need a writable folder there" in result.stderr
    assert "Traceback" not in result.stdout + result.stderr


def test_a_full_state_dir_fails_the_run_naming_the_record(tmp_path):
    dataset = small_dataset(tmp_path)
    result = pytest_run(tmp_path, f"--tokfidelity-dataset={dataset.name}", preexec_fn=limited(100))
    out = result.stdout + result.stderr
    assert result.returncode == 1, out[-3000:]
    said = " ".join(out.split())  # the summary wraps long lines
    assert f"gate record NOT written: {tmp_path / 'state' / 'gates' / dataset.name}.json: File too large [EFBIG]" in said
    assert said.count("NOT written") == 2 and said.count("File too large") == 1  # said once, and the gate line points to it
    assert "gate: NOT written (the FAILED line above says why)" in said
    assert "INTERNALERROR" not in out and "Traceback" not in out
    assert not (tmp_path / "state" / "gates" / f"{dataset.name}.json").exists()


@pytest.mark.parametrize("disk", ["read-only", "in-the-way"])
def test_a_report_that_cannot_be_written_fails_the_run(tmp_path, read_only, disk):
    dataset = small_dataset(tmp_path)
    make, freeze = read_only
    report = freeze(make()) / "report" if disk == "read-only" else tmp_path / "report"
    if disk == "in-the-way":
        (report / "report.html").mkdir(parents=True)  # found only when the report is written, at the end
    result = pytest_run(tmp_path, f"--tokfidelity-dataset={dataset.name}", f"--tokfidelity-report={report}")
    out = result.stdout + result.stderr
    assert result.returncode == 1, out[-3000:]
    assert f"--tokfidelity-report: cannot write to {report}" in out
    assert "INTERNALERROR" not in out and "Traceback" not in out


def test_a_disk_full_mid_generate_keeps_every_line_whole_and_the_resume_exact(tmp_path, monkeypatch, capsys):
    """ENOSPC on the third record, after part of its line went out: the part is cut, the run stops saying
    why, and the next run asks only for the samples not written."""
    import errno

    from servers.http_server import FaultyServer
    from servers.kimi_chat import KimiChat

    golden, prompts = gen_setup(tmp_path, 6)
    out = tmp_path / "out"
    records = out / "generations.jsonl"
    real_write, calls = os.write, []

    def full_disk(fd: int, data) -> int:
        if not os.readlink(f"/proc/self/fd/{fd}").endswith("generations.jsonl"):
            return real_write(fd, data)
        calls.append(len(data))
        if len(calls) < 3:
            return real_write(fd, data)
        if len(calls) == 3:
            return real_write(fd, bytes(data[: len(data) // 2]))  # half the line fits
        raise OSError(errno.ENOSPC, "No space left on device")

    with FaultyServer(KimiChat()) as server:
        monkeypatch.setattr(os, "write", full_disk)
        code = main(gen_args(tmp_path, golden, prompts, out, server.url, "--concurrency", "1"))
        monkeypatch.setattr(os, "write", real_write)
        err = capsys.readouterr().err
        assert code == 1, err
        assert f"cannot write {records}: No space left on device [ENOSPC]" in err and "free space" in err
        lines = records.read_bytes().split(b"\n")
        assert lines[-1] == b"" and len(lines) == 3 and all(json.loads(line) for line in lines[:-1])  # 2 whole lines, no torn tail
        assert json.loads((out / "summary.json").read_text())["last_run"]["finished"] == 2
        asked = len(server.requests)
        assert main(gen_args(tmp_path, golden, prompts, out, server.url, "--concurrency", "1")) == 0
        assert "4 generated, 2 already done" in capsys.readouterr().err
        assert len(server.requests) == asked + 4  # only the samples not written were asked again
    ids = [json.loads(line)["id"] for line in records.read_text().splitlines()]
    assert sorted(ids) == [f"p{i}" for i in range(6)]


# --------------------------------------------------------------------------------------------
# 14b. Ctrl-C in generate: what was done is said, summary.json written, exit 130, the resume exact
# --------------------------------------------------------------------------------------------
def _interruptible() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


def test_sigint_to_generate_says_what_was_done_and_writes_the_summary(tmp_path):
    import time

    from servers.http_server import FaultyServer
    from servers.kimi_chat import KimiChat

    golden, prompts = gen_setup(tmp_path, 12)
    out = tmp_path / "out"
    records = out / "generations.jsonl"
    cmd = [sys.executable, "-m", "pipeline.cli", *gen_args(tmp_path, golden, prompts, out, "URL", "--concurrency", "1")]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    # The third request is held until the signal is sent, so the run is caught mid-request however loaded
    # the machine is (a fixed delay let a starved test see the records only after the run had ended).
    with FaultyServer(KimiChat(), hold_after=2) as server:
        cmd[cmd.index("URL")] = server.url
        # Ctrl-C reaches the run as from a shell: SIGINT handled by default and not blocked, whatever this
        # process inherited: in two full -n 2 runs started as background jobs (which ignore SIGINT) the child
        # did not react to it (it ran to the end, or hung on the held request); run alone it always did.
        run = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               preexec_fn=_interruptible)
        deadline = time.monotonic() + 120
        while not (records.exists() and records.read_bytes().count(b"\n") >= 2):
            assert run.poll() is None and time.monotonic() < deadline, run.communicate()[1]
            time.sleep(0.05)
        while len(server.requests) < 3:  # the run is waiting for the held third answer
            assert run.poll() is None and time.monotonic() < deadline, run.communicate()[1]
            time.sleep(0.05)
        run.send_signal(signal.SIGINT)
        try:
            _, err = run.communicate(timeout=60)
        finally:
            server.released.set()
        assert run.returncode == 130, err
        done = records.read_bytes().count(b"\n")
        assert done == 2
        assert "interrupted (Ctrl-C)" in err and f"{done} generated, 0 already done" in err and "Traceback" not in err
        summary = json.loads((out / "summary.json").read_text())
        assert summary["last_run"]["finished"] == done and summary["samples"] == done
        again = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
        assert again.returncode == 0, again.stderr
        assert f"{12 - done} generated, {done} already done" in again.stderr
    ids = [json.loads(line)["id"] for line in records.read_text().splitlines()]
    assert sorted(ids) == sorted(f"p{i}" for i in range(12))
