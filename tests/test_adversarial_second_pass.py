"""Attacks on API views, prompt verdicts, shards, multi-turn builds and golden-from, kept running in CI.
Each test plays a careless or hostile user and states the promise it holds: the gate opens only for
what was judged, the data is what the model saw, and bad input gets an error naming where it is.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pipeline.cli import main
from pipeline.core import gate, shards
from pipeline.core.names import profile_views
from pipeline.core.decision import DATASET_CHECKS, Counts
from pipeline.core.golden import load_manifest
from pipeline.core.shards import Shard
from pipeline.core.tokenizer import load_tokenizer
from pytest_tokfidelity.index import SampleIndex

ROOT = Path(__file__).resolve().parent.parent


def copy_dataset(tmp_path: Path, name: str = "B3_magicoder", **manifest_changes) -> Path:
    """A copy of a shipped dataset in ``tmp_path/golden``, its manifest changed as given (None: removed)."""
    dataset = tmp_path / "golden" / name
    shutil.copytree(ROOT / "golden" / name, dataset)
    path = dataset / "manifest.json"
    manifest = json.loads(path.read_text())
    for key, value in manifest_changes.items():
        if value is None:
            manifest.pop(key, None)
        else:
            manifest[key] = value
    path.write_text(json.dumps(manifest, indent=2) + "\n")
    return dataset


# --------------------------------------------------------------------------------------------
# Shards: every shard must have judged the manifest's views
# --------------------------------------------------------------------------------------------
def write_view_shards(dataset: Path, state: Path, views_of: dict[int, list[str]], of: int = 2) -> None:
    """Green shard records of ``dataset``, shard I judged under ``views_of[I]`` (same test count in each)."""
    manifest = load_manifest(dataset)
    fingerprint = load_tokenizer(manifest.tokenizer).fingerprint
    index = SampleIndex(dataset / "samples.jsonl")
    sizes = {i: sum(Shard(i, of).holds(index.name(p)) for p in range(len(index))) for i in range(1, of + 1)}
    for i in range(1, of + 1):
        n = sizes[i] * len(views_of[i])
        shards.write_shard_record(
            dataset, Shard(i, of), state_dir=state, green=True, reason="complete and green",
            counts=Counts(samples=n, exact=n), expected=n, checks_passed=DATASET_CHECKS,
            tokenizer_spec=manifest.tokenizer, tokenizer_fingerprint=fingerprint, profile=manifest.profile,
            view=views_of[i], pytest_args=[f"--tokfidelity-shard={i}/{of}"],
        )


def test_a_shard_judged_under_other_views_keeps_the_merged_gate_closed(tmp_path):
    dataset = copy_dataset(tmp_path, api_view=None, api_views=["sglang", "vllm"])
    state = tmp_path / "state"
    write_view_shards(dataset, state, {1: ["sglang", "vllm"], 2: ["sglang", "sglang-legacy"]})
    merged = shards.merge_shards("B3", golden_dir=dataset.parent, state_dir=state)
    assert not merged.open
    assert "shard 2/2" in merged.message and "API views" in merged.message
    assert not gate.check_gate("B3", golden_dir=dataset.parent, state_dir=state).open


def test_shards_agreeing_on_views_the_manifest_does_not_list_are_refused(tmp_path):
    dataset = copy_dataset(tmp_path, api_view=None, api_views=["sglang", "vllm"])
    state = tmp_path / "state"
    write_view_shards(dataset, state, {1: ["sglang", "sglang-legacy"], 2: ["sglang", "sglang-legacy"]})
    merged = shards.merge_shards("B3", golden_dir=dataset.parent, state_dir=state)
    assert not merged.open and "the manifest lists sglang, vllm" in merged.message
    write_view_shards(dataset, state, {1: ["sglang", "vllm"], 2: ["sglang", "vllm"]})
    merged = shards.merge_shards("B3", golden_dir=dataset.parent, state_dir=state)
    assert merged.open, merged.message
    assert gate.check_gate("B3", golden_dir=dataset.parent, state_dir=state).open


# --------------------------------------------------------------------------------------------
# Reviewed divergences belong to the view they were reviewed under
# --------------------------------------------------------------------------------------------
def test_divergences_reviewed_under_sglang_do_not_pass_when_the_manifest_moves_to_vllm(pytester):
    from test_plugin import exact_samples, make_dataset, record, run, split_sample

    d = make_dataset(pytester.path, "V5_moved", [*exact_samples(2), split_sample()], max_known_divergence_rate=0.5)
    run(pytester, "--tokfidelity-dataset=V5", "--snapshot-update")
    run(pytester, "--tokfidelity-dataset=V5").assert_outcomes(passed=4 + 3)  # reviewed under sglang: known
    path = d / "manifest.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), "api_view": "vllm"}))
    result = run(pytester, "--tokfidelity-dataset=V5", "-v")
    result.assert_outcomes(passed=4 + 2, failed=1)
    result.stdout.fnmatch_lines(["*V5_moved/samples.jsonl::split FAILED*", "*No reviewed divergence is stored for this sample*"])
    assert record(pytester, "V5_moved")["status"] == "closed"
    run(pytester, "--tokfidelity-dataset=V5", "--snapshot-update")  # reviewed again, under vllm
    assert "# name: test_fidelity[V5_moved/split[vllm]]" in (d / "__snapshots__" / "fidelity.ambr").read_text()
    run(pytester, "--tokfidelity-dataset=V5").assert_outcomes(passed=4 + 3)
    assert record(pytester, "V5_moved")["status"] == "open"


# --------------------------------------------------------------------------------------------
# Chat templates are pinned by content: which file wins, not where it is
# --------------------------------------------------------------------------------------------
TOKENIZERS = Path(os.environ.get("TOKFIDELITY_TOKENIZERS") or ROOT.parent / "shared" / "tokenizers")


def own_tokenizer_dataset(tmp_path: Path, family: str, profile: str, tokenizer: str | None = None) -> tuple[Path, Path]:
    """(a one-sample dataset, its tokenizer folder): a copy of ``family``'s tokenizer in tmp_path/tokenizers."""
    from pipeline.core.golden import write_dataset

    tok_dir = tmp_path / "tokenizers" / family
    shutil.copytree(TOKENIZERS / family, tok_dir)
    tok = load_tokenizer(str(tok_dir))
    ids = tok.encode_ordinary("hi")  # the record is written here, not by a run: the ids are not judged
    manifest = {"name": "T1", "profile": profile, "tokenizer": tokenizer or str(tok_dir), "source": "tests/test_adversarial_second_pass.py"}
    samples = [{"id": "a", "output_ids": ids, "finish_reason": "stop"}]
    return write_dataset(tmp_path / "golden" / "T1_template", manifest, samples), tok_dir


