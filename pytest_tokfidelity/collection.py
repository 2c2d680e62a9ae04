"""Collection of the fidelity suite: the suite module under the rootdir, its parameters, and
which collected test belongs to which dataset.

The suite (``pytest_tokfidelity/suite.py``) is collected under a node path in the rootdir, so
that node ids read ``tokfidelity_suite.py::test_fidelity[<DATASET>/<id>]``: a ``pytest.Module``
at that path whose ``obj`` is set to the imported suite (pytest's public setter; nothing of
pytest is overridden). Each suite test carries ``(dataset, check)`` in its ``user_properties``,
which travel with every report (xdist included): nothing downstream parses node ids.

The whole-dataset checks are plain test functions, parametrized per dataset. The samples are
``SampleItem``s (pytest's way to run tests that are not Python functions, as its doctest items
do), made by the session's ``pytest_pycollect_makeitem`` for ``test_fidelity``: a parametrized
function costs pytest a fixture request, a parameter fixture and the signature of the function
per test, about 0.15 ms of the controlling process per sample (bench/bench_plugin.py), on a
budget of about 1 ms. A sample needs no fixture: its reviewed divergence, when it has one, is
asserted through syrupy's ``SnapshotAssertion`` built here as syrupy's own ``snapshot`` fixture
builds it (snapshots.py).
"""

from __future__ import annotations

import importlib
from typing import Any

import pytest

from .pytest_adapter import CHECKED_VERSION, share_location

__all__ = [
    "SUITE_NODE_NAME", "SAMPLE_TEST", "PROPERTY", "SampleItem", "sample_items", "suite_items", "suite_params", "tag",
    "sample_cases", "dataset_cases",
]

SUITE_NODE_NAME = "tokfidelity_suite.py"
SAMPLE_TEST = "test_fidelity"
PROPERTY = "tokfidelity"  # report.user_properties entry of a suite test: (dataset name, check name)


def suite_items(session: pytest.Session) -> list[pytest.Item]:
    """The suite's items, collected under ``<rootdir>/tokfidelity_suite.py``."""
    module = pytest.Module.from_parent(session, path=session.config.rootpath / SUITE_NODE_NAME)
    module.obj = importlib.import_module("pytest_tokfidelity.suite")
    return list(session.genitems(module))


class SampleItem(pytest.Item):
    """One golden sample's test: ``test_fidelity[<DATASET>/<id>]``, judging sample ``case``
    (dataset position, sample position) when it runs."""

    def __init__(self, *, case: tuple[int, int], **kwargs: Any):
        super().__init__(**kwargs)
        self.case = case
        self.verdict = None  # set when protocol.py fetched the verdict and left the test to pytest

    @property
    def obj(self):
        """The suite's ``test_fidelity`` (its docstring says what a sample test checks; syrupy reads
        the snapshot location's module and test name from it)."""
        return self.parent.obj.test_fidelity

    def runtest(self) -> None:
        from .session import session_of

        session_of(self.config).check_sample(self.case, self)

    def reportinfo(self):
        # line 0, not None: pytest needs a line where a mark skips the item (its skip report points there)
        return self.path, 0, self.name


def sample_items(collector: pytest.Module, cases: list[tuple[int, int]], ids: list[str]) -> list[SampleItem]:
    items = [SampleItem.from_parent(collector, name=f"{SAMPLE_TEST}[{i}]", case=case) for case, i in zip(cases, ids)]
    if items and pytest.__version__ == CHECKED_VERSION:
        # pytest's Item.location (a cached property) makes each item's path relative to the rootdir,
        # 12 us a test, 0.5 s at 40,000 samples; every sample shares the first one's path and
        # reportinfo's line 0, so the others get that answer cached as it would cache its own.
        share_location(items)
    return items


def suite_params(item: pytest.Item) -> dict[str, Any] | None:
    """The parameters of a fidelity-suite test (None for any other test of the session)."""
    if type(item) is SampleItem:
        return {"case": item.case}
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
