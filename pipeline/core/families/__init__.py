"""The model families tokfidelity knows: each module holds its profiles (and, where its server's
parsers differ from Kimi's, their restatement). Adding a family is adding its module to this list."""

from __future__ import annotations

from . import deepseek_v3, gpt_oss, kimi, qwen3
from . import llama3, qwen3_coder
from .spec import ProfileSpec, ToolCallFormat

__all__ = ["ProfileSpec", "ToolCallFormat", "SPECS"]

SPECS: tuple[ProfileSpec, ...] = (*kimi.SPECS, *qwen3.SPECS, *deepseek_v3.SPECS, *gpt_oss.SPECS,
                               *llama3.SPECS, *qwen3_coder.SPECS)
