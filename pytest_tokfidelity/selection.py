"""The fidelity suite's files on the command line: which datasets its paths name, which paths the
run collects, and the node id of a dataset's file.

A dataset ``golden/B3/`` is collected as ``golden/B3/samples.jsonl`` (collection.py). A path to that
file or to the dataset's folder, as a node id printed by a run (``golden/B3/samples.jsonl::b3-0005``)
or typed, names the dataset: ``pytest golden/B3/samples.jsonl::b3-0005`` runs that sample without
``--tokfidelity-dataset``. A path is read from an argument as pytest's ``resolve_collection_argument``
reads it (before the first ``[``, before the first ``::``); which tests it selects is pytest's own
business.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

# pipeline.core.golden's names, not imported: this module runs in every pytest run that gives paths
# (implied_datasets), where a project's own package named ``pipeline`` may shadow tokfidelity's (plugin.py)
SAMPLES_FILE, MANIFEST_FILE = "samples.jsonl", "manifest.json"

__all__ = ["dataset_file", "names_test", "arg_paths", "implied_datasets", "collected_paths", "selects_tests", "file_nodeid", "pasted_path"]


def dataset_file(dataset_dir: Path) -> Path:
    """The file a dataset is collected as: its ``samples.jsonl``; its ``manifest.json`` when that is missing
    or not a file (its checks then say so; pytest cannot collect a path that is not a file)."""
    samples = dataset_dir / SAMPLES_FILE
    return samples if samples.is_file() or not (dataset_dir / MANIFEST_FILE).is_file() else dataset_dir / MANIFEST_FILE


def _absolute(path: str | os.PathLike, base: Path) -> Path:
    return Path(os.path.abspath(base / path))


def arg_paths(config: pytest.Config) -> list[tuple[Path, bool]]:
    """(absolute path, whether the argument names tests inside it) per path given on the command line."""
    if config.args_source != pytest.Config.ArgsSource.ARGS or config.option.pyargs:
        return []
    out = []
    for arg in config.args:
        path, parts, _ = arg.partition("[")[0].partition("::")
        out.append((_absolute(path, config.invocation_params.dir), bool(parts)))
    return out


def implied_datasets(paths: list[tuple[Path, bool]], golden_dir: Path) -> list[str]:
    """Names of the datasets of ``golden_dir`` whose ``samples.jsonl`` or folder is among ``paths``."""
    names = []
    for path, _ in paths:
        folder = path.parent if path.name == SAMPLES_FILE else path
        if folder.parent == golden_dir and ((folder / SAMPLES_FILE).is_file() or (folder / MANIFEST_FILE).is_file()):
            if folder.name not in names:
                names.append(folder.name)
    return names


def collected_paths(config: pytest.Config, datasets: list) -> list[str]:
    """What to add to ``config.args`` so that pytest collects every dataset of the run: all of their
    files when no path was given, else those of datasets no given path leads to (a folder above a
    dataset's, the dataset's folder, or something in it)."""
    files = [(ds, dataset_file(ds.dir)) for ds in datasets]
    if config.args_source != pytest.Config.ArgsSource.ARGS:
        return [str(f) for _, f in files]
    given = [p for p, _ in arg_paths(config)]
    base = config.invocation_params.dir
    out = []
    for ds, f in files:
        folder = _absolute(ds.dir, base)
        if not any(folder.is_relative_to(p) or p.is_relative_to(folder) for p in given):
            out.append(str(f))
    return out


def selects_tests(config: pytest.Config, dataset_dir: Path) -> bool:
    """Does a command-line argument select single tests of this dataset (``samples.jsonl::NAME``)?"""
    file = _absolute(dataset_file(dataset_dir), config.invocation_params.dir)
    return any(parts and path == file for path, parts in arg_paths(config))


def names_test(config: pytest.Config, file_path: Path, name: str) -> bool:
    """Does a command-line argument name the test ``name`` of the file at ``file_path`` (``PATH::NAME``)?"""
    if config.args_source != pytest.Config.ArgsSource.ARGS or config.option.pyargs:
        return False
    file = _absolute(file_path, config.invocation_params.dir)
    for arg in config.args:
        path, *parts = arg.partition("[")[0].split("::")
        if parts == [name] and _absolute(path, config.invocation_params.dir) == file:
            return True
    return False


def pasted_path(config: pytest.Config, path: Path) -> str:
    """``path`` as a command printed for pasting must name it: pytest resolves a path argument against the
    folder it was started in (not the rootdir, against which it makes node ids), so relative to that folder
    when the path is inside it, else absolute."""
    path = _absolute(path, config.invocation_params.dir)
    base = config.invocation_params.dir
    return path.relative_to(base).as_posix() if path.is_relative_to(base) else path.as_posix()


def file_nodeid(config: pytest.Config, path: Path) -> str:
    """The node id of a dataset's file at ``path``: relative to the rootdir as pytest makes it; outside
    the rootdir, relative to the folder pytest was started in, else absolute (so that it still pastes back)."""
    path = _absolute(path, config.invocation_params.dir)
    for base in (config.rootpath, config.invocation_params.dir):
        if path.is_relative_to(base):
            return path.relative_to(base).as_posix()
    return path.as_posix()
