"""A newcomer's path, as the README's quick start gives it, run for real: the wheel built from this checkout
installed into a fresh virtualenv (no checkout on the path), the README's golden dataset written into a new
project, the plugin run there, the gate opened and checked. Also: a project with its own ``pipeline``
package gets an error naming the clash, not a confusing import failure."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pytest

from docs_blocks import ROOT, blocks
from test_docs import HUB_NAMES

pytestmark = pytest.mark.slow


def _run(cmd, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=1800, **kw)


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """A fresh virtualenv holding only the wheel built from this checkout and what it declares."""
    work = tmp_path_factory.mktemp("install")
    # Built from a copy of what a source distribution holds: a build writes its egg-info into the tree it
    # builds, which must not be the checkout (on a PYTHONPATH it would pass for an installed tokfidelity).
    source = work / "source"
    for name in ("pipeline", "pytest_tokfidelity"):
        shutil.copytree(ROOT / name, source / name, ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, source / name)
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "PYTHON"))}
    wheel = _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(work / "dist"),
                  str(source)], env=clean)
    assert wheel.returncode == 0, wheel.stderr[-3000:]
    (built,) = (work / "dist").glob("tokfidelity-*.whl")
    env_dir = work / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    pip = _run([str(env_dir / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check", str(built)],
               env=clean)
    assert pip.returncode == 0, pip.stderr[-3000:]
    listed = _run([str(env_dir / "bin" / "python"), "-m", "pip", "show", "tokfidelity"], env=clean)
    assert str(env_dir) in listed.stdout, f"tokfidelity is not installed in the fresh venv:\n{listed.stdout}{listed.stderr}"
    return env_dir


def _user_env(project: Path) -> dict[str, str]:
    roots = [r for r in os.environ.get("TOKFIDELITY_TOKENIZERS", "").split(os.pathsep) if r]
    aliases = project.parent / "hub-names"
    aliases.mkdir(exist_ok=True)
    for alias, folder in HUB_NAMES.items():
        found = next((Path(r) / folder for r in roots if (Path(r) / folder).is_dir()), None)
        if found is not None and not (aliases / alias).exists():
            (aliases / alias).symlink_to(found)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "PYTHON"))}
    env.update(TOKFIDELITY_TOKENIZERS=os.pathsep.join([*roots, str(aliases)]), HF_HUB_OFFLINE="1")
    return env


def _quick_start_dataset() -> str:
    (block,) = [b for b in blocks(ROOT / "README.md") if "mkdir -p golden/hello" in b.code]
    return block.code


def test_the_readme_quick_start_in_a_fresh_install(installed, tmp_path):
    project = tmp_path / "my-project"
    project.mkdir()
    env = _user_env(project)
    made = _run(["bash", "-euo", "pipefail", "-c", _quick_start_dataset()], cwd=project, env=env)
    assert made.returncode == 0, made.stderr
    where = _run([str(installed / "bin" / "python"), "-c", "import pipeline, pytest_tokfidelity; print(pipeline.__file__)"],
                 cwd=tmp_path, env=env)
    assert str(installed) in where.stdout, f"the fresh install did not import its own copy: {where.stdout}{where.stderr}"
    run = _run([str(installed / "bin" / "pytest"), "--tokfidelity-dataset=hello"], cwd=project, env=env)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert "hello: 3 samples: 3 exact" in run.stdout and "gate: open" in run.stdout
    check = _run([str(installed / "bin" / "tokfidelity"), "gate", "check", "--dataset", "hello"], cwd=project, env=env)
    assert check.returncode == 0, check.stdout + check.stderr
    version = _run([str(installed / "bin" / "tokfidelity"), "--version"], cwd=project, env=env)
    assert version.stdout.startswith("tokfidelity ")


def test_a_missing_golden_dir_names_the_rootdir_and_the_option(installed, tmp_path):
    project = tmp_path / "empty-project"
    project.mkdir()
    run = _run([str(installed / "bin" / "pytest"), "--tokfidelity-dataset=hello"], cwd=project, env=_user_env(project))
    assert run.returncode == 4
    assert f"golden dir {project / 'golden'} does not exist" in run.stderr
    assert "--tokfidelity-golden-dir" in run.stderr and f"rootdir {project}" in run.stderr


def test_a_project_pipeline_package_is_named_as_the_clash(installed, tmp_path):
    project = tmp_path / "clash"
    project.mkdir()
    env = _user_env(project)
    assert _run(["bash", "-euo", "pipefail", "-c", _quick_start_dataset()], cwd=project, env=env).returncode == 0
    (project / "pipeline").mkdir()
    (project / "pipeline" / "__init__.py").write_text("STEPS = []\n")
    # `python -m pytest` puts the project folder first on sys.path, so its `pipeline` shadows tokfidelity's.
    run = _run([str(installed / "bin" / "python"), "-m", "pytest", "--tokfidelity-dataset=hello"], cwd=project, env=env)
    assert run.returncode == 4, run.stdout[-2000:] + run.stderr[-2000:]
    assert f"the package 'pipeline' that Python finds first is {project / 'pipeline'}" in run.stderr
    # The way out the message gives works: the `pytest` script with --import-mode=importlib.
    ok = _run([str(installed / "bin" / "pytest"), "--import-mode=importlib", "--tokfidelity-dataset=hello"], cwd=project, env=env)
    assert ok.returncode == 0, ok.stdout[-3000:] + ok.stderr[-3000:]
