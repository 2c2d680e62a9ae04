"""speculators' own data preparation, judged against a running vLLM server's render endpoint.

speculators prepares a drafter's training rows in ``speculators.data_generation.preprocessing``: each
conversation is normalized (``_normalize_conversation``: ``role``/``content``, ``tool_calls``,
``tool_call_id``, ``reasoning_content`` or ``thinking``; every other key dropped), then every id comes from
a vLLM server's ``/v1/chat/completions/render`` (``render_client.render_conversation``): the conversation
up to each assistant turn with ``add_generation_prompt=True``, then with that turn; the loss mask starts
where the second render stops extending the first. There is no tokenizer or template of its own: the
rendering is the server's (its chat template, its handling of tools and reasoning fields).

``--tokfidelity-trainer=speculators:ENDPOINT`` runs that preparation, ``_preprocess_batch`` (the batch
function ``build_speculator_training_dataset`` maps over a datasets.Dataset), on each sample's conversation
as plain Python objects, and judges the last row it makes (the last assistant turn's). The only module
touching speculators; ``_preprocess_batch`` is private, so it is used inside ``CHECKED`` and elsewhere only
when ``self_test`` passes.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from .checked_versions import CheckedRange, usable

__all__ = ["CHECKED", "NoTrainingRow", "self_test", "speculators_name", "speculators_build", "server_facts"]

CHECKED = CheckedRange("speculators", "pipeline/core/speculators_adapter.py", "0.9.0", "0.9.0")
PARAMS = ("examples", "is_multimodal", "render_endpoint", "max_length", "minimum_valid_tokens")
PROBE = "tokfidelity probe: I'll check 17 * 23 = 391, don't guess, naïve café ✓"  # contractions, digits, accents
_LOGGER = "speculators.data_generation.preprocessing"


class NoTrainingRow(ValueError):
    """speculators made no training row of the conversation's last assistant turn (its log says why)."""


def self_test() -> None:
    """Raise unless ``_preprocess_batch`` still takes ``PARAMS``, refuses to run without an endpoint, and gets
    its ids only through the render client."""
    import inspect

    from speculators.data_generation import preprocessing, render_client

    params = tuple(inspect.signature(preprocessing._preprocess_batch).parameters)
    if params != PARAMS:
        raise AssertionError(f"_preprocess_batch takes {params}, not {PARAMS}")
    if preprocessing._encode_render.__globals__.get("render_conversation") is not render_client.render_conversation:
        raise AssertionError("_encode_render no longer renders through render_client.render_conversation")
    try:
        preprocessing._preprocess_batch({"conversations": [[{"role": "user", "content": "x"}]]}, False, None, 8)
    except ValueError as e:
        if "render_endpoint is required" not in str(e):
            raise
    else:
        raise AssertionError("_preprocess_batch ran without a render endpoint")


def _get_json(url: str) -> Any:
    import httpx

    response = httpx.get(url, timeout=10.0)
    response.raise_for_status()
    return response.json()


def server_facts(endpoint: str) -> tuple[str, int]:
    """(the vLLM server's version, its max_model_len); a ValueError saying what is wrong when it answers no."""
    import httpx

    base = endpoint.rstrip("/")
    try:
        served = _get_json(base + "/version")["version"], _get_json(base + "/v1/models")["data"][0]["max_model_len"]
    except (httpx.HTTPError, KeyError, IndexError, TypeError, ValueError) as e:
        raise ValueError(f"no vLLM server answers at {endpoint} ({type(e).__name__}: {str(e)[:160]}); start one "
                         f"with the dataset's model (docs/trainers.md)") from None
    return str(served[0]), int(served[1])


def speculators_name(endpoint: str) -> str:
    """The name a record gives speculators rendering through the vLLM server at ``endpoint`` (no address in it:
    the same trainer and server release are the same judged code on any port)."""
    if not endpoint.startswith(("http://", "https://")):
        raise ValueError(f"expected speculators:http://HOST:PORT (a vLLM server's address), got {endpoint!r}")
    try:
        own = version("speculators")
    except PackageNotFoundError:
        raise ValueError("speculators is not installed: pip install speculators --no-deps") from None
    if not usable(CHECKED, self_test):
        raise ValueError(f"speculators {own}'s data preparation is not the one checked here ({CHECKED.span()}): "
                         f"install speculators=={CHECKED.newest}")
    served, _ = server_facts(endpoint)
    return f"speculators {own}:vLLM {served} render"


class _Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


def speculators_build(endpoint: str, probe_ids: Sequence[int] | None = None):
    """``build(messages, tools, assistant message) -> (input_ids, loss_mask)`` by speculators' own preparation.

    ``probe_ids``: the dataset tokenizer's ids of ``PROBE``; the server must render them (else it serves
    another model's tokenizer, and every verdict would say so in a less useful way)."""
    from speculators.data_generation import preprocessing
    from speculators.data_generation.render_client import render_conversation

    _, max_model_len = server_facts(endpoint)
    if probe_ids is not None:
        ids = render_conversation(endpoint, [{"role": "user", "content": PROBE}], add_generation_prompt=True)
        if not any(ids[i:i + len(probe_ids)] == list(probe_ids) for i in range(len(ids))):
            raise ValueError(f"the vLLM server does not serve the dataset's tokenizer: it renders {PROBE!r} as "
                             f"other ids (the dataset's tokenizer: {list(probe_ids)}, the server's render: {ids})")

    def build(messages: Sequence[Mapping], tools: Sequence | None, message: Mapping) -> tuple[list[int], list[int]]:
        conversation = [*map(dict, messages), {"role": "assistant", **message}]
        batch = {"conversations": [conversation], "tools": [list(tools) if tools else None]}
        turns = sum(1 for j, m in enumerate(conversation) if j and m.get("role") == "assistant")
        handler, logger = _Collect(), logging.getLogger(_LOGGER)
        logger.addHandler(handler)
        try:
            out = preprocessing._preprocess_batch(batch, False, endpoint, max_model_len)
        finally:
            logger.removeHandler(handler)
        if len(out["input_ids"]) < turns:  # the last turn's row is missing (earlier ones may be too)
            said = "; ".join(handler.lines) or "no reason logged"
            raise NoTrainingRow(f"speculators made {len(out['input_ids'])} training rows for {turns} assistant "
                                f"turns: {said}")
        return out["input_ids"][-1].tolist(), out["loss_mask"][-1].tolist()

    return build