def open_record(dataset: Path, state: Path, tok_dir: Path) -> Path:
    tok = load_tokenizer(str(tok_dir))
    return gate.write_open_record(dataset, state_dir=state, tokenizer_spec=str(tok_dir), tokenizer_fingerprint=tok.fingerprint,
                                  profile=load_manifest(dataset).profile, view="sglang", counts=Counts(samples=1, exact=1),
                                  tokenizer_location=str(tok_dir))


@pytest.mark.parametrize("family, profile", [("qwen3", "qwen3"), ("deepseek-v3", "deepseek-v3")])
def test_a_chat_template_added_beside_a_config_embedded_one_closes_the_gate(tmp_path, family, profile):
    dataset, tok_dir = own_tokenizer_dataset(tmp_path, family, profile)
    state = tmp_path / "state"
    open_record(dataset, state, tok_dir)
    assert gate.check_gate("T1", golden_dir=dataset.parent, state_dir=state).open
    (tok_dir / "chat_template.jinja").write_text("{% for m in messages %}{{ m.content }}{% endfor %}")  # now the one read
    status = gate.check_gate("T1", golden_dir=dataset.parent, state_dir=state)
    assert not status.open
    assert f"chat template {tok_dir / 'chat_template.jinja'} changed since the green run" in status.message


