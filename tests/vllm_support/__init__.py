"""Run vLLM 0.32.0's own detokenizer, parsers and chat-response assembly on output ids, offline.

vLLM lives in its own environment (.venv-vllm, made by scripts/setup-vllm; scripts/test runs it): it
pins torch and transformers versions the test environment does not have. ``vllm_responses`` runs
``driver.py`` there once for a whole batch of cases (JSON on stdin, JSON on stdout), so the cost of
importing vLLM is paid once. ``unavailable()`` says why that environment cannot be used, or None.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from servers.vllm_server import PYTHON, unavailable

__all__ = ["KIMI_CLASS", "KIMI_CLASS_SHA256", "unavailable", "vllm_responses", "setup_for", "view_for", "INSTALLED"]

INSTALLED = "0.32.0"  # the vLLM release .venv-vllm holds (requirements/vllm.txt)


def view_for(profile, version: str, engine: str = "vllm") -> str:
    """The name of the profile's view that stands for this engine release."""
    names = [n for n, v in profile.spec.views.items() if v.engine == engine and v.version == version]
    if not names:
        raise LookupError(f"profile {profile.name} has no view for {engine} {version}; its views: {', '.join(profile.spec.views)}")
    return names[0]

DRIVER = Path(__file__).with_name("driver.py")
SHARED = Path(__file__).resolve().parents[3] / "shared"
KIMI_CLASS = SHARED / "engine-code" / "kimi" / "tokenization_kimi.py"
KIMI_CLASS_SHA256 = "30ee74ac117c1478905dd4e7e52d17fbb286789ad451163d722485ec98cd1280"  # ../shared/engine-code/README.md


def _tokenizers_root() -> Path:
    roots = [Path(p) for p in os.environ.get("TOKFIDELITY_TOKENIZERS", "").split(os.pathsep) if p]
    return next((r for r in roots if (r / "kimi-k2.5").is_dir()), SHARED / "tokenizers")


def setup_for(view, tokenizer_folder: str, prompt_ids, stop_ids, chat_template_kwargs=None) -> dict:
    """The driver's set-up for one view (its parser names as the server's flags give them)."""
    folder = _tokenizers_root() / tokenizer_folder
    if view.reasoning_parser == "openai_gptoss":
        folder = folder.parent  # o200k/o200k_harmony: the folder holding o200k_base.tiktoken
    setup = {"tokenizer_dir": str(folder), "reasoning_parser": view.reasoning_parser, "tool_parser": view.tool_parser,
             "prompt_ids": list(prompt_ids), "stop_ids": list(stop_ids), "chat_template_kwargs": chat_template_kwargs or {},
             "harmony": view.reasoning_parser == "openai_gptoss"}
    if (folder / "tiktoken.model").is_file():  # Kimi: the model repository's tokenizer class, by path
        setup.update(kimi_class=str(KIMI_CLASS), kimi_class_sha256=KIMI_CLASS_SHA256)
    return setup


def vllm_responses(groups: list[tuple[dict, list[dict]]], timeout: float = 1800, *, python: str | Path = PYTHON,
                   overlay: str | Path | None = None) -> list[list[dict]]:
    """vLLM's response for each case of each (set-up, cases) group, in order. ``python``: the engine
    environment's interpreter; ``overlay``: a folder put first on its path (another release's Python
    files over that environment, as ``tests/record-engine-responses`` uses it)."""
    job = {"groups": [{"setup": setup, "cases": cases} for setup, cases in groups]}
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
    env.update(HF_HUB_OFFLINE="1", VLLM_NO_USAGE_STATS="1", DO_NOT_TRACK="1", TOKENIZERS_PARALLELISM="false",
               VLLM_LOGGING_LEVEL="ERROR")
    if overlay is not None:
        env["PYTHONPATH"] = str(overlay)
    done = subprocess.run([str(python), str(DRIVER)], input=json.dumps(job), capture_output=True, text=True,
                          timeout=timeout, env=env)
    if done.returncode != 0:
        raise RuntimeError(f"vLLM driver failed ({done.returncode}):\n{done.stderr[-4000:]}")
    return json.loads(done.stdout)["groups"]
