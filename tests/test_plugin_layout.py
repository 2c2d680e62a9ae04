"""The plugin's shape: small modules, pytest-xdist's internals in one adapter, nothing
of pytest overridden, no module state for judging processes."""

from __future__ import annotations

import ast
import re
from pathlib import Path

PLUGIN = Path(__file__).resolve().parent.parent / "pytest_tokfidelity"
MAX_MODULE_LINES = 350


def sources() -> dict[str, str]:
    return {p.name: p.read_text(encoding="utf-8") for p in sorted(PLUGIN.glob("*.py"))}


def test_no_plugin_module_is_over_350_lines():
    long = {name: n for name, text in sources().items() if (n := len(text.splitlines())) > MAX_MODULE_LINES}
    assert long == {}, "split these into modules that each do one thing"


def test_xdist_internals_only_in_the_adapter():
    reaches = re.compile(r"\btorun\b|nextitem_index|WorkerInteractor|xdist\.remote")
    found = [f"{name}: {m.group(0)}" for name, text in sources().items() if name != "xdist_adapter.py" for m in reaches.finditer(text)]
    assert found == []


def test_nothing_private_of_pytest_is_overridden_and_no_global_state():
    for name, text in sources().items():
        assert "def _getobj" not in text, name
        assert not re.search(r"^\s*global\s", text, re.M), f"{name} keeps state in a module global"


def test_the_session_is_handed_down_never_looked_up():
    """plugin.py makes and registers the session; every other part is handed it, or the dataset it needs
    (collection's DatasetFile carries its DatasetRun and Checks): none asks pytest's plugin manager for it."""
    imports = [n for n in ast.walk(ast.parse(sources()["keys.py"])) if isinstance(n, (ast.Import, ast.ImportFrom))]
    assert [n.module for n in imports if isinstance(n, ast.ImportFrom)] == ["__future__"]  # keys.py is a leaf
    looked_up = re.compile(r"SESSION_PLUGIN|tokfidelity-session|session_of\b")
    found = [name for name, text in sources().items() if name not in ("keys.py", "plugin.py") and looked_up.search(text)]
    assert found == []
