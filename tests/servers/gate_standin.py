"""A tiny stand-in for ``pipeline.gate`` (helper C's), used only by tests until the real one lands.

``install(monkeypatch, open_)`` puts it in ``sys.modules``; subprocesses started through
``cli_with_gate.py`` with ``TOKFIDELITY_TEST_GATE=open|closed`` get it too.
"""

from __future__ import annotations

import sys
import types
from dataclasses import dataclass


@dataclass(frozen=True)
class GateStatus:
    open: bool
    dataset: str
    message: str
    open_command: str


def module(open_: bool) -> types.ModuleType:
    m = types.ModuleType("pipeline.gate")

    def check_gate(dataset, *, golden_dir=None, tokenizer=None, state_dir=None):
        if open_:
            return GateStatus(True, dataset, f"{dataset}: verified (stand-in)", f"pytest --tokfidelity-dataset={dataset}")
        return GateStatus(False, dataset, f"no passing verification record for {dataset} (stand-in)",
                          f"pytest --tokfidelity-dataset={dataset}")

    m.GateStatus = GateStatus
    m.check_gate = check_gate
    return m


def install(monkeypatch, open_: bool) -> None:
    monkeypatch.setitem(sys.modules, "pipeline.gate", module(open_))
