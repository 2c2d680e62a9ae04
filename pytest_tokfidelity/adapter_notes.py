"""Every adapter over another library's internals decided once, in the controlling process, before
the first test: the lines to print for those found outside the releases they were checked against
(``pipeline.core.checked_versions``). A locked install prints none."""

from __future__ import annotations

__all__ = ["adapter_notes"]


def adapter_notes() -> list[str]:
    from pipeline.core import template_adapter
    from pipeline.core.checked_versions import notes, usable
    from pipeline.core.tokenizer import tiktoken_adapter, tokenizers_adapter

    from . import pytest_adapter, snapshots, xdist_adapter

    for adapter in (pytest_adapter, snapshots, xdist_adapter, template_adapter, tiktoken_adapter, tokenizers_adapter):
        usable(adapter.CHECKED, adapter.self_test)
    return notes()
