"""Gate records and ``tokfidelity gate check``: open only for today's golden files, tokenizer and code."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipeline.core import fingerprints, gate
from pipeline.cli import main
from pipeline.core.golden import write_dataset
from pipeline.core.tokenizer import load_tokenizer

KIMI = load_tokenizer("kimi-k2.5")


@pytest.fixture
def dataset(tmp_path) -> Path:
    samples = [{"id": "a", "output_ids": KIMI.encode_ordinary("hi") + [163607, 163586], "finish_reason": "stop"}]
    manifest = {"name": "G1", "profile": "kimi-k2.5", "tokenizer": "kimi-k2.5", "source": "tests/test_gate.py"}
    return write_dataset(tmp_path / "golden" / "G1_demo", manifest, samples)


def open_record(dataset: Path, state: Path, **overrides) -> Path:
    args = dict(
        state_dir=state, tokenizer_spec="kimi-k2.5", tokenizer_fingerprint=KIMI.fingerprint, profile="kimi-k2.5",
        view="sglang", counts={"samples": 1, "exact": 1}, pytest_args=["--tokfidelity-dataset=G1"],
    )
    return gate.write_open_record(dataset, **{**args, **overrides})


def check(dataset: Path, state: Path, **kw) -> gate.GateStatus:
    return gate.check_gate("G1", golden_dir=dataset.parent, state_dir=state, **kw)


def test_no_record_is_closed_and_names_the_command(dataset, tmp_path):
    status = check(dataset, tmp_path / "state")
    assert not status.open and not status
    assert status.dataset == "G1_demo"
    assert "no verification run is recorded" in status.message
    assert status.open_command == (
        f"pytest --tokfidelity-dataset=G1_demo --tokfidelity-golden-dir={dataset.parent} "
        f"--tokfidelity-state-dir={tmp_path / 'state'}"
    )


def test_matching_record_opens(dataset, tmp_path):
    open_record(dataset, tmp_path / "state")
    status = check(dataset, tmp_path / "state")
    assert status.open, status.message
    assert "matches today's golden files, tokenizer and code" in status.message


def test_state_dir_defaults_to_the_environment(dataset, tmp_path, monkeypatch):
    monkeypatch.setenv("TOKFIDELITY_STATE_DIR", str(tmp_path / "env-state"))
    open_record(dataset, None)
    assert (tmp_path / "env-state" / "gates" / "G1_demo.json").is_file()
    assert gate.check_gate("G1", golden_dir=dataset.parent).open


@pytest.mark.parametrize("file", ["samples.jsonl", "manifest.json"])
def test_edited_golden_file_closes(dataset, tmp_path, file):
    open_record(dataset, tmp_path / "state")
    path = dataset / file
    path.write_text(path.read_text().replace('"a"', '"b"').replace('"G1"', '"G1x"'))
    status = check(dataset, tmp_path / "state")
    assert not status.open
    assert f"golden file {file} changed" in status.message


def test_added_snapshot_file_closes(dataset, tmp_path):
    open_record(dataset, tmp_path / "state")
    (dataset / "__snapshots__").mkdir()
    (dataset / "__snapshots__" / "fidelity.ambr").write_text("# serializer version: 1\n")
    assert "golden file __snapshots__/fidelity.ambr was added" in check(dataset, tmp_path / "state").message


def test_other_tokenizer_closes(dataset, tmp_path):
    open_record(dataset, tmp_path / "state")
    status = check(dataset, tmp_path / "state", tokenizer="qwen3")
    assert not status.open
    assert "tokenizer 'qwen3' has fingerprint" in status.message
    assert "--tokfidelity-tokenizer=qwen3" in status.open_command


def test_changed_code_closes(dataset, tmp_path):
    path = open_record(dataset, tmp_path / "state")
    record = json.loads(path.read_text())
    record["code_files"]["pipeline/core/reconstruct.py"] = "0" * 64  # as if the code had changed since
    record["libraries"]["tiktoken"] = "0.0.1"
    path.write_text(json.dumps(record))
    status = check(dataset, tmp_path / "state")
    assert not status.open
    assert "source pipeline/core/reconstruct.py changed" in status.message
    assert "library tiktoken changed" in status.message


@pytest.mark.parametrize("field", ["golden_files", "code_files", "libraries", "counts"])
def test_hand_damaged_record_is_closed_not_a_crash(dataset, tmp_path, field):
    path = open_record(dataset, tmp_path / "state")
    record = json.loads(path.read_text())
    record[field] = ["not", "an", "object"]
    path.write_text(json.dumps(record))
    status = check(dataset, tmp_path / "state")
    assert not status.open
    assert f"is damaged (field {field!r} is not an object)" in status.message


def test_closed_record_says_why(dataset, tmp_path):
    gate.write_closed_record("G1_demo", state_dir=tmp_path / "state", reason="3 test(s) failed")
    status = check(dataset, tmp_path / "state")
    assert not status.open
    assert "failed: 3 test(s) failed" in status.message


def test_closed_record_says_to_rerun_with_the_runs_own_options(dataset, tmp_path):
    args = ["golden/G1_demo/samples.jsonl::a", "--tokfidelity-dataset=G1", "--tokfidelity-tokenizer", "/models/kimi",
            "--tokfidelity-reconstruct=my_pipeline:rebuild", "-x"]
    gate.write_closed_record("G1_demo", state_dir=tmp_path / "state", reason="1 test(s) failed", pytest_args=args)
    step = check(dataset, tmp_path / "state").next_step
    assert step.endswith(f"--tokfidelity-state-dir={tmp_path / 'state'} --tokfidelity-tokenizer /models/kimi "
                         "--tokfidelity-reconstruct=my_pipeline:rebuild`"), step
    assert "::a" not in step and " -x" not in step and step.count("--tokfidelity-dataset") == 1


def test_ambiguous_name_is_closed(dataset, tmp_path):
    write_dataset(dataset.parent / "G1_other", json.loads((dataset / "manifest.json").read_text()), [])
    status = check(dataset, tmp_path / "state")
    assert not status.open and status.unknown and "matches 2 datasets" in status.message


def test_code_fingerprint_covers_the_verdict_sources():
    files = fingerprints.code_file_hashes()
    for rel in ("pipeline/core/reconstruct.py", "pipeline/core/views.py", "pipeline/core/diagnose.py", "pipeline/core/fidelity.py", "pytest_tokfidelity/session.py"):
        assert len(files[rel]) == 64, rel


def test_cli_gate_check_exit_codes(dataset, tmp_path, capsys):
    argv = ["gate", "check", "--dataset", "G1", "--golden-dir", str(dataset.parent), "--state-dir", str(tmp_path / "state")]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert "gate for G1_demo is closed" in err and "next: run `pytest --tokfidelity-dataset=G1_demo" in err
    open_record(dataset, tmp_path / "state")
    assert main(argv) == 0
    assert "is open" in capsys.readouterr().out
    (dataset / "samples.jsonl").write_text("")
    assert main(argv) == 1
    assert "golden file samples.jsonl changed" in capsys.readouterr().err
    assert main(["gate", "show", "--dataset", "G1", "--golden-dir", str(dataset.parent), "--state-dir", str(tmp_path / "state")]) == 0
    assert json.loads(capsys.readouterr().out)["status"] == "open"


def test_code_fingerprint_includes_what_family_views_depend_on():
    """qwen3/deepseek-v3 views re-serialise arguments with Python's json; the tokenizers libraries encode."""
    import platform

    from pipeline.core.fingerprints import library_versions

    versions = library_versions()
    assert versions["python"] == platform.python_version()
    assert {"tiktoken", "tokenizers"} <= set(versions)


