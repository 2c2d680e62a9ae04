"""Checks ``build`` runs on every training record before it is exported.

* ``prompt_check``: the prompt-side twin of generate's completion ``check``. A server counts the prompt it
  fed the model in ``usage.prompt_tokens``; ``build`` renders the same conversation, so the two lengths must
  agree: ``ok`` when they do, ``prompt_mismatch`` when they do not (the server's template, tool
  declarations or default system turn differ from ours: the record's prompt ids are not what the model
  saw), ``unknown`` when the record carries no integer ``usage.prompt_tokens``.
* ``MaskAudit``: the loss-mask audit. Per record: the mask is not all zero; a sample that stopped ends
  with the profile's stop token and that token is supervised; no prompt position (the generation
  prompt's prefilled ``<think>`` included) is supervised; samples cut at the length limit are kept or
  dropped by ``--length-cut`` (reconstructed ones only: ids from the engine are exact and always kept);
  earlier assistant turns that the chat template re-renders differently from how the model generated
  them (Kimi K2.5 drops the reasoning of turns before the last plain answer) are reported: they are
  prompt, so their tokens are unsupervised.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..core.profiles import Profile
from ..core.reconstruct import ReconstructionError, reconstruct_output_ids
from ..core.responses import ResponseError

__all__ = ["PROMPT_CHECKS", "prompt_check", "LENGTH_CUT_MODES", "MaskAudit", "history_rerendered"]

PROMPT_CHECKS = ("ok", "prompt_mismatch", "unknown")
LENGTH_CUT_MODES = ("drop", "keep")


def prompt_check(rendered_len: int, usage: Any) -> tuple[str, str | None]:
    """(check, detail) for a rendered prompt of ``rendered_len`` ids against a response's ``usage``."""
    reported = usage.get("prompt_tokens") if isinstance(usage, Mapping) else None
    if type(reported) is not int:
        return "unknown", "the record has no integer usage.prompt_tokens to check the rendered prompt against"
    if reported == rendered_len:
        return "ok", None
    return "prompt_mismatch", (
        f"rendered prompt has {rendered_len} ids but usage.prompt_tokens is {reported} ({rendered_len - reported:+d}): "
        "the server fed the model another prompt (chat template, tool declarations, default system turn)"
    )


def history_rerendered(
    messages: Sequence[Mapping],
    tools: Sequence | None,
    prompt_ids: Sequence[int],
    profile: Profile,
    tokenizer,
    render: Callable[..., list[int]],
) -> list[tuple[int, int]]:
    """Earlier assistant turns whose rendering inside ``prompt_ids`` differs from how they were generated.

    Turn ``i`` was generated after ``render(messages[:i])`` (with the generation prompt) as the ids its
    message stands for (``reconstruct_output_ids``). If those ids are not a prefix of the final prompt, the
    template re-rendered the turn (or what precedes it) differently. Returns ``(message index, index of the
    first prompt id that differs)`` per such turn."""
    out: list[tuple[int, int]] = []
    for i, message in enumerate(messages):
        if i == 0 or not isinstance(message, Mapping) or message.get("role") != "assistant":
            continue
        try:
            generated = render(messages[:i], tools, profile, tokenizer)
            generated += reconstruct_output_ids({**message, "finish_reason": "stop"}, profile, tokenizer)
        except (ValueError, ResponseError, ReconstructionError):  # a turn no engine could have produced
            out.append((i, 0))
            continue
        n = len(generated)
        if list(prompt_ids[:n]) != generated:
            first = next((k for k, (a, b) in enumerate(zip(prompt_ids, generated)) if a != b), min(n, len(prompt_ids)))
            out.append((i, first))
    return out


@dataclass
class MaskAudit:
    """Counts over the records ``build`` considered; ``check`` judges one record."""

    length_cut: str = "drop"
    records: int = 0
    all_zero: int = 0
    stopped: int = 0
    stop_supervised: int = 0
    stop_missing: int = 0
    prompt_supervised: int = 0
    prefill_checked: int = 0
    length_cut_exact_kept: int = 0
    length_cut_kept: int = 0
    length_cut_dropped: int = 0
    multi_turn: int = 0
    history_records: int = 0
    history_turns: int = 0
    history_examples: list[str] = field(default_factory=list)

    def check(self, record: Mapping[str, Any], finish_reason: str | None, exact: bool, profile: Profile) -> str | None:
        """None when the record may be exported; else why it is left out. ``record`` is a training record."""
        self.records += 1
        mask, ids, n_prompt = record["loss_mask"], record["input_ids"], record["prompt_len"]
        if not any(mask):
            self.all_zero += 1
            return "loss-mask audit: the loss mask is all zero (no output ids): nothing to learn"
        if any(mask[:n_prompt]):
            self.prompt_supervised += 1
            return "loss-mask audit: prompt positions are supervised"
        think = profile.ids.get("prompt.think_begin") if profile.spec.thinking else None
        if think is not None:
            if n_prompt == 0 or ids[n_prompt - 1] != think:
                self.prompt_supervised += 1
                return f"loss-mask audit: the prompt does not end with the prefilled {profile.texts['prompt.think_begin']!r}"
            self.prefill_checked += 1
        if finish_reason == "length":
            if exact:
                self.length_cut_exact_kept += 1
            elif self.length_cut == "drop":
                self.length_cut_dropped += 1
                return ("loss-mask audit: reconstructed sample cut at the length limit (its tail may be unverifiable, "
                        "e.g. truncated-utf8); --length-cut keep exports it")
            else:
                self.length_cut_kept += 1
            return None
        self.stopped += 1
        stop_ids = profile.stop_ids
        if ids[-1] not in stop_ids:
            self.stop_missing += 1
            return (f"loss-mask audit: finish_reason {finish_reason!r} but the output does not end with a stop token "
                    f"({' or '.join(str(i) for i in stop_ids)}; {profile.stop_id} is {profile.texts['stop']!r}): "
                    "the model's stop would not be learned")
        if mask[-1] != 1:
            self.stop_missing += 1
            return "loss-mask audit: the stop token is not supervised"
        self.stop_supervised += 1
        return None

    def note_history(self, where: str, turns: list[tuple[int, int]], has_history: bool) -> None:
        if has_history:
            self.multi_turn += 1
        if turns:
            self.history_records += 1
            self.history_turns += len(turns)
            if len(self.history_examples) < 5:
                self.history_examples.append(f"{where}: assistant turn(s) {', '.join(f'messages[{i}] (prompt index {k})' for i, k in turns)}")

    def as_dict(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items()}

    def summary(self) -> str:
        cut = (f"length cut: {self.length_cut_exact_kept} with engine ids kept, "
               f"{self.length_cut_dropped} reconstructed dropped, {self.length_cut_kept} reconstructed kept (--length-cut {self.length_cut})")
        prefill = f" (prefilled <think> checked in {self.prefill_checked})" if self.prefill_checked else ""
        return (
            f"loss-mask audit: {self.records} records; all-zero masks {self.all_zero}; "
            f"stop token supervised {self.stop_supervised}/{self.stopped} stopped ({self.stop_missing} without it); "
            f"prompt supervised {self.prompt_supervised}{prefill}; {cut}; "
            f"multi-turn {self.multi_turn}, of which {self.history_records} re-render {self.history_turns} earlier assistant "
            "turn(s) differently from how they were generated (those tokens are prompt: unsupervised)"
        )
