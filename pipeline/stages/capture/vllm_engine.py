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

    def server_version(self) -> str | None:
        """The vLLM release the server runs (``GET /version``: ``{"version": "0.32.0"}``), or None."""
        body = self._get_json("/version")
        version = body.get("version") if isinstance(body, dict) else None
        return version if isinstance(version, str) else None

    def release_view(self) -> str:
        """The profile's view standing for the server's vLLM release line (``vllm`` for the newest proven,
        ``vllm-0.32`` for 0.32.x): the view the captured samples are judged under. A release no view stands
        for, or a server that does not say its release, is a ``VLLMError`` saying which releases have one."""
        from ...core.engines.view import release, view_for_release

        views = self.profile.spec.views
        version = self.server_version()
        name = view_for_release(views, "vllm", version) if version else None
        if name is not None:
            return name
        known = ", ".join(f"{v.version[: v.version.rfind('.')]}.x ({n})" for n, v in views.items()
                          if v.engine == "vllm" and len(release(v.version)) >= 2)
        said = f"runs vLLM {version}" if version else "did not say its vLLM release (GET /version answered no version)"
        raise VLLMError(f"the server at {self.url} {said}; the {self.profile.name} profile's views stand for vLLM {known}: "
                        "capture from a server running one of those releases (a new release needs its own view, docs/views.md)")

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
