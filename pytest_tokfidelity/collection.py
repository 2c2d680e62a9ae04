"""Collection of the fidelity suite: each dataset's own ``samples.jsonl`` is the test file.

A dataset ``golden/B3/`` is collected as the file ``golden/B3/samples.jsonl`` (``DatasetFile``,
made by the session's ``pytest_collect_file`` for the datasets of the run, and handed the dataset's
``DatasetRun`` and the process's ``Checks``, which its items run), so that a test's node id
is a path and a name pytest selects by itself: ``golden/B3/samples.jsonl::b3-0005`` runs that
sample, ``golden/B3/samples.jsonl::test_manifest`` that check, ``golden/B3/samples.jsonl`` the
whole dataset. In the file: ``test_manifest``, then one ``SampleItem`` per sample, named by
``sample_item_name``, then the other whole-dataset checks (``CheckItem``), which come after the
samples so that a run that judged every sample has already checked them. Each test carries
``(dataset, check)`` in its ``user_properties``, which travel with every report (xdist included):
nothing downstream parses node ids.

Samples and checks are bare ``pytest.Item``s (pytest's way to run tests that are not Python
functions, as its doctest items do): a parametrized function costs pytest a fixture request, a
parameter fixture and the signature of the function per test, about 0.15 ms of the controlling
process per sample (bench/bench_plugin.py), on a budget of about 1 ms. A sample needs no fixture:
its reviewed divergence, when it has one, is asserted through syrupy's ``SnapshotAssertion`` built
as syrupy's own ``snapshot`` fixture builds it (snapshots.py). Their docstrings are the functions
of ``pytest_tokfidelity/suite.py``.
"""

from __future__ import annotations

import gc
import importlib
from typing import Any

import pytest

from .pytest_adapter import internals_checked, share_location

__all__ = [
    "SAMPLE_TEST", "GATE_TEST", "PROPERTY", "FIRST_CHECKS", "LAST_CHECKS", "DatasetFile", "SampleItem", "CheckItem", "sample_item_name",
    "tag", "sample_cases", "dataset_run_of",
]

SAMPLE_TEST = "test_fidelity"  # the check name of a sample's test (in user_properties, counts, snapshot keys)
PROPERTY = "tokfidelity"  # report.user_properties entry of a suite test: (dataset name, check name)
FIRST_CHECKS = ("test_manifest",)
LAST_CHECKS = ("test_vocabulary", "test_special_tokens", "test_stop_tokens")
GATE_TEST = "test_gate_policy"  # failed by report.py for what keeps a gate closed; collected only when named (``PATH::test_gate_policy``)
_CHECK_NAMES = frozenset(FIRST_CHECKS + LAST_CHECKS + (GATE_TEST,))


def sample_item_name(index: Any, position: int, view: str | None = None) -> str:
    """The name of a sample's test in its file: the sample id (``index.name``: ``line-N`` when it has
    none, ``ID@line-N`` when it repeats one); ``ID[VIEW]`` when the sample is judged under several API
    views (``pytest PATH::ID`` then selects every view of it). An id pytest could not select back (one
    holding ``::``, or a check's name) is named ``line-N`` instead. The one place sample tests are named."""
    name = index.name(position)
    if "::" in name or name in _CHECK_NAMES:
        name = f"line-{index.lines[position]}"
    return f"{name}[{view}]" if view else name


def _suite():
    return importlib.import_module("pytest_tokfidelity.suite")