def test_byte_identical_tokenizer_files_at_another_path_keep_the_gate_open(tmp_path, monkeypatch):
    """The README's second CI machine: the same tokenizer files elsewhere, found through TOKFIDELITY_TOKENIZERS
    or named with --tokenizer, check the gate the first machine opened; other files there do not."""
    dataset, tok_dir = own_tokenizer_dataset(tmp_path, "kimi-k2.5", "kimi-k2.5", tokenizer="kimi-k2.5")
    state = tmp_path / "state"
    monkeypatch.setenv("TOKFIDELITY_TOKENIZERS", str(tok_dir.parent))
    open_record(dataset, state, tok_dir)
    moved = tmp_path / "machine2" / "tokenizers"
    moved.parent.mkdir()
    tok_dir.parent.rename(moved)  # gone from where the green run found it
    monkeypatch.setenv("TOKFIDELITY_TOKENIZERS", str(moved))
    status = gate.check_gate("T1", golden_dir=dataset.parent, state_dir=state)
    assert status.open, status.message
    status = gate.check_gate("T1", golden_dir=dataset.parent, state_dir=state, tokenizer=str(moved / "kimi-k2.5"))
    assert status.open, status.message
    jinja = moved / "kimi-k2.5" / "chat_template.jinja"
    jinja.write_text(jinja.read_text().replace("<|im_end|>", "<|im_end|> ", 1))
    status = gate.check_gate("T1", golden_dir=dataset.parent, state_dir=state)
    assert not status.open and f"chat template {jinja} changed since the green run" in status.message


# --------------------------------------------------------------------------------------------
# A gate opened with the prompt verdicts off lets no stage use prompt ids
# --------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def b1_built(tmp_path_factory):
    """B1 built before any gate opened: its records hold prompt ids from B1's chat template."""
    root = tmp_path_factory.mktemp("b1built")
    shutil.copytree(ROOT / "golden" / "B1_glaive", root / "golden" / "B1_glaive")
    assert main(["build", "--in", str(root / "golden" / "B1_glaive"), "--out", str(root / "built"), "--no-progress"]) in (0, 1)
    return root


def write_gate(dataset: Path, state: Path, **kw) -> Path:
    manifest = load_manifest(dataset)
    n = gate.count_samples(dataset / "samples.jsonl")
    return gate.write_open_record(dataset, state_dir=state, tokenizer_spec=manifest.tokenizer,
                                  tokenizer_fingerprint=load_tokenizer(manifest.tokenizer).fingerprint, profile=manifest.profile,
                                  view=manifest.api_view, counts=Counts(samples=n, exact=n), **kw)


def stage_args(stage: str, root: Path, data: Path, out: Path, marker: Path) -> list[str]:
    command = f"{sys.executable} -c \"import pathlib; pathlib.Path(r'{marker}').write_text('ran')\" {{data}}"
    return [stage, "--dataset", "B1", "--golden-dir", str(root / "golden"), "--state-dir", str(root / "state"),
            "--data", str(data), "--out", str(out), "--command", command]


@pytest.mark.parametrize("stage", ["train", "hidden-states"])
def test_a_prompts_off_gate_lets_no_stage_run_on_built_prompt_ids(b1_built, tmp_path, capfd, stage):
    root = b1_built
    marker = tmp_path / "ran"
    write_gate(root / "golden" / "B1_glaive", root / "state", prompts="off")
    code = main(stage_args(stage, root, root / "built", tmp_path / "out", marker))
    err = capfd.readouterr().err
    assert code == 3, err
    assert "opened by a run with --tokfidelity-prompts=off" in err and "pytest --tokfidelity-dataset=B1_glaive" in err
    assert not marker.exists() and not (tmp_path / "out").exists()
    write_gate(root / "golden" / "B1_glaive", root / "state")  # prompts verified: the same build runs
    assert main(stage_args(stage, root, root / "built", tmp_path / "out", marker)) == 0, capfd.readouterr().err
    assert marker.read_text() == "ran"


