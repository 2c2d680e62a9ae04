"""The plugin object behind the fidelity suite in each process: thin hooks over small modules.

Every process that runs tests (a lone pytest, or each xdist worker) registers one
``FidelitySession`` (plugin.py makes it, once the options are checked). It wires together:
collection (collection.py), one ``DatasetRun`` per dataset (dataset.py: manifest, index, tokenizer
and profile, pins), the prefetching judge (judges.py, with the order in which this process runs its
samples), the suite's assertions and counts (checks.py). What needs it is handed it: each dataset's
test file gets its ``DatasetRun`` and the ``Checks``, which its tests run, and the syrupy extension
reads the dataset from the test's file; nothing looks the session up. The summary and the gate
records belong to the controlling process (report.py), handed the session too.

The garbage collector: a 40,000-sample suite holds a few hundred thousand long-lived objects
(items, their keywords and stashes), which Python's collector would walk on every full
collection during the run and several times more at exit (at 6,000 samples about 0.4 s and
0.5 s of the controlling process, growing with the suite: bench/bench_plugin.py). So they are
frozen (``gc.freeze``, the standard library's way to mark objects as permanent) once collected,
and unfrozen by the last of pytest's cleanups, so that a run inside a longer-lived process
(pytester) leaves nothing behind; at interpreter exit what is left is frozen again, since
nothing is collected any more, only torn down (Python does not promise to finalize objects
still alive at exit; every file the plugin writes is closed long before). The reports pytest
keeps for its summary (three a test, in the terminal reporter) pile up the same way: at 40,000
samples Python's full collections walked them 15 times, 2.4 s of the controlling process, and
pytest's own two collections at the end 0.6 s more. So what has piled up is frozen again every
``FREEZE_EVERY`` tests; cycles made by the run are then kept until the thaw (a passing sample
makes none). While the items are made, the collector is off (at 40,000 samples it walked the
growing heap 4 times then, 0.4 s).
"""

from __future__ import annotations

import atexit
import gc
import os
from pathlib import Path

import pytest

from pipeline.core.decision import Counts
from pipeline.core.fingerprints import code_hashes_by_profile
from pipeline.core.golden import find_datasets

from .checks import Checks
from .collection import GATE_TEST, SAMPLE_TEST, CheckItem, DatasetFile, SampleItem, sample_cases, tag
from .dataset import DatasetRun
from .judge_pools import ForkedCall, can_fork
from .judge_watch import DEFAULT_DEADLINE
from .judges import LoneOrder, Prefetcher, XdistOrder
from .protocol import PlainPasses
from .selection import dataset_file, file_nodeid, names_test, selects_tests
from .sharding import shard_option

from .keys import WORKER_OUTPUT_KEY, WORKER_PINS_KEY, WORKER_TOKENIZERS_KEY

__all__ = ["FidelitySession"]

_FILE_NAMES = ("samples.jsonl", "manifest.json")  # what a dataset is collected as (selection.dataset_file)
FREEZE_EVERY = 2048  # tests between two freezes of what the run keeps (see the module's docstring)


def _thaw() -> None:
    gc.unfreeze()
    atexit.unregister(gc.freeze)  # once per process, however many runs it holds
    atexit.register(gc.freeze)


