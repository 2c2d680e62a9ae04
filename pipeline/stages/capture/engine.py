"""The capture-engine protocol: one prompt in, the engine's exact ids out.

Every engine (local transformers, SGLang over HTTP) turns a ``Prompt`` (pipeline/prompts.py)
and sampling settings into a ``Capture``: the prompt ids it fed the model and the output ids the model
emitted, stop token included, as an engine returns them. ``describe()`` says what the engine
is (model file and its sha256, library versions...) for the dataset manifest.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from ..prompts import Prompt

__all__ = ["Capture", "CaptureEngine"]


@dataclass
class Capture:
    prompt_ids: list[int]
    output_ids: list[int]  # stop token included when the model stopped by itself
    finish_reason: str | dict  # "stop" | "length", or SGLang's {"type": ..., ...}
    meta: dict = field(default_factory=dict)  # per-sample engine facts (seed, timings, ids...)
    response: dict | None = None  # the text the server answered with (a flat message), when it is a server


@runtime_checkable
class CaptureEngine(Protocol):
    name: str

    def capture(self, prompt: Prompt, sampling: dict) -> Capture: ...

    def describe(self) -> dict: ...