# -- what the prompt depends on: the chat template file, the render settings, the renderers ----------
@pytest.fixture
def own_template(tmp_path) -> tuple[Path, Path]:
    """A dataset whose tokenizer folder (a copy of Kimi K2.5's) holds its own chat_template.jinja."""
    import shutil

    tok_dir = tmp_path / "kimi-copy"
    shutil.copytree(KIMI.source, tok_dir)
    samples = [{"id": "a", "output_ids": KIMI.encode_ordinary("hi") + [163607, 163586], "finish_reason": "stop"}]
    manifest = {"name": "G1", "profile": "kimi-k2.5", "tokenizer": str(tok_dir), "source": "tests/test_gate.py"}
    return write_dataset(tmp_path / "golden" / "G1_demo", manifest, samples), tok_dir


def test_record_pins_the_chat_template_render_settings_and_renderer_versions(own_template, tmp_path):
    from pipeline.core.pins import file_sha256

    dataset, tok_dir = own_template
    tok = load_tokenizer(str(tok_dir))
    path = open_record(dataset, tmp_path / "state", tokenizer_spec=str(tok_dir), tokenizer_fingerprint=tok.fingerprint)
    record = json.loads(path.read_text())
    jinja = str((tok_dir / "chat_template.jinja").resolve())
    assert record["template_files"] == {jinja: file_sha256(jinja)}
    assert record["render"] == {"chat_template_kwargs": {"thinking": True, "preserve_thinking": False},
                                "tools_preprocess": ["deep-sort", "kimi-typescript"]}
    assert {"transformers", "jinja2", "openai-harmony"} <= set(record["libraries"])
    assert check(dataset, tmp_path / "state").open