# --------------------------------------------------------------------------------------------
# Built prompts come from the template the gate verified; build output is taken only as written
# --------------------------------------------------------------------------------------------
def test_a_build_rendered_with_another_folders_template_is_refused(b1_built, tmp_path, capfd, monkeypatch):
    root = b1_built
    write_gate(root / "golden" / "B1_glaive", root / "state")  # opened with the real Kimi K2.5 files
    edited = tmp_path / "tokenizers" / "kimi-k2.5"
    shutil.copytree(TOKENIZERS / "kimi-k2.5", edited)
    with open(edited / "chat_template.jinja", "a") as f:
        f.write("{# edited #}")  # renders the same prompts: only the template's content differs
    monkeypatch.setenv("TOKFIDELITY_TOKENIZERS", str(edited.parent))
    assert main(["build", "--in", str(root / "golden" / "B1_glaive"), "--out", str(tmp_path / "built"), "--no-progress"]) in (0, 1)
    meta = json.loads((tmp_path / "built" / "export.json").read_text())
    assert meta["template_sha256"] and meta["render"]["chat_template_kwargs"] == {"thinking": True, "preserve_thinking": False}
    assert list(meta["template_files"]) == [str((edited / "chat_template.jinja").resolve())]
    monkeypatch.setenv("TOKFIDELITY_TOKENIZERS", str(TOKENIZERS))
    capfd.readouterr()
    marker = tmp_path / "ran"
    for stage in ("train", "hidden-states"):
        code = main(stage_args(stage, root, tmp_path / "built", tmp_path / "out", marker))
        err = capfd.readouterr().err
        assert code == 2, err
        assert "was built with a chat template" in err and "not the one the gate of B1_glaive verified" in err
        assert not marker.exists()
    assert main(stage_args("train", root, root / "built", tmp_path / "out", marker)) == 0, capfd.readouterr().err  # the verified one


@pytest.mark.parametrize("field, value", [
    ("input_kind", "golden"),  # no view check for a golden build
    ("views", {"rebuilt": {"sglang": 3}, "engine": {}}),  # the vllm record passed off as sglang
    ("template_sha256", "0" * 64),
])
def test_an_edited_export_json_field_is_refused(tmp_path, capfd, field, value):
    from test_served_views import TwoProviders, generate

    from servers.gates import open_gate
    from servers.engine_ids_chat import SMOLLM2
    from pipeline.core.golden import write_dataset

    golden = tmp_path / "golden"
    write_dataset(golden / "T9_smollm2", {"name": "T9_smollm2", "profile": "chatml", "tokenizer": SMOLLM2, "source": "test"},
                  [{"id": "g", "output_ids": [2], "finish_reason": "stop"}])
    open_gate(golden / "T9_smollm2", tmp_path / "state")  # judged sglang only
    generate(tmp_path, golden, TwoProviders(("none", "none")), ["plain [vllm]", "plain", "plain again"], "--view-for", "VllmHost=vllm")
    assert main(["build", "--in", str(tmp_path / "out"), "--out", str(tmp_path / "train"), "--no-progress"]) == 0
    meta_path = tmp_path / "train" / "export.json"
    meta = json.loads(meta_path.read_text())
    meta_path.write_text(json.dumps({**meta, field: value}, indent=2))
    marker = tmp_path / "ran"
    command = f"{sys.executable} -c \"import pathlib; pathlib.Path(r'{marker}').write_text('ran')\" {{data}}"
    capfd.readouterr()
    code = main(["train", "--dataset", "T9", "--golden-dir", str(golden), "--state-dir", str(tmp_path / "state"),
                 "--data", str(tmp_path / "train"), "--out", str(tmp_path / "train-out"), "--command", command])
    err = capfd.readouterr().err
    assert code == 2 and not marker.exists(), err
    assert f"{meta_path} is not the export.json `tokfidelity build` wrote" in err


