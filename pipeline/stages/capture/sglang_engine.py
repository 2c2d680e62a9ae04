"""The SGLang capture engine: golden ids straight from an SGLang server, never from text.

Two modes (``tokfidelity capture --engine sglang --url URL --mode generate|chat``):

* ``generate``: native ``POST /generate`` with ``input_ids`` rendered here by ``pipeline.core.render``
  (so the prompt ids are ours and exact); the answer's ``output_ids`` are the model's ids, the
  matched stop token included, and ``meta_info.finish_reason`` is SGLang's ``{"type": ...}``.
* ``chat``: ``POST /v1/chat/completions`` with ``return_token_ids``: the server renders the prompt
  with its own template and returns ``prompt_token_ids`` and ``choices[0].token_ids`` (raw ids,
  before any reasoning or tool parsing; non-streaming). Our own rendering is compared with the
  server's prompt ids and the result recorded in ``meta["prompt_render"]``.

Transient failures (429, 5xx, timeouts, dropped connections, bodies that are not whole JSON) are
retried with backoff; anything else raises ``SGLangError`` naming the URL and the field.
"""

from __future__ import annotations

import json
import time
from typing import Any

import httpx

from ...core.errors import TokfidelityError
from ..client import RETRY_STATUS, RetryPolicy, retry_after_seconds
from ...core.profiles import Profile
from ...core.render import render_prompt
from ...core.tokenizer import Tokenizer
from ..prompts import Prompt
from .engine import Capture

__all__ = ["SGLangEngine", "SGLangError"]

DEFAULT_MAX_NEW_TOKENS = 4096
# Prompt sampling keys -> SGLang sampling_params keys (same names in both APIs except max tokens).
_SAMPLING_KEYS = ("temperature", "top_p", "top_k", "min_p", "seed", "frequency_penalty", "presence_penalty", "repetition_penalty")


class SGLangError(TokfidelityError, RuntimeError):
    """The SGLang server refused a request or answered something that is not a capture."""