def test_one_character_template_edit_closes_the_gate_and_names_the_file(own_template, tmp_path):
    dataset, tok_dir = own_template
    tok = load_tokenizer(str(tok_dir))
    open_record(dataset, tmp_path / "state", tokenizer_spec=str(tok_dir), tokenizer_fingerprint=tok.fingerprint)
    jinja = tok_dir / "chat_template.jinja"
    text = jinja.read_text()
    jinja.write_text(text.replace("<|im_end|>", "<|im_end|> ", 1))  # one character
    status = check(dataset, tmp_path / "state")
    assert not status.open
    assert f"chat template {jinja.resolve()} changed since the green run" in status.message


def test_changed_render_settings_close_the_gate(dataset, tmp_path):
    path = open_record(dataset, tmp_path / "state")
    record = json.loads(path.read_text())
    record["render"]["chat_template_kwargs"]["thinking"] = False  # as if opened with other template variables
    path.write_text(json.dumps(record))
    status = check(dataset, tmp_path / "state")
    assert not status.open and "the render settings of profile kimi-k2.5 changed" in status.message


def test_judged_views_reads_views_and_falls_back_to_the_single_view_of_older_records(dataset, tmp_path):
    assert gate.judged_views({"views": ["sglang", "vllm"]}) == {"sglang", "vllm"}
    assert gate.judged_views({"views": ["sglang"], "view": "sglang"}) == {"sglang"}  # as a one-view run writes it
    # fields that disagree were edited by hand: the gate judged no view
    assert gate.judged_views({"views": ["sglang", "vllm"], "view": "sglang"}) == frozenset()
    assert gate.judged_views({"views": ["sglang"], "view": "vllm"}) == frozenset()
    assert gate.judged_views({"views": ["vllm", "vllm"]}) == frozenset()
    assert gate.judged_views({"view": "vllm"}) == {"vllm"}  # a record written before `views`
    assert gate.judged_views({"status": "closed"}) == frozenset()
    assert gate.judged_views(None) == frozenset()
    assert gate.judged_views({"views": "sglang"}) == frozenset()  # damaged: not a list, never a list of letters
    open_record(dataset, tmp_path / "state")
    assert gate.judged_views(gate.read_record(tmp_path / "state", dataset.name)) == {"sglang"}


def test_a_template_the_manifest_names_is_pinned_and_a_changed_one_closes_the_gate(tmp_path):
    """A tokenizer folder with no template of its own (DeepSeek-V3.1's): the manifest names the file and pins its
    sha256; the gate opens in a shell with nothing set, and a changed file keeps it shut, naming the manifest's field."""
    import hashlib

    from tokenizer_roots import SHARED

    tok_dir = tmp_path / "deepseek-v3.1"
    tok_dir.mkdir()
    (tok_dir / "tokenizer.json").symlink_to(SHARED / "deepseek-v3.1" / "tokenizer.json")
    jinja = tok_dir / "chat_template.xinference.jinja"
    jinja.write_bytes((SHARED / "deepseek-v3.1" / "chat_template.xinference.jinja").read_bytes())
    tok = load_tokenizer(str(tok_dir))
    declared = {"file": jinja.name, "sha256": hashlib.sha256(jinja.read_bytes()).hexdigest(),
                "special_tokens": {"bos_token": "<｜begin▁of▁sentence｜>", "eos_token": "<｜end▁of▁sentence｜>"}}
    samples = [{"id": "a", "output_ids": tok.encode_ordinary("hi") + [1], "finish_reason": "stop"}]
    manifest = {"name": "G1", "profile": "deepseek-v3.1", "tokenizer": str(tok_dir), "chat_template": declared,
                "source": "tests/test_gate.py"}
    dataset = write_dataset(tmp_path / "golden" / "G1_demo", manifest, samples)
    path = open_record(dataset, tmp_path / "state", tokenizer_spec=str(tok_dir), tokenizer_fingerprint=tok.fingerprint,
                       profile="deepseek-v3.1")
    assert json.loads(path.read_text())["template_files"] == {str(jinja.resolve()): declared["sha256"]}
    assert check(dataset, tmp_path / "state").open
    jinja.write_text(jinja.read_text(encoding="utf-8").replace("## Tools", "## Functions"), encoding="utf-8")
    status = check(dataset, tmp_path / "state")
    assert not status.open
    assert f"{dataset / 'manifest.json'}: field 'chat_template.sha256'" in status.message and str(jinja) in status.message