def test_a_run_json_edited_between_runs_cannot_mix_two_views_of_one_provider(tmp_path, capsys):
    from test_served_views import TwoProviders, generate

    from servers.gates import open_gate
    from servers.engine_ids_chat import SMOLLM2
    from pipeline.core.golden import write_dataset

    golden = tmp_path / "golden"
    write_dataset(golden / "T9_smollm2", {"name": "T9_smollm2", "profile": "chatml", "tokenizer": SMOLLM2, "source": "test"},
                  [{"id": "g", "output_ids": [2], "finish_reason": "stop"}])
    open_gate(golden / "T9_smollm2", tmp_path / "state")
    generate(tmp_path, golden, TwoProviders(), ["plain [vllm]"], "--view-for", "VllmHost=vllm")
    run = tmp_path / "out" / "run.json"
    run.write_text(json.dumps({**json.loads(run.read_text()), "view_for": {"VllmHost": "sglang"}}))
    capsys.readouterr()
    code, sent = generate(tmp_path, golden, TwoProviders(), ["plain [vllm]", "more [vllm]"], "--view-for", "VllmHost=sglang")
    err = capsys.readouterr().err
    assert code == 2 and sent == [], err
    assert f"{tmp_path / 'out' / 'generations.jsonl'}:1: field 'view': 'vllm'" in err and "use another --out folder" in err
    rows = (tmp_path / "out" / "generations.jsonl").read_text().splitlines()
    assert [json.loads(r)["view"] for r in rows] == ["vllm"]


# --------------------------------------------------------------------------------------------
# A request's chat_template_kwargs travel from generate to build
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("prompt_tokens", [True, False], ids=["prompt-tokens", "no-prompt-tokens"])
def test_chat_template_kwargs_of_a_request_reach_the_built_prompt(tmp_path, prompt_tokens):
    """Where the server reports usage.prompt_tokens, build checks the prompt against it; where it does
    not, nothing would catch a prompt rendered without the request's template variables."""
    from pipeline.core.profiles import bind_profile
    from pipeline.core.prompt_renderers import render_prompt
    from pipeline.stages.generate import check_record
    from pipeline.stages.prompts import Prompt

    tok = load_tokenizer("qwen3")
    profile = bind_profile("qwen3", tok)
    messages = [{"role": "user", "content": "Say hello."}]
    kwargs = {"enable_thinking": False}
    prompt_ids = render_prompt(messages, None, profile, tok, chat_template_kwargs=kwargs)
    assert prompt_ids != render_prompt(messages, None, profile, tok)  # the variable changes the prompt
    output_ids = tok.encode_ordinary("Hello!") + [151645]
    body = {"choices": [{"message": {"role": "assistant", "content": "Hello!"}, "finish_reason": "stop"}],
            "usage": {"completion_tokens": len(output_ids), **({"prompt_tokens": len(prompt_ids)} if prompt_tokens else {})}}
    record = check_record(Prompt("q1", messages, params={"chat_template_kwargs": kwargs}), body, profile, tok)
    assert record["check"] == "ok", record
    assert record["chat_template_kwargs"] == kwargs
    gen = tmp_path / "gen"
    gen.mkdir()
    (gen / "run.json").write_text(json.dumps({"profile": "qwen3", "tokenizer": "qwen3"}))
    (gen / "generations.jsonl").write_text(json.dumps(record) + "\n")
    assert main(["build", "--in", str(gen), "--out", str(tmp_path / "built"), "--no-progress"]) == 0
    (row,) = map(json.loads, (tmp_path / "built" / "train.jsonl").read_text().splitlines())
    assert row["input_ids"] == prompt_ids + output_ids and row["prompt_len"] == len(prompt_ids)


