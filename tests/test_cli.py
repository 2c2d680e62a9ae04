"""The tokfidelity command itself: its help, and exit codes from one place."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

from pipeline.cli import COMMANDS, main

ROOT = Path(__file__).resolve().parent.parent


def test_help_lists_every_command_with_what_it_does(capsys):
    assert main([]) == 2
    out = capsys.readouterr().out
    for name, module_name in COMMANDS.items():
        help_line = importlib.import_module(f"pipeline.commands.{module_name}").HELP
        assert name in out and help_line.split()[0] in out, name
    assert "(see tokfidelity" not in out


def test_help_imports_no_heavy_library():
    code = ("import sys\nfrom pipeline.cli import main\ntry:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
            "print(sorted(m for m in ('torch', 'httpx', 'transformers', 'tiktoken', 'tokenizers') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert done.stdout.strip().splitlines()[-1] == "[]", done.stderr


def test_commands_return_named_exit_codes_only():
    """Every command returns cli's EXIT_* constants, never a bare 0/1/2/3."""
    bare = []
    for path in sorted((ROOT / "pipeline" / "commands").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Return) and node.value is not None:
                values = node.value.elts if isinstance(node.value, ast.Tuple) else [node.value]
                for value in values:
                    parts = [value.body, value.orelse] if isinstance(value, ast.IfExp) else [value]
                    bare += [f"{path.name}:{node.lineno}" for p in parts if isinstance(p, ast.Constant) and isinstance(p.value, int)]
    assert bare == []
