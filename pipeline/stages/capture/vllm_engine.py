"""The vLLM capture engine: golden ids from a vLLM server's OpenAI-compatible chat endpoint.

``tokfidelity capture --engine vllm --url URL``: ``POST /v1/chat/completions`` with
``"return_token_ids": true``; vLLM answers ``prompt_token_ids`` at the response root and
``token_ids`` on each choice (the stop token included when the model stopped on it). Everything
else (prompt check, finish reasons, the response text kept for the suite) is
``chat_engine.ChatIdsEngine``. Each prompt is sampled with its own seed
(``prompt_seed(seed, prompt id)``), sent as the request's ``seed``: CPU sampling still differs
across batch sizes and runs, so the captured ids, not a re-run, are the golden data.
"""

from __future__ import annotations

from typing import Any

from ..prompts import Prompt
from .chat_engine import ChatIdsEngine, EngineError
from .engine import Capture
from .transformers_engine import prompt_seed

__all__ = ["VLLMEngine", "VLLMError"]


class VLLMError(EngineError):
    """The vLLM server refused a request or answered something that is not a capture."""


class VLLMEngine(ChatIdsEngine):
    name = "vllm"
    error_class = VLLMError

    def __init__(self, url: str, profile, tokenizer, *, model: str | None = None, **kwargs):
        super().__init__(url, profile, tokenizer, model=model or "default", **kwargs)
        self._served = None
        if model is None:  # vLLM answers 404 for a model name it does not serve: ask it
            self.model = self.served_model() or "default"

    def served_model(self) -> str | None:
        """The first model id of GET /v1/models (vLLM serves one model, named by --model or --served-model-name)."""
        if self._served is None:
            body = self._get_json("/v1/models")
            data = body.get("data") if isinstance(body, dict) else None
            if isinstance(data, list) and data and isinstance(data[0], dict):
                self._served = data[0]
        return self._served.get("id") if self._served else None

    def capture(self, prompt: Prompt, sampling: dict) -> Capture:
        if "seed" in sampling:
            sampling = {**sampling, "seed": prompt_seed(int(sampling["seed"]), prompt.id)}
        return self.capture_chat(prompt, sampling)

    def describe(self) -> dict:
        version = self._get_json("/version")
        info: dict[str, Any] = {
            "engine": "vllm",
            "url": self.url,
            "endpoint": "/v1/chat/completions (return_token_ids)",
            "model": self.model,
            "vllm_version": version.get("version") if isinstance(version, dict) else None,
            "profile": self.profile.name,
            "tokenizer": self.tokenizer.name,
            "tokenizer_fingerprint": self.tokenizer.fingerprint,
            "prompt_rendering": "the server's chat template; compared id for id with pipeline.core.render (meta.prompt_render)",
            "sampling_note": "per-prompt seed = sha256('{seed}:{prompt id}')[:4] & 0x7fffffff, sent as the request's seed",
        }
        if self._served:
            info["served_model"] = {k: self._served[k] for k in ("id", "root", "max_model_len") if k in self._served}
        return info