class FidelitySession:
    """Per-process state of a ``--tokfidelity-dataset`` run, registered as a pytest plugin."""

    def __init__(self, config: pytest.Config, names: list[str], golden_dir: Path, judges: int | None = None, own: tuple = (None, None)):
        self.config = config
        # Thawed by the last of pytest's cleanups: after pytest's own final collections (which would
        # walk the whole heap again), since this plugin's configure runs before theirs registers them.
        config.add_cleanup(_thaw)
        self.golden_dir = golden_dir
        opt = config.option
        self.sample_limit: int | None = opt.tokfidelity_sample
        self.datasets = [
            DatasetRun(i, p, opt.tokfidelity_tokenizer, opt.tokfidelity_view)
            for i, p in enumerate(find_datasets(golden_dir, names))
        ]
        self.prompts = getattr(opt, "tokfidelity_prompts", "on") != "off"  # prompt verdicts (prompt_check.py)
        self.reconstructor, self.renderer = own  # the project's own functions judged (None: tokfidelity's)
        for d in self.datasets:
            d.prompts = self.prompts
            d.reconstructor, d.renderer = own
            d.trainer_spec = getattr(opt, "tokfidelity_trainer", None)
        self.by_name = {d.name: d for d in self.datasets}
        for d in self.datasets:
            d.test_file = file_nodeid(config, dataset_file(d.dir))  # golden/DS/samples.jsonl: what its node ids start with
        self.is_worker = hasattr(config, "workerinput")
        # counts per dataset and view (DatasetRun.count_keys: the dataset's name alone when it has one view)
        self.counts: dict[str, Counts] = {key: Counts() for d in self.datasets for key in d.count_keys}
        workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")) if self.is_worker else 1
        # judging processes (or threads) per pytest process; TOKFIDELITY_JUDGES overrides
        self.judges = judges or max(1, min(4, (os.cpu_count() or 1) // workers))
        timeout = getattr(opt, "tokfidelity_sample_timeout", None)  # seconds a judge may spend on one sample
        deadline = DEFAULT_DEADLINE if timeout is None else timeout or None
        self.prefetcher = Prefetcher(self.datasets, LoneOrder(), self.judges, may_fork=not self.is_worker, deadline=deadline)
        self.checks = Checks(self)
        self.plain_passes = PlainPasses(self)
        self.update_snapshots = bool(getattr(opt, "update_snapshots", False))
        self.results = None  # the ResultsRecorder (results.py) when --tokfidelity-report is given
        self.shard = shard_option(config)  # --tokfidelity-shard=I/N (None: whole datasets)
        self._cases: dict[int, list[tuple[int, int, int]]] = {}  # dataset position -> its sample tests' cases
        self._files = {os.path.abspath(dataset_file(d.dir)): d for d in self.datasets}  # collected as test files
        self._finished = 0  # tests finished, for FREEZE_EVERY
        if not self.is_worker and getattr(opt, "dist", "no") == "no" and not opt.collectonly and can_fork():
            # A lone run: its golden files are indexed in a forked process while this one goes on
            # collecting and loads the tokenizers (pytest_collection); each alone keeps a
            # core busy, and judging waits for both (at 6,000 samples about 0.2 s and 0.3 s).
            # The code that judges is hashed there too, as the run begins, for the gate records (DatasetRun.pins).
            datasets = self.datasets
            profiles = {ds.manifest.profile if ds.manifest else None for ds in datasets}
            indexing = ForkedCall(lambda: ([ds.read_index() for ds in datasets], code_hashes_by_profile(profiles)))
            config.add_cleanup(indexing.cancel)
            for ds in datasets:
                ds.indexed_elsewhere = indexing

    # -- collection ---------------------------------------------------------------------------
    def sample_cases(self, ds: DatasetRun) -> list[tuple[int, int, int]]:
        """(dataset position, sample position) of each sample test of ``ds`` (within the sample limit and shard)."""
        if ds.position not in self._cases:
            self._cases[ds.position] = sample_cases(ds, self.sample_limit, self.shard)
        return self._cases[ds.position]

    def pytest_collect_file(self, file_path: Path, parent: pytest.Collector) -> DatasetFile | None:
        """A dataset's ``samples.jsonl``: its test file (collection.py)."""
        ds = self._files.get(os.path.abspath(file_path)) if file_path.name in _FILE_NAMES else None
        if ds is None:
            return None

        nodeid = None if file_path.is_relative_to(self.config.rootpath) else file_nodeid(self.config, file_path)
        return DatasetFile.from_parent(parent, path=file_path, nodeid=nodeid, dataset=ds, checks=self.checks,
                                       cases=self.sample_cases(ds), gate=names_test(self.config, file_path, GATE_TEST))

    @pytest.hookimpl(tryfirst=True)
    def pytest_collection(self, session: pytest.Session) -> None:
        """Before pytest collects: the tokenizers load, and the judges start on the first samples of the
        datasets run whole (a node id that selects single samples starts none it would not run)."""
        if self.is_worker or self.config.option.collectonly or getattr(self.config.option, "dist", "no") != "no":
            return  # (an xdist controller collects nothing: its workers judge)
        for ds in self.datasets:
            ds.setup()  # first: the indexes may still be being built elsewhere (see __init__)
        self.prefetcher.warm_up([c for ds in self.datasets if not selects_tests(self.config, ds.dir) for c in self.sample_cases(ds)])

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        for ds in self.datasets:
            ds.selected.clear()
        case_of_item: list[tuple[int, int] | None] = []
        for item in session.items:
            case = None
            kind = type(item)
            if kind is SampleItem:
                case = item.case
                selected = self.datasets[case[0]].selected
                if not selected or selected[-1] != case[1]:  # a sample's views follow each other
                    selected.append(case[1])
                tag(item, self.datasets[case[0]].name, SAMPLE_TEST)
            elif kind is CheckItem:
                tag(item, self.datasets[item.dataset].name, item.name)
            case_of_item.append(case)
        for ds in self.datasets:
            ds.rank = {p: r for r, p in enumerate(ds.selected)}
        self.prefetcher.forget_unselected()  # warmed-up samples that -k or --deselect dropped
        if self.is_worker:  # xdist's worker loop, whose queue says which items this process runs next
            from .xdist_adapter import worker_queue

            self.prefetcher.order = XdistOrder(worker_queue(self.config), case_of_item)
        gc.freeze()  # the items live for the whole run (see the module's docstring)

    # -- the suite's tests (each runs its dataset file's Checks: collection.py) ---------------------
    def pytest_runtest_logfinish(self) -> None:
        self._finished += 1
        if self._finished % FREEZE_EVERY == 0:
            gc.freeze()  # the reports pytest keeps (see the module's docstring)

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_protocol(self, item: pytest.Item, nextitem: pytest.Item | None) -> bool | None:
        """A passing sample is reported directly (protocol.py says why and when); any other test: None."""
        return self.plain_passes.run(item, nextitem)

    # -- hooks: every process ---------------------------------------------------------------------
    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        self.prefetcher.close()
        for ds in self.datasets:
            ds.close()
        if self.is_worker:
            output = self.config.workeroutput
            output[WORKER_OUTPUT_KEY] = {name: counts.to_dict() for name, counts in self.counts.items()}
            # so that the controller writes gate records without loading each tokenizer again
            output[WORKER_TOKENIZERS_KEY] = {ds.name: facts for ds in self.datasets if (facts := ds.judged_with())}
            output[WORKER_PINS_KEY] = {ds.name: ds.pins().to_dict() for ds in self.datasets if ds.indexed}
