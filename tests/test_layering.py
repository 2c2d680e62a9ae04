"""pipeline/ is the library: it never imports pytest, its layers import one way with no cycle inside
any of them, and the plugin costs nothing when unused."""

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


def _modules(root: Path, tops=("pipeline", "pytest_tokfidelity")) -> dict[str, Path]:
    """Every module under ``tops`` (a package by its own name), found on disk: whatever modules exist."""
    found = {}
    for top in tops:
        for path in sorted((root / top).rglob("*.py")):
            found[".".join(path.relative_to(root).with_suffix("").parts).removesuffix(".__init__")] = path
    return found


def _import_edges(path: Path, module: str, modules: dict[str, Path]):
    """The modules of ``modules`` that ``path`` imports, wherever the import stands: at module level,
    under ``if TYPE_CHECKING:`` (a type named is a dependency too), or inside a function (deferring an
    import does not make a cycle go away, it only moves the failure to run time). ``from P import n``
    is an edge to module ``P.n`` when there is one, else to ``P``."""
    import ast

    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names if alias.name in modules)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1] + ([base] if base else []))
            for alias in node.names:
                if f"{base}.{alias.name}" in modules:
                    yield f"{base}.{alias.name}"
                elif base in modules:
                    yield base


def import_cycles(modules: dict[str, Path], layer_of) -> list[list[str]]:
    """Each set of modules of one layer that import each other round (a strongly connected component
    of the layer's import graph, more than one module), as a cycle's path ``a -> b -> ... -> a``."""
    graph = {m: sorted({t for t in _import_edges(p, m, modules) if t != m and layer_of(t) == layer_of(m)})
             for m, p in modules.items() if layer_of(m) is not None}
    order: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    components = []

    def visit(v: str) -> None:  # Tarjan's algorithm; a layer is a few dozen modules deep at most
        order[v] = low[v] = len(order)
        stack.append(v)
        for w in graph[v]:
            if w not in order:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], order[w])
        if low[v] == order[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                components.append(set(component))

    for v in graph:
        if v not in order:
            visit(v)
    return [_cycle_path(graph, component) for component in components]


def _cycle_path(graph: dict[str, list[str]], component: set[str]) -> list[str]:
    """One cycle through ``component``, from its first module (by name) back to it: what to break."""
    start = min(component)
    paths = {start: [start]}
    queue = [start]
    while queue:
        v = queue.pop(0)
        for w in graph[v]:
            if w == start:
                return paths[v] + [start]
            if w in component and w not in paths:
                paths[w] = paths[v] + [w]
                queue.append(w)
    return sorted(component)


def test_no_import_cycle_inside_a_layer():
    """Inside every layer of ``ALLOWED`` (the core with its subpackages, stages, commands, reporting, the
    plugin), modules import one way too: a module can be read, and changed, knowing only what it imports."""
    modules = _modules(ROOT)
    assert {_layer(m) for m in modules} >= set(ALLOWED)  # every layer is found on disk, so each is checked
    cycles = import_cycles(modules, _layer)
    assert cycles == [], "break these cycles (a leaf module for what both need, or pass the object down):\n" + "\n".join(
        " -> ".join(c) for c in cycles)


def test_a_cycle_through_a_deferred_import_is_found(tmp_path):
    """The check above sees a cycle made by an import inside a function, or under TYPE_CHECKING, and names
    its modules; modules importing one way are no cycle."""
    pkg = tmp_path / "pipeline" / "core"
    (pkg / "sub").mkdir(parents=True)
    for init in (tmp_path / "pipeline", pkg, pkg / "sub"):
        (init / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from . import b\n")
    (pkg / "b.py").write_text("def f():\n    from .sub.c import g\n")
    (pkg / "sub" / "c.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..a import A\n")
    (pkg / "d.py").write_text("from .a import A\nfrom .sub import c\n")
    modules = _modules(tmp_path, ("pipeline",))
    assert import_cycles(modules, _layer) == [["pipeline.core.a", "pipeline.core.b", "pipeline.core.sub.c", "pipeline.core.a"]]
    (pkg / "b.py").write_text("")
    assert import_cycles(modules, _layer) == []


def test_code_fingerprint_covers_every_core_module():
    from pipeline.core.fingerprints import code_file_hashes

    hashed = set(code_file_hashes())
    core = {p.relative_to(ROOT).as_posix() for p in (ROOT / "pipeline" / "core").rglob("*.py")}
    plugin = {p.relative_to(ROOT).as_posix() for p in (ROOT / "pytest_tokfidelity").rglob("*.py")}
    assert core | plugin <= hashed
    assert not any(name.startswith(("pipeline/stages", "pipeline/commands")) for name in hashed)


def _python_files(folder: Path) -> list[Path]:
    """The Python files of a folder: ``*.py``, and the executable scripts without a suffix whose first line names python."""
    out = []
    for path in sorted(folder.rglob("*")):
        if not path.is_file() or "__pycache__" in path.parts:
            continue
        if path.suffix == ".py" or (not path.suffix and path.read_bytes()[:64].startswith(b"#!") and b"python" in path.read_bytes()[:64]):
            out.append(path)
    return out


def test_scripts_and_bench_never_import_the_tests():
    """The scripts and the bench run without the test suite: what they share with it lives in scripts/_support
    (the tests re-export it). Neither a test module, the tests' support packages nor a conftest is imported,
    and tests/ is never put on the path."""
    import ast

    test_modules = {p.stem for p in (ROOT / "tests").glob("*.py")} | {p.name for p in (ROOT / "tests").iterdir() if (p / "__init__.py").is_file()}
    test_modules |= {"conftest", "tests"}
    files = _python_files(ROOT / "scripts") + _python_files(ROOT / "bench")
    assert len(files) > 15 and any(p.name == "trainer_table.py" for p in files)
    bad = []
    for path in files:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level:
                names = [node.module or ""]
            names += [node.args[0].value for node in [node] if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "__import__"
                      and node.args and isinstance(node.args[0], ast.Constant)]
            bad += [f"{path.relative_to(ROOT)}:{node.lineno} imports {n}" for n in names if n.split(".")[0] in test_modules]
            if isinstance(node, ast.Call) and getattr(node.func, "attr", "") in ("insert", "append") and "path" in ast.unparse(node.func) \
                    and '"tests"' in ast.unparse(node).replace("'", '"'):
                bad.append(f"{path.relative_to(ROOT)}:{node.lineno} puts the tests on the path ({ast.unparse(node)})")
            if isinstance(node, ast.For) and '"tests"' in ast.unparse(node.iter).replace("'", '"') and "sys.path" in ast.unparse(node):
                bad.append(f"{path.relative_to(ROOT)}:{node.lineno} puts the tests on the path ({ast.unparse(node.iter)})")
    assert not bad, "scripts and bench must not depend on the tests (move the shared piece to scripts/_support):\n" + "\n".join(bad)
