"""Collection of the fidelity suite: the suite module under the rootdir, its parameters, and
which collected test belongs to which dataset.

The suite (``pytest_tokfidelity/suite.py``) is collected under a node path in the rootdir, so
that node ids read ``tokfidelity_suite.py::test_fidelity[<DATASET>/<id>]``: a ``pytest.Module``
at that path whose ``obj`` is set to the imported suite (pytest's public setter; nothing of
pytest is overridden). Each suite test carries ``(dataset, check)`` in its ``user_properties``,
which travel with every report (xdist included): nothing downstream parses node ids.
"""

from __future__ import annotations

import importlib
from typing import Any

import pytest

__all__ = [
    "SUITE_NODE_NAME", "SAMPLE_TEST", "PROPERTY", "suite_items", "suite_params", "tag", "sample_cases", "dataset_cases",
]

SUITE_NODE_NAME = "tokfidelity_suite.py"
SAMPLE_TEST = "test_fidelity"
PROPERTY = "tokfidelity"  # report.user_properties entry of a suite test: (dataset name, check name)


def suite_items(session: pytest.Session) -> list[pytest.Item]:
    """The suite's items, collected under ``<rootdir>/tokfidelity_suite.py``."""
    module = pytest.Module.from_parent(session, path=session.config.rootpath / SUITE_NODE_NAME)
    module.obj = importlib.import_module("pytest_tokfidelity.suite")
    return list(session.genitems(module))


def suite_params(item: pytest.Item) -> dict[str, Any] | None:
    """The parameters of a fidelity-suite test (None for any other test of the session)."""
    if not isinstance(item, pytest.Function) or item.module is None or item.module.__name__ != "pytest_tokfidelity.suite":
        return None
    callspec = getattr(item, "callspec", None)
    return callspec.params if callspec is not None else None


def tag(item: pytest.Item, dataset: str, check: str) -> None:
    item.user_properties.append((PROPERTY, (dataset, check)))


def sample_cases(datasets, sample_limit: int | None, shard=None) -> tuple[list[tuple[int, int]], list[str]]:
    """(dataset position, sample position) per sample test, and its id ``DATASET/<sample name>``;
    ``shard`` (``--tokfidelity-shard``): only the samples whose name hashes to it."""
    keys, ids = [], []
    for ds in datasets:
        index = ds.index
        positions = index.subset(sample_limit) if sample_limit else range(len(index))
        if shard is not None:
            positions = [p for p in positions if shard.holds(index.name(p))]
        for p in positions:
            keys.append((ds.position, p))
            ids.append(f"{ds.name}/{index.name(p)}")
    return keys, ids


def dataset_cases(datasets) -> tuple[list[int], list[str]]:
    return [d.position for d in datasets], [d.name for d in datasets]