# --------------------------------------------------------------------------------------------
# Ids in train.jsonl are unique, turn records included
# --------------------------------------------------------------------------------------------
def test_a_sample_named_like_another_samples_turn_record_gets_no_second_record_of_that_id(tmp_path, capsys):
    from pipeline.core.golden import write_dataset

    lines = [json.loads(line) for line in (ROOT / "golden" / "B1_glaive" / "samples.jsonl").read_text().splitlines() if line.strip()]
    sample = next(s for s in lines if any(m["role"] == "assistant" for m in s["messages"][1:]))
    turn = next(i for i, m in enumerate(sample["messages"]) if i and m["role"] == "assistant")
    twin = {**sample, "id": f"{sample['id']}@messages[{turn}]"}  # the id of sample's first turn record
    manifest = json.loads((ROOT / "golden" / "B1_glaive" / "manifest.json").read_text())
    dataset = write_dataset(tmp_path / "golden" / "B1_twin", {**manifest, "name": "B1_twin", "samples": 2}, [sample, twin])
    code = main(["build", "--in", str(dataset), "--out", str(tmp_path / "built"), "--turns", "all", "--no-progress"])
    err = capsys.readouterr().err
    ids = [json.loads(line)["id"] for line in (tmp_path / "built" / "train.jsonl").read_text().splitlines()]
    assert len(ids) == len(set(ids)) and twin["id"] in ids and sample["id"] in ids
    assert code == 1  # a sample left out
    assert f"field 'id': {twin['id']!r} is the id of an earlier record" in err
    left_out = [json.loads(line) for line in (tmp_path / "built" / "left_out.jsonl").read_text().splitlines()]
    assert [r["id"] for r in left_out] == [twin["id"]]


# --------------------------------------------------------------------------------------------
# Layouts and files the gate cannot work with get a located error, never a traceback
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("made", [True, False], ids=["state-dir-exists", "state-dir-not-made-yet"])
def test_a_dataset_folder_linking_to_the_state_dir_is_refused_saying_why(pytester, made):
    from test_plugin import exact_samples, make_dataset, run

    d = make_dataset(pytester.path, "L1_link", exact_samples(2))
    state = pytester.path / "state"
    if made:
        state.mkdir()
    (d / "records").symlink_to(state, target_is_directory=True)
    result = run(pytester, "--tokfidelity-dataset=L1")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*--tokfidelity-state-dir: the dataset folder *L1_link reaches the state dir {state} through "
                                 "*L1_link/records: its gate records would count as golden files*"])
    assert not (state / "gates" / "L1_link.json").exists()
    status = gate.check_gate("L1", golden_dir=pytester.path / "golden", state_dir=state)
    assert not status.open and "gate could never stay open" in status.message and "out of the dataset folder" in status.next_step
    (d / "records").unlink()  # the layout fixed: a run opens the gate, and it stays open
    run(pytester, "--tokfidelity-dataset=L1").assert_outcomes(passed=4 + 2)
    assert gate.check_gate("L1", golden_dir=pytester.path / "golden", state_dir=state).open


@pytest.fixture
def shared_tmp():
    """A folder another user may use (pytest's tmp_path is private to this one), removed after the test."""
    import tempfile

    folder = Path(tempfile.mkdtemp(prefix="tokfidelity-unreadable-"))
    folder.chmod(0o777)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def as_reader() -> list[str]:
    """The command prefix that runs a subprocess as a user file permissions stop: root reads any file, so
    as root it becomes nobody (util-linux's setpriv)."""
    if os.geteuid() != 0:
        return []
    assert shutil.which("setpriv"), "root without util-linux's setpriv: no user that file permissions stop"
    return ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]


