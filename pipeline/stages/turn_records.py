"""Multi-turn training records (``tokfidelity build --turns all``): one record per trained assistant turn.

A golden sample holds a conversation and the ids of its final assistant turn. Its earlier assistant
turns were trained turns too: turn ``i`` was generated after the prompt the template renders for
``messages[:i]`` (with the generation prompt), so its record is exactly that:

* the prompt is the history as the template re-renders it for that turn (Kimi K2.5 drops the
  reasoning of assistant turns up to the last plain answer before it, unless ``preserve_thinking``);
* the output is that turn's ids as its text lays them out (``reconstruct_output_ids``: reasoning,
  content, tool calls, the stop token), and the loss mask covers exactly those ids.

The final turn keeps its own record (its ids are the engine's). A turn that cannot be laid out or
rendered is named, not guessed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..core.profiles import Profile
from ..core.reconstruct import ReconstructionError, reconstruct_output_ids
from ..core.render import RenderError
from ..core.responses import ResponseError
from ..core.tokenizer import Tokenizer

__all__ = ["TURN_MODES", "earlier_turns"]

TURN_MODES = ("last", "all")


def earlier_turns(messages: Sequence[Mapping], tools: Sequence | None, kwargs: Mapping[str, Any] | None,
                  profile: Profile, tokenizer: Tokenizer, renderer) -> tuple[list[tuple[int, list[int], list[int]]], list[str]]:
    """(turns, problems): ``(i, prompt ids, output ids)`` for each assistant turn ``messages[i]`` (the turns
    before the sample's own output), its prompt rendered by ``renderer`` (a PromptJudge) for that turn.
    export.py makes each a training record."""
    turns, problems = [], []
    for i, message in enumerate(messages):
        if i == 0 or not isinstance(message, Mapping) or message.get("role") != "assistant":
            continue
        try:
            prompt = renderer.ids(messages[:i], tools, kwargs)
            output = reconstruct_output_ids({**message, "finish_reason": "stop"}, profile, tokenizer)
        except (RenderError, ResponseError, ReconstructionError, ValueError) as e:
            problems.append(f"messages[{i}]: {e}")
            continue
        turns.append((i, prompt, output))
    return turns, problems
