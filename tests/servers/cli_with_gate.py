"""Run ``tokfidelity`` with the gate stand-in when TOKFIDELITY_TEST_GATE is set (tests only)."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
state = os.environ.get("TOKFIDELITY_TEST_GATE")
if state:
    import gate_standin

    sys.modules["pipeline.gate"] = gate_standin.module(state == "open")

from pipeline.cli import main  # noqa: E402

sys.exit(main(sys.argv[1:]))
