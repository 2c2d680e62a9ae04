"""Capture through an OpenAI-compatible chat endpoint that returns token ids (vLLM, SGLang).

``POST /v1/chat/completions`` with ``"return_token_ids": true`` (non-streaming): the server renders
the prompt with its own chat template and answers with its prompt and output ids, read by
``pipeline.stages.engine_ids.returned_ids`` wherever the engine puts them. The server's prompt ids
are compared id for id with ``pipeline.core.prompt_renderers.render_prompt`` and the result recorded in
``meta["prompt_render"]`` (``"same"`` or where they part). The answer's message (the text a client
sees) is kept as the sample's ``response``, so the fidelity suite rebuilds the ids from what this
server really sent.

Transient failures (429, 5xx, timeouts, dropped connections, bodies that are not whole JSON) are
retried with backoff; anything else raises ``error_class`` naming the URL and the field.
"""

from __future__ import annotations

import json
import time
from typing import Any

import httpx

from ...core.errors import TokfidelityError
from ...core.profiles import Profile
from ...core.prompt_renderers import render_prompt
from ...core.tokenizer import Tokenizer
from ..client import RETRY_STATUS, RetryPolicy, retry_after_seconds
from ..engine_ids import EngineIdsError, returned_ids
from ..prompts import Prompt
from .engine import Capture

__all__ = ["ChatIdsEngine", "EngineError", "DEFAULT_MAX_NEW_TOKENS", "SAMPLING_KEYS", "first_difference", "response_message"]

DEFAULT_MAX_NEW_TOKENS = 4096
# Sampling keys passed through (the same names in vLLM, SGLang and the OpenAI API, except max tokens).
SAMPLING_KEYS = ("temperature", "top_p", "top_k", "min_p", "seed", "frequency_penalty", "presence_penalty", "repetition_penalty")
_MESSAGE_KEYS = ("content", "reasoning", "reasoning_content", "tool_calls")


class EngineError(TokfidelityError, RuntimeError):
    """A server refused a request or answered something that is not a capture."""


def first_difference(ours: list[int], theirs: list[int]) -> dict:
    """Where two id lists part: index, a few ids either side, both lengths."""
    n = next((i for i, (a, b) in enumerate(zip(ours, theirs)) if a != b), min(len(ours), len(theirs)))
    return {"first_difference": n, "ours": ours[max(0, n - 3): n + 3], "server": theirs[max(0, n - 3): n + 3],
            "ours_len": len(ours), "server_len": len(theirs)}


def response_message(body: dict) -> dict | None:
    """The text a client sees (message fields and finish_reason of choice 0), without ids or metadata."""
    choices = body.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        return None
    message = choices[0].get("message")
    if not isinstance(message, dict):
        return None
    flat = {k: message[k] for k in _MESSAGE_KEYS if message.get(k) is not None}
    flat.setdefault("content", message.get("content"))
    flat["finish_reason"] = choices[0].get("finish_reason")
    return flat


class ChatIdsEngine:
    """A server's chat endpoint with returned ids. Subclasses set ``name`` and ``error_class``."""

    name = "chat"
    error_class: type[Exception] = EngineError
    extra_request: dict[str, Any] = {}  # engine-specific request fields

    def __init__(self, url: str, profile: Profile, tokenizer: Tokenizer, *, model: str = "default",
                 timeout: float = 600.0, retry: RetryPolicy = RetryPolicy(max_retries=5)):
        self.url = url.rstrip("/")
        self.profile = profile
        self.tokenizer = tokenizer
        self.model = model
        self.retry = retry
        self._http = httpx.Client(timeout=httpx.Timeout(timeout, connect=10.0))

    def close(self) -> None:
        self._http.close()

    def chat_request(self, prompt: Prompt, sampling: dict) -> dict[str, Any]:
        request: dict[str, Any] = {"model": self.model, "messages": prompt.messages, "return_token_ids": True,
                                   "stream": False, **self.extra_request}
        if prompt.tools:
            request["tools"] = prompt.tools
        request.update({k: sampling[k] for k in SAMPLING_KEYS if k in sampling})
        request.update({k: v for k, v in prompt.params.items() if k in SAMPLING_KEYS})
        request["max_tokens"] = prompt.max_tokens or sampling.get("max_new_tokens") or DEFAULT_MAX_NEW_TOKENS
        return request

    def capture_chat(self, prompt: Prompt, sampling: dict) -> Capture:
        url = self.url + "/v1/chat/completions"
        body = self._post("/v1/chat/completions", self.chat_request(prompt, sampling))
        choices = body.get("choices") if isinstance(body, dict) else None
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            raise self.error_class(f"{url}: field 'choices' is not a non-empty list of objects")
        choice = choices[0]
        try:
            ids = returned_ids(body)
        except EngineIdsError as e:
            raise self.error_class(f"{url}: {e}") from None
        if ids.output_ids is None:
            raise self.error_class(
                f"{url}: no output ids in the answer (looked for choices[0].token_ids, choices[0].response_token_ids, "
                "sglext.output_ids, output_ids): the server ignored return_token_ids; it needs vLLM >= 0.10.2 or an "
                "SGLang with return_token_ids (or use --engine sglang --mode generate)"
            )
        if ids.prompt_ids is None:
            raise self.error_class(f"{url}: no prompt ids in the answer (looked for prompt_token_ids, choices[0].prompt_token_ids, sglext.input_ids)")
        finish = choice.get("finish_reason")
        if finish is None:
            raise self.error_class(f"{url}: field 'choices[0].finish_reason' missing")
        output_ids = ids.output_ids
        ours = render_prompt(prompt.messages, prompt.tools, self.profile, self.tokenizer)
        meta: dict[str, Any] = {"prompt_render": "same" if ours == ids.prompt_ids else first_difference(ours, ids.prompt_ids),
                                "ids_fields": [ids.prompt_field, ids.output_field]}
        if "seed" in sampling:
            meta["seed"] = sampling["seed"]
        if choice.get("matched_stop") is not None:
            meta["matched_stop"] = choice["matched_stop"]
        usage = body.get("usage") or {}
        if isinstance(usage, dict) and usage.get("completion_tokens") not in (None, len(output_ids)):
            meta["completion_tokens_mismatch"] = usage.get("completion_tokens")
        if finish == "stop" and output_ids and output_ids[-1] == self.profile.stop_id:
            finish = {"type": "stop", "matched": self.profile.stop_id}
        elif finish == "length":
            finish = {"type": "length", "length": len(output_ids)}
        return Capture(prompt_ids=ids.prompt_ids, output_ids=output_ids, finish_reason=finish, meta=meta,
                       response=response_message(body))

    def _get_json(self, path: str) -> Any:
        """A GET for facts (versions, model names); None when it fails."""
        try:
            response = self._http.get(self.url + path, timeout=10.0)
            return response.json() if response.status_code == 200 else None
        except (httpx.HTTPError, ValueError):
            return None

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
                    raise self.error_class(f"POST {url} answered HTTP {status}: {response.text[:300]}")
            if attempt > self.retry.max_retries:
                raise self.error_class(f"POST {url} failed after {attempt} attempts; last: {problem}")
            delay = self.retry.backoff(attempt)
            time.sleep(max(delay, min(wait, self.retry.max_delay)) if wait is not None else delay)
