"""The SGLang capture engine: golden ids straight from an SGLang server, never from text.

Two modes (``tokfidelity capture --engine sglang --url URL --mode generate|chat``):

* ``generate``: native ``POST /generate`` with ``input_ids`` rendered here by ``pipeline.core.render``
  (so the prompt ids are ours and exact); the answer's ``output_ids`` are the model's ids, the
  matched stop token included, and ``meta_info.finish_reason`` is SGLang's ``{"type": ...}``.
* ``chat``: ``POST /v1/chat/completions`` with ``return_token_ids`` (``chat_engine.ChatIdsEngine``):
  the server renders the prompt with its own template; SGLang 0.5.23 returns ``prompt_token_ids``
  and ``response_token_ids`` on each choice (raw ids, before any reasoning or tool parsing;
  non-streaming), read by ``pipeline.stages.engine_ids``. Our own rendering is compared with the
  server's prompt ids and the result recorded in ``meta["prompt_render"]``.

Transient failures (429, 5xx, timeouts, dropped connections, bodies that are not whole JSON) are
retried with backoff; anything else raises ``SGLangError`` naming the URL and the field.
"""

from __future__ import annotations

from typing import Any

from ..client import RetryPolicy
from ...core.profiles import Profile
from ...core.prompt_renderers import render_prompt
from ...core.tokenizer import Tokenizer
from ..prompts import Prompt
from ..engine_ids import EngineIdsError, returned_ids
from .chat_engine import DEFAULT_MAX_NEW_TOKENS, SAMPLING_KEYS as _SAMPLING_KEYS, ChatIdsEngine, EngineError
from .engine import Capture

__all__ = ["SGLangEngine", "SGLangError"]


class SGLangError(EngineError):
    """The SGLang server refused a request or answered something that is not a capture."""


class SGLangEngine(ChatIdsEngine):
    name = "sglang"
    error_class = SGLangError
    extra_request = {"skip_special_tokens": False}

    def __init__(
        self,
        url: str,
        profile: Profile,
        tokenizer: Tokenizer,
        mode: str = "generate",
        *,
        model: str = "default",
        timeout: float = 600.0,
        retry: RetryPolicy = RetryPolicy(max_retries=5),
    ):
        if mode not in ("generate", "chat"):
            raise ValueError(f"mode must be 'generate' or 'chat', got {mode!r}")
        super().__init__(url, profile, tokenizer, model=model, timeout=timeout, retry=retry)
        self.mode = mode

    # -- protocol ---------------------------------------------------------------------------
    def capture(self, prompt: Prompt, sampling: dict) -> Capture:
        if self.mode == "generate":
            return self._capture_generate(prompt, sampling)
        return self._capture_chat(prompt, sampling)

    def describe(self) -> dict:
        info: dict[str, Any] = {
            "engine": "sglang",
            "url": self.url,
            "mode": self.mode,
            "endpoint": "/generate" if self.mode == "generate" else "/v1/chat/completions (return_token_ids)",
            "profile": self.profile.name,
            "tokenizer": self.tokenizer.name,
            "tokenizer_fingerprint": self.tokenizer.fingerprint,
            "prompt_rendering": "pipeline.core.prompt_renderers.render_prompt" if self.mode == "generate" else "the server's chat template",
        }
        for path in ("/get_model_info", "/get_server_info"):  # best effort: facts for the manifest
            body = self._get_json(path)
            if isinstance(body, dict):
                info[path.strip("/")] = {k: body[k] for k in ("model_path", "tokenizer_path", "version", "is_generation") if k in body}
        return info

    # -- modes ------------------------------------------------------------------------------
    def _capture_generate(self, prompt: Prompt, sampling: dict) -> Capture:
        prompt_ids = render_prompt(prompt.messages, prompt.tools, self.profile, self.tokenizer)
        params = {k: sampling[k] for k in _SAMPLING_KEYS if k in sampling}
        params["max_new_tokens"] = prompt.max_tokens or sampling.get("max_new_tokens") or DEFAULT_MAX_NEW_TOKENS
        params["skip_special_tokens"] = False
        body = self._post("/generate", {"input_ids": prompt_ids, "sampling_params": params})
        if isinstance(body, list):  # a batch answer for a single request
            body = body[0] if len(body) == 1 else body
        if not isinstance(body, dict):
            raise SGLangError(f"{self.url}/generate: expected a JSON object, got {type(body).__name__}")
        try:
            output_ids = returned_ids(body).output_ids
        except EngineIdsError as e:
            raise SGLangError(f"{self.url}/generate: {e}") from None
        if output_ids is None:
            raise SGLangError(f"{self.url}/generate: field 'output_ids' missing in the answer")
        meta_info = body.get("meta_info") if isinstance(body.get("meta_info"), dict) else {}
        finish = meta_info.get("finish_reason")
        if finish is None:
            raise SGLangError(f"{self.url}/generate: field 'meta_info.finish_reason' missing in the answer")
        _check_finish(finish, output_ids, self.profile, f"{self.url}/generate")
        meta = {k: meta_info[k] for k in ("id", "prompt_tokens", "completion_tokens", "cached_tokens", "e2e_latency") if k in meta_info}
        if meta_info.get("completion_tokens") not in (None, len(output_ids)):
            meta["completion_tokens_mismatch"] = True
        return Capture(prompt_ids=prompt_ids, output_ids=output_ids, finish_reason=finish, meta=meta)

    def _capture_chat(self, prompt: Prompt, sampling: dict) -> Capture:
        return self.capture_chat(prompt, sampling)


def _check_finish(finish: Any, output_ids: list[int], profile: Profile, url: str) -> None:
    """A stop on the profile's stop token must leave that token in the ids (SGLang keeps it)."""
    if isinstance(finish, dict) and finish.get("type") == "stop" and finish.get("matched") == profile.stop_id:
        if not output_ids or output_ids[-1] != profile.stop_id:
            raise SGLangError(
                f"{url}: finish_reason says the stop token {profile.stop_id} matched but output_ids do not end with it"
            )