def test_an_unreadable_file_in_a_dataset_folder_fails_test_manifest_naming_it_and_closes_the_gate(shared_tmp):
    from test_plugin import exact_samples, make_dataset

    d = make_dataset(shared_tmp, "U1_unread", exact_samples(2))
    notes = d / "notes.txt"
    notes.write_text("reviewer notes")
    for path in [shared_tmp / "golden", d, *d.rglob("*")]:
        path.chmod(0o777 if path.is_dir() else 0o644)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONDONTWRITEBYTECODE": "1", "HOME": str(shared_tmp)}

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([*as_reader(), sys.executable, *args], cwd=shared_tmp, capture_output=True, text=True, env=env,
                              timeout=600)

    pytest_args = ["-m", "pytest", "-q", "-p", "no:randomly", "-p", "no:cacheprovider", "--tokfidelity-dataset=U1",
                   f"--tokfidelity-state-dir={shared_tmp / 'state'}"]
    check = ["-m", "pipeline.cli", "gate", "check", "--dataset", "U1", "--golden-dir", str(shared_tmp / "golden"),
             "--state-dir", str(shared_tmp / "state")]
    assert run(*pytest_args).returncode == 0  # readable: the gate opens
    notes.chmod(0)
    result = run(*check)
    assert result.returncode == 1 and "golden file notes.txt cannot be read (Permission denied)" in result.stdout + result.stderr
    assert "writable" not in result.stdout + result.stderr
    result = run(*pytest_args)
    assert result.returncode == 1 and "INTERNALERROR" not in result.stdout + result.stderr
    assert f"{notes.relative_to(shared_tmp)}: cannot be read (Permission denied); make it readable" in result.stdout
    assert "FAILED golden/U1_unread/samples.jsonl::test_manifest" in result.stdout
    record = json.loads((shared_tmp / "state" / "gates" / "U1_unread.json").read_text())
    assert record["status"] == "closed" and "1 test(s) failed" in record["reason"]
    result = run(*check)
    assert result.returncode == 1 and "the last run" in result.stdout + result.stderr


DEEP = "[" * 100_000 + "]" * 100_000  # JSON nested past the parser's depth


def engine_record(**changes) -> dict:
    """A generate record with the engine's ids, as golden-from takes it (``None``: the field removed)."""
    record = {"id": "p0", "messages": [{"role": "user", "content": "hi"}], "ids_source": "engine", "check": "ok",
              "usage": {}, "output_ids": [19556, 2], "prompt_ids": [1, 2], "finish_reason": "stop", "view": "vllm",
              "response": {"choices": [{"message": {"role": "assistant", "content": "Hello"}, "finish_reason": "stop"}]}}
    record.update(changes)
    return {k: v for k, v in record.items() if v is not None}