class SGLangEngine:
    name = "sglang"

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
        self.url = url.rstrip("/")
        self.profile = profile
        self.tokenizer = tokenizer
        self.mode = mode
        self.model = model
        self.retry = retry
        self._http = httpx.Client(timeout=httpx.Timeout(timeout, connect=10.0))

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
            "prompt_rendering": "pipeline.core.render.render_prompt" if self.mode == "generate" else "the server's chat template",
        }
        for path in ("/get_model_info", "/get_server_info"):  # best effort: facts for the manifest
            try:
                response = self._http.get(self.url + path, timeout=10.0)
                if response.status_code == 200:
                    body = response.json()
                    info[path.strip("/")] = {k: body[k] for k in ("model_path", "tokenizer_path", "version", "is_generation")
                                             if isinstance(body, dict) and k in body}
            except (httpx.HTTPError, ValueError):
                pass
        return info

    def close(self) -> None:
        self._http.close()

    # -- modes ------------------------------------------------------------------------------
    def _capture_generate(self, prompt: Prompt, sampling: dict) -> Capture:
        prompt_ids = render_prompt(prompt.messages, prompt.tools, self.profile, self.tokenizer)
        params = {k: sampling[k] for k in _SAMPLING_KEYS if k in sampling}
        params["max_new_tokens"] = prompt.max_tokens or sampling.get("max_new_tokens") or DEFAULT_MAX_NEW_TOKENS
        params["skip_special_tokens"] = False
        body = self._post("/generate", {"input_ids": prompt_ids, "sampling_params": params})
        if isinstance(body, list):  # a batch answer for a single request
            body = body[0] if len(body) == 1 else body
        output_ids = _ids(body, "output_ids", self.url + "/generate")
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
        request: dict[str, Any] = {"model": self.model, "messages": prompt.messages, "return_token_ids": True, "stream": False,
                                   "skip_special_tokens": False}
        if prompt.tools:
            request["tools"] = prompt.tools
        request.update({k: sampling[k] for k in _SAMPLING_KEYS if k in sampling})
        request["max_tokens"] = prompt.max_tokens or sampling.get("max_new_tokens") or DEFAULT_MAX_NEW_TOKENS
        url = self.url + "/v1/chat/completions"
        body = self._post("/v1/chat/completions", request)
        choices = body.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            raise SGLangError(f"{url}: field 'choices' is not a non-empty list of objects")
        choice = choices[0]
        if "token_ids" not in choice:
            raise SGLangError(
                f"{url}: field 'choices[0].token_ids' missing: the server ignored return_token_ids "
                "(needs an SGLang with return_token_ids support, or use --mode generate)"
            )
        output_ids = _ids(choice, "token_ids", url, "choices[0].")
        prompt_ids = _ids(body, "prompt_token_ids", url)
        finish = choice.get("finish_reason")
        if finish is None:
            raise SGLangError(f"{url}: field 'choices[0].finish_reason' missing")
        ours = render_prompt(prompt.messages, prompt.tools, self.profile, self.tokenizer)
        meta: dict[str, Any] = {"prompt_render": "same" if ours == prompt_ids else _first_difference(ours, prompt_ids)}
        if "matched_stop" in choice:
            meta["matched_stop"] = choice["matched_stop"]
        usage = body.get("usage") or {}
        if isinstance(usage, dict) and usage.get("completion_tokens") not in (None, len(output_ids)):
            meta["completion_tokens_mismatch"] = True
        if finish == "stop" and output_ids and output_ids[-1] == self.profile.stop_id:
            finish = {"type": "stop", "matched": self.profile.stop_id}
        elif finish == "length":
            finish = {"type": "length", "length": len(output_ids)}
        return Capture(prompt_ids=prompt_ids, output_ids=output_ids, finish_reason=finish, meta=meta)

    # -- HTTP -------------------------------------------------------------------------------
    def _post(self, path: str, payload: dict) -> Any:
        url = self.url + path
        attempt = 0
        while True:
            attempt += 1
            wait: float | None = None
            try:
                response = self._http.post(url, json=payload)
            except httpx.TransportError as e:  # timeouts included
                problem = f"{type(e).__name__}: {e}"
            else:
                status = response.status_code
                if status == 200:
                    try:
                        return response.json()
                    except (json.JSONDecodeError, UnicodeDecodeError) as e:
                        problem = f"HTTP 200 with a body that is not complete JSON ({e})"
                elif status in RETRY_STATUS or status >= 500:
                    problem = f"HTTP {status}: {response.text[:200]}"
                    wait = retry_after_seconds(response.headers.get("retry-after"))
                else:
                    raise SGLangError(f"POST {url} answered HTTP {status}: {response.text[:300]}")
            if attempt > self.retry.max_retries:
                raise SGLangError(f"POST {url} failed after {attempt} attempts; last: {problem}")
            delay = self.retry.backoff(attempt)
            time.sleep(max(delay, min(wait, self.retry.max_delay)) if wait is not None else delay)


def _ids(obj: Any, key: str, url: str, prefix: str = "") -> list[int]:
    if not isinstance(obj, dict) or key not in obj:
        raise SGLangError(f"{url}: field '{prefix}{key}' missing in the answer")
    value = obj[key]
    if not isinstance(value, list) or not all(type(x) is int for x in value):
        raise SGLangError(f"{url}: field '{prefix}{key}' is not a list of integer token ids")
    return value


def _check_finish(finish: Any, output_ids: list[int], profile: Profile, url: str) -> None:
    """A stop on the profile's stop token must leave that token in the ids (SGLang keeps it)."""
    if isinstance(finish, dict) and finish.get("type") == "stop" and finish.get("matched") == profile.stop_id:
        if not output_ids or output_ids[-1] != profile.stop_id:
            raise SGLangError(
                f"{url}: finish_reason says the stop token {profile.stop_id} matched but output_ids do not end with it"
            )


def _first_difference(ours: list[int], theirs: list[int]) -> dict:
    n = next((i for i, (a, b) in enumerate(zip(ours, theirs)) if a != b), min(len(ours), len(theirs)))
    return {"first_difference": n, "ours": ours[max(0, n - 3): n + 3], "server": theirs[max(0, n - 3): n + 3],
            "ours_len": len(ours), "server_len": len(theirs)}
