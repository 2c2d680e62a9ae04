"""The per-record checks of ``generate`` that go beyond counting: engine ids and hidden reasoning.

When the server returned the output ids (``pipeline.stages.engine_ids``), they are the sample's ids
(``ids_source: "engine"``) and the reconstruction from the response text is compared with them by
the fidelity suite's own ``Judge``: the same verdict the suite gives the same response as a golden
sample. Equal: the record's check stays as the usage check says. Different: ``reconstruction_differs``
with the divergence (classes, hunks, first index, windows), and the record is still usable: its ids
are the engine's. Prompt ids the server returned are compared id for id with our rendering.

Without returned ids, a response whose usage says the model reasoned
(``usage.completion_tokens_details.reasoning_tokens`` > 0) but that carries no reasoning text is
``hidden_reasoning``: the reasoning ids are in the model's output and nowhere in the text, so no
reconstruction can be right (rather than a generic ``usage_mismatch``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..core.fidelity import BAD_INPUT, EXACT, Judge
from ..core.golden import GoldenSample
from ..core.profiles import Profile
from ..core.prompt_renderers import render_prompt
from ..core.render import RenderError
from ..core.tokenizer import Tokenizer
from .engine_ids import ReturnedIds
from .prompts import Prompt

__all__ = ["EngineComparison", "compare_engine_ids", "hidden_reasoning_tokens", "prompt_render_result"]


class EngineComparison:
    """What the suite's judge says about one response against the engine's ids."""

    __slots__ = ("exact", "bad_input", "divergence", "report")

    def __init__(self, exact: bool, bad_input: bool, divergence: dict | None, report: str):
        self.exact, self.bad_input, self.divergence, self.report = exact, bad_input, divergence, report


def compare_engine_ids(record_id: str, engine_ids: list[int], finish_reason: str, body: Mapping[str, Any], judge: Judge) -> EngineComparison:
    """Judge the response ``body`` against ``engine_ids`` exactly as the suite judges a golden sample."""
    sample = GoldenSample(id=record_id, output_ids=engine_ids, finish_reason=finish_reason, line=0, response=body)
    verdict = judge(sample)
    if verdict.kind == EXACT:
        return EngineComparison(True, False, None, "")
    if verdict.kind == BAD_INPUT:
        return EngineComparison(False, True, None, verdict.report)
    divergence = {
        "classes": list(verdict.classes),
        "hunks": verdict.hunks,
        "hunks_by_class": dict(verdict.hunks_by_class),
        "signature": verdict.signature,  # what the suite's reviewed snapshot of this sample would hold
    }
    return EngineComparison(False, False, divergence, verdict.report)


def hidden_reasoning_tokens(usage: Mapping[str, Any] | None, reasoning_text: str | None) -> int:
    """Reasoning tokens the usage counts while the response holds no reasoning text (0: none hidden)."""
    details = (usage or {}).get("completion_tokens_details")
    n = details.get("reasoning_tokens") if isinstance(details, Mapping) else None
    return n if type(n) is int and n > 0 and not reasoning_text else 0


def prompt_render_result(prompt: Prompt, returned: ReturnedIds, profile: Profile, tokenizer: Tokenizer) -> str | dict | None:
    """``"same"`` when the server's prompt ids equal our rendering, else where they part; None: no prompt ids."""
    if returned.prompt_ids is None:
        return None
    try:
        ours = render_prompt(prompt.messages, prompt.tools, profile, tokenizer, chat_template_kwargs=prompt.params.get("chat_template_kwargs"))
    except RenderError as e:
        return {"error": str(e)}
    if ours == returned.prompt_ids:
        return "same"
    theirs = returned.prompt_ids
    n = next((i for i, (a, b) in enumerate(zip(ours, theirs)) if a != b), min(len(ours), len(theirs)))
    return {"first_difference": n, "ours": ours[max(0, n - 3): n + 3], "server": theirs[max(0, n - 3): n + 3],
            "ours_len": len(ours), "server_len": len(theirs)}
