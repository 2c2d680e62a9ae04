"""pipeline/ is the library: it never imports pytest, its layers import one way, and the plugin costs nothing when unused."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_pipeline_never_imports_pytest():
    modules = sorted(
        ".".join(p.relative_to(ROOT).with_suffix("").parts)
        for p in (ROOT / "pipeline").rglob("*.py")
        if p.name != "__main__.py"
    )
    code = (
        "import importlib, sys\n"
        f"for m in {modules!r}: importlib.import_module(m)\n"
        "bad = sorted(m for m in sys.modules if m == 'pytest' or m.startswith(('_pytest', 'pytest_tokfidelity')))\n"
        "assert not bad, bad\n"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert len(modules) > 20


# Imports point one way: commands -> stages -> core, the plugin -> core, and reports
# (pipeline.reporting: drawing results, never deciding them) -> core.
# Each layer may import only from the layers listed for it (and from itself).
ALLOWED = {
    "pipeline.core": {"pipeline.core"},
    "pipeline.reporting": {"pipeline.core", "pipeline.reporting"},
    "pipeline.cases": {"pipeline.core", "pipeline.cases"},
    "pipeline.stages": {"pipeline.core", "pipeline.stages"},
    "pipeline.commands": {"pipeline.core", "pipeline.stages", "pipeline.reporting", "pipeline.commands", "pipeline.cli"},
    "pytest_tokfidelity": {"pipeline.core", "pipeline.reporting", "pytest_tokfidelity"},
}


def _layer(module: str) -> str | None:
    return next((layer for layer in ALLOWED if module == layer or module.startswith(layer + ".")), None)


def _imports(path: Path, module: str):
    """Every project module that ``path`` imports (top level or inside functions), absolute."""
    import ast

    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                parts = parts[: len(parts) - node.level + 1]
                base = ".".join(parts + ([base] if base else []))
            yield base
            yield from (f"{base}.{alias.name}" for alias in node.names)


def test_imports_point_one_way():
    bad = []
    for top in ("pipeline", "pytest_tokfidelity"):
        for path in sorted((ROOT / top).rglob("*.py")):
            module = ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
            layer = _layer(module)
            if layer is None:
                continue
            for target in _imports(path, module):
                target_layer = _layer(target)
                if target_layer is not None and target_layer not in ALLOWED[layer]:
                    bad.append(f"{path.relative_to(ROOT)} imports {target} ({layer} may not use {target_layer})")
    assert not bad, "\n".join(bad)


def test_code_fingerprint_covers_every_core_module():
    from pipeline.core.fingerprints import code_file_hashes

    hashed = set(code_file_hashes())
    core = {p.relative_to(ROOT).as_posix() for p in (ROOT / "pipeline" / "core").rglob("*.py")}
    plugin = {p.relative_to(ROOT).as_posix() for p in (ROOT / "pytest_tokfidelity").rglob("*.py")}
    assert core | plugin <= hashed
    assert not any(name.startswith(("pipeline/stages", "pipeline/commands")) for name in hashed)
