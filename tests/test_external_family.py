"""examples/external_family: a model family added from a package of its own, through the entry-point
group ``tokfidelity.families``. Installed into a fresh folder (no network, no build isolation), it is
found by the registry, its golden data passes the suite from a project folder of its own, the gate
opens, and the gate record pins the family's own modules: a change to them closes the gate."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "external_family"
DATASET = "T1_tinychat"


def _env(site: Path | None) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_") and k != "PYTHONPATH"}
    if site is not None:
        env["PYTHONPATH"] = str(site)
    return env


def _run(cwd: Path, site: Path | None, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], cwd=cwd, capture_output=True, text=True, timeout=600, env=_env(site))


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    target = tmp_path_factory.mktemp("site")
    build = tmp_path_factory.mktemp("src") / "external_family"
    shutil.copytree(EXAMPLE, build, ignore=shutil.ignore_patterns("__pycache__", "build", "*.egg-info", ".tokfidelity"))
    done = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation", "--no-index",
                           "--target", str(target), str(build)], capture_output=True, text=True, timeout=300, env=_env(None))
    assert done.returncode == 0, done.stdout + done.stderr
    assert (target / "tinychat_family" / "parsers.py").is_file()
    return target


def test_the_registry_finds_the_family_only_where_it_is_installed(site, tmp_path):
    code = ("from pipeline.core.families import families, family_of\n"
            "from pipeline.core.names import PROFILE_NAMES, VIEW_NAMES\n"
            "f = family_of('tinychat')\n"
            "print(f and f.module, f and f.parsers, 'tinychat' in PROFILE_NAMES, [x.name for x in families()])\n")
    with_it = _run(tmp_path, site, "-c", code)
    assert with_it.returncode == 0, with_it.stderr
    assert "tinychat_family ('tinychat_family.parsers',) True" in with_it.stdout
    assert with_it.stdout.strip().endswith("'tinychat']")  # after the built-in families
    without = _run(tmp_path, None, "-c", code)
    assert without.returncode == 0 and without.stdout.startswith("None None False"), without.stdout + without.stderr


def test_its_golden_data_rebuilds_from_its_case_generator(site, tmp_path):
    done = _run(tmp_path, site, str(EXAMPLE / "make_golden.py"), "--out", str(tmp_path))
    assert done.returncode == 0, done.stderr
    for name in ("manifest.json", "samples.jsonl"):
        assert (tmp_path / DATASET / name).read_bytes() == (EXAMPLE / "golden" / DATASET / name).read_bytes(), name


def test_suite_is_green_the_gate_opens_and_pins_the_family(site, tmp_path):
    project = tmp_path / "project"
    shutil.copytree(EXAMPLE / "golden", project / "golden")
    samples = len((project / "golden" / DATASET / "samples.jsonl").read_text().splitlines())
    run = _run(project, site, "-m", "pytest", f"--tokfidelity-dataset={DATASET}", "-p", "no:randomly", "-p", "no:cacheprovider")
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert f"{DATASET}: {samples} samples: {samples} exact" in run.stdout and "gate: open" in run.stdout
    record = json.loads((project / ".tokfidelity" / "gates" / f"{DATASET}.json").read_text())
    assert record["status"] == "open" and record["profile"] == "tinychat"
    pinned = {k: v for k, v in record["code_files"].items() if k.startswith("family:")}
    parsers = site / "tinychat_family" / "parsers.py"
    assert pinned == {
        "family:tinychat:tinychat_family/__init__.py": hashlib.sha256((site / "tinychat_family" / "__init__.py").read_bytes()).hexdigest(),
        "family:tinychat:tinychat_family/parsers.py": hashlib.sha256(parsers.read_bytes()).hexdigest(),
    }
    tokfidelity = [str(Path(sys.executable).with_name("tokfidelity"))]
    check = subprocess.run([*tokfidelity, "gate", "check", "--dataset", DATASET], cwd=project, capture_output=True, text=True,
                           timeout=300, env=_env(site))
    assert check.returncode == 0, check.stdout + check.stderr

    parsers.write_text(parsers.read_text() + "\n# changed\n")
    changed = subprocess.run([*tokfidelity, "gate", "check", "--dataset", DATASET], cwd=project, capture_output=True, text=True,
                             timeout=300, env=_env(site))
    assert changed.returncode == 1, changed.stdout + changed.stderr
    assert "source family:tinychat:tinychat_family/parsers.py changed" in changed.stdout + changed.stderr


def _fake_distribution(root: Path, entry: str, module_source: str) -> Path:
    (root / "fake_family.py").write_text(module_source)
    info = root / "fake_family-0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: fake-family\nVersion: 0\n")
    (info / "entry_points.txt").write_text(f"[tokfidelity.families]\nfake = {entry}\n")
    return root


@pytest.mark.parametrize("entry, source, message", [
    ("fake_family:NOT_A_FAMILY", "NOT_A_FAMILY = 3\n", "not a tokfidelity Family"),
    ("fake_family:FAMILY",
     "from pipeline.core.families import Family\nfrom pipeline.core.families.qwen3 import SPECS\n"
     "FAMILY = Family('again', SPECS, __name__)\n",
     "profile 'qwen3' is declared by family qwen3 (pipeline.core.families.qwen3) and by family again (fake_family)"),
    ("fake_family:FAMILY", "raise ImportError('no such thing')\n", "cannot be loaded: ImportError: no such thing"),
])
def test_a_bad_entry_point_is_named(tmp_path, entry, source, message):
    (tmp_path / "site").mkdir()
    root = _fake_distribution(tmp_path / "site", entry, source)
    done = _run(tmp_path, root, "-c", "from pipeline.core.families import families\nfamilies()")
    assert done.returncode != 0 and "FamilyError" in done.stderr
    assert message in done.stderr, done.stderr[-2000:]