def generate_folder(root: Path, *records: dict, run=None) -> Path:
    folder = root / "gen"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "run.json").write_text(run if isinstance(run, str) else json.dumps(run or {"profile": "chatml", "tokenizer": "SmolLM2"}))
    (folder / "generations.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    return folder


@pytest.mark.parametrize("changes, field, expected", [
    ({"view": ["vllm"]}, "view", f"one of the profile's views ({', '.join(profile_views('chatml'))})"),
    ({"view": 5}, "view", "one of the profile's views"),
    ({"view": "vllm-spaces"}, "view", "one of the profile's views"),
    ({"response": "Hello"}, "response", "the chat completion the server sent"),
    ({"response": {"choices": []}}, "response", "the chat completion the server sent"),
    ({"messages": None}, "messages", "the request's non-empty list of messages"),
    ({"output_ids": "19556"}, "output_ids", "a list of token ids"),
])
def test_golden_from_names_the_line_and_field_of_a_bad_record_and_writes_nothing(tmp_path, capsys, changes, field, expected):
    folder = generate_folder(tmp_path, engine_record(id="p0"), engine_record(id="p1", **changes))
    code = main(["golden-from", "--generations", str(folder), "--dataset", "G9", "--out", str(tmp_path / "golden")])
    err = capsys.readouterr().err
    assert code == 2, err
    assert f"{folder / 'generations.jsonl'}:2: field {field!r}: expected {expected}" in err and "Traceback" not in err
    assert not (tmp_path / "golden" / "G9").exists()


def test_golden_from_keeps_a_good_records_view_and_template_variables(tmp_path, capsys):
    folder = generate_folder(tmp_path, engine_record(chat_template_kwargs={"enable_thinking": False}))
    assert main(["golden-from", "--generations", str(folder), "--dataset", "G9", "--out", str(tmp_path / "golden")]) == 0
    manifest = json.loads((tmp_path / "golden" / "G9" / "manifest.json").read_text())
    (sample,) = map(json.loads, (tmp_path / "golden" / "G9" / "samples.jsonl").read_text().splitlines())
    assert manifest["api_view"] == "vllm" and sample["chat_template_kwargs"] == {"enable_thinking": False}


@pytest.mark.parametrize("run, message", [
    (DEEP, "run.json: not valid JSON"),
    ({"profile": "nope", "tokenizer": "SmolLM2"}, "run.json: field 'profile'"),
])
def test_golden_from_names_a_bad_run_json(tmp_path, capsys, run, message):
    folder = generate_folder(tmp_path, engine_record(), run=run)
    assert main(["golden-from", "--generations", str(folder), "--dataset", "G9", "--out", str(tmp_path / "golden")]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_a_deeply_nested_run_json_is_named_by_build_and_by_a_resumed_generate(tmp_path, capsys):
    from test_served_views import TwoProviders, generate

    from servers.gates import open_gate
    from servers.engine_ids_chat import SMOLLM2
    from pipeline.core.golden import write_dataset

    folder = generate_folder(tmp_path, engine_record(), run=DEEP)
    assert main(["build", "--in", str(folder), "--out", str(tmp_path / "built"), "--no-progress"]) == 2
    assert f"{folder / 'run.json'}: not valid JSON" in capsys.readouterr().err
    golden = tmp_path / "golden"
    write_dataset(golden / "T9_smollm2", {"name": "T9_smollm2", "profile": "chatml", "tokenizer": SMOLLM2, "source": "test"},
                  [{"id": "g", "output_ids": [2], "finish_reason": "stop"}])
    open_gate(golden / "T9_smollm2", tmp_path / "state")
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "run.json").write_text(DEEP)
    code, sent = generate(tmp_path, golden, TwoProviders(), ["plain"])
    err = capsys.readouterr().err
    assert code == 2 and sent == [], err
    assert f"{tmp_path / 'out' / 'run.json'} is not readable as a JSON object" in err


def test_a_pasted_test_id_selects_the_test_from_where_pytest_was_started(tmp_path):
    """The golden dir outside the rootdir, pytest started in a third folder: the command a failure prints
    selects that very test when pasted there (pytest resolves paths against that folder, not the rootdir)."""
    from test_plugin import exact_samples, make_dataset, split_sample

    rootdir = tmp_path / "a" / "b" / "root"
    rootdir.mkdir(parents=True)
    (rootdir / "pytest.ini").write_text("[pytest]\n")
    d = make_dataset(tmp_path / "elsewhere", "N20_paste", [*exact_samples(1), split_sample()])
    third = tmp_path / "third"
    third.mkdir()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}

    def run(*args: str) -> subprocess.CompletedProcess:
        cmd = [sys.executable, "-m", "pytest", "-c", str(rootdir / "pytest.ini"), "-p", "no:randomly", "-p", "no:cacheprovider",
               f"--tokfidelity-state-dir={tmp_path / 'state'}", *args]
        return subprocess.run(cmd, cwd=third, capture_output=True, text=True, env=env, timeout=600)

    first = run(f"--tokfidelity-golden-dir={d.parent}", "--tokfidelity-dataset=N20")
    assert first.returncode == 1 and "rootdir: " + str(rootdir) in first.stdout
    pasted = first.stdout.split("record it with `pytest ", 1)[1].split("`", 1)[0].split()
    path, _, name = pasted[0].partition("::")
    assert (third / path).resolve() == (d / "samples.jsonl").resolve() and name == "split"
    update = run(*pasted)
    assert update.returncode == 0 and "1 passed" in update.stdout, update.stdout[-2000:]
    assert "# name: test_fidelity[N20_paste/split]" in (d / "__snapshots__" / "fidelity.ambr").read_text()
