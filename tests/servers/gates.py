"""Open a dataset's gate for a test the way a green verification run does: a real gate record."""

from __future__ import annotations

from pathlib import Path

from pipeline.core.decision import Counts
from pipeline.core.gate import count_samples, write_open_record
from pipeline.core.golden import load_manifest
from pipeline.core.tokenizer import load_tokenizer


def open_gate(dataset_dir: Path, state_dir: Path) -> Path:
    """A record with the counts of an all-exact run (what a green run of this dataset writes)."""
    manifest = load_manifest(dataset_dir)
    tokenizer = load_tokenizer(manifest.tokenizer)
    n = count_samples(dataset_dir / "samples.jsonl")
    return write_open_record(
        dataset_dir,
        state_dir=state_dir,
        tokenizer_spec=manifest.tokenizer,
        tokenizer_fingerprint=tokenizer.fingerprint,
        profile=manifest.profile,
        view=manifest.api_view,
        counts=Counts(samples=n, exact=n),
    )