class DatasetFile(pytest.File):
    """A dataset's ``samples.jsonl`` as a test file: its checks and one test per sample."""

    def __init__(self, *, dataset: Any, checks: Any, cases: list[tuple[int, int, int]], gate: bool = False, **kwargs: Any):
        super().__init__(**kwargs)
        self.dataset = dataset  # the DatasetRun
        self.checks = checks  # the process's Checks (checks.py): what the file's tests assert
        self.cases = cases  # (dataset position, sample position, view position) of each sample test, in order
        self.gate = gate  # the command line names this file's test_gate_policy: collect it (it checks the record)
        self.extra_keyword_matches.add(dataset.name)  # -k DATASET selects its tests, as the folder's name does

    def collect(self) -> list[pytest.Item]:
        ds = self.dataset
        collecting = gc.isenabled()
        gc.disable()  # no collection walks the items while they are made (session.py freezes them once made)
        try:
            index = ds.index
            first = [CheckItem.from_parent(self, name=c, dataset=ds.position) for c in FIRST_CHECKS]
            views = ds.views if ds.view_suffix else None  # ID[VIEW] (DatasetRun.view_suffix says when)
            samples = [SampleItem.from_parent(self, name=sample_item_name(index, p, views and views[v]), case=(d, p, v))
                       for d, p, v in self.cases]
            last = [CheckItem.from_parent(self, name=c, dataset=ds.position) for c in LAST_CHECKS + ((GATE_TEST,) if self.gate else ())]
        finally:
            if collecting:
                gc.enable()
        if samples and internals_checked():
            # pytest's Item.location (a cached property) makes each item's path relative to the rootdir,
            # 12 us a test, 0.5 s at 40,000 samples; every sample shares the first one's path and
            # reportinfo's line 0, so the others get that answer cached as it would cache its own.
            share_location(samples)
        return [*first, *samples, *last]


class SampleItem(pytest.Item):
    """One golden sample's test, judging sample ``case`` (dataset position, sample position, view position:
    which of ``DatasetRun.views``) when it runs."""

    def __init__(self, *, case: tuple[int, int, int], **kwargs: Any):
        super().__init__(**kwargs)
        self.case = case
        self.extra_keyword_matches.add(SAMPLE_TEST)  # -k test_fidelity: the samples; -k 'not test_fidelity': the checks
        self.verdict = None  # set when protocol.py fetched the verdict and left the test to pytest

    @property
    def obj(self):
        """The suite's ``test_fidelity`` (its docstring says what a sample test checks; syrupy reads
        the snapshot location's module from it)."""
        return _suite().test_fidelity

    def runtest(self) -> None:
        self.parent.checks.check_sample(self.case, self)

    def reportinfo(self):
        # line 0, not None: pytest needs a line where a mark skips the item (its skip report points there)
        return self.path, 0, self.name


class CheckItem(pytest.Item):
    """One whole-dataset check of dataset ``dataset`` (its position), named after the check."""

    def __init__(self, *, dataset: int, **kwargs: Any):
        super().__init__(**kwargs)
        self.dataset = dataset

    @property
    def obj(self):
        return getattr(_suite(), self.name)

    def runtest(self) -> None:
        self.parent.checks.check_dataset(self.name, self.dataset)

    def reportinfo(self):
        return self.path, 0, self.name


def dataset_run_of(item: pytest.Item) -> Any:
    """The ``DatasetRun`` a fidelity-suite test belongs to, which its file was handed (None: another test)."""
    kind = type(item)
    return item.parent.dataset if kind is SampleItem or kind is CheckItem else None


def tag(item: pytest.Item, dataset: str, check: str) -> None:
    item.user_properties.append((PROPERTY, (dataset, check)))


def sample_cases(ds: Any, sample_limit: int | None, shard=None) -> list[tuple[int, int, int]]:
    """(dataset position, sample position, view position) per sample test of ``ds``, a sample's views one
    after another; ``shard`` (``--tokfidelity-shard``): only the samples whose name hashes to it. A dataset
    whose views cannot be judged (``DatasetRun.view_error``) has no sample test: test_manifest says why, once."""
    if ds.view_error is not None:
        return []
    index = ds.index
    positions = index.subset(sample_limit) if sample_limit else range(len(index))
    if shard is not None:
        positions = [p for p in positions if shard.holds(index.name(p))]
    if not ds.view_suffix:
        return [(ds.position, p, 0) for p in positions]
    views = range(len(ds.views))
    return [(ds.position, p, v) for p in positions for v in views]
