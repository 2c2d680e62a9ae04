"""The one object behind the fidelity suite in each process: datasets, verdicts, counts.

Every process that runs tests (a lone pytest, or each xdist worker) holds one
``FidelitySession``: it indexes the selected datasets for collection, loads each dataset's
tokenizer and profile once, judges upcoming samples in the background while pytest runs the
tests before them, and counts outcomes. The summary and the gate records belong to the
controlling process (report.py).

Judging is mostly Python work (parsing, decoding, comparing, diagnosing) around the
tokenizer's encode, so judging threads hold the GIL that pytest's own per-test work needs as
well: on 2 cores, 2,000 samples took about 4.0 s with judging threads and 2.8-3.0 s with
judging processes (bench/bench_plugin.py). A lone pytest therefore forks judging processes
(after the tokenizer is loaded, so they share it); an xdist worker, which runs beside
execnet's threads and must not fork, judges on threads, ahead of the items xdist queued for it.
"""

from __future__ import annotations

import os
import sys
import threading
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from pipeline.core.decision import DATASET_CHECKS, Counts
from pipeline.core.fidelity import BAD_INPUT, EXACT, POLICY, Judge, Verdict
from pipeline.core.golden import MANIFEST_FILE, SAMPLES_FILE, GoldenError, GoldenSample, Manifest, find_datasets, load_manifest
from pipeline.core.pins import Pins, golden_file_hashes, sha256_bytes

from .index import SampleIndex
from .snapshots import DiagnosisExtension, snapshot_file, stored_names

__all__ = ["FidelitySession", "session_of", "PLUGIN_NAME", "SUITE_NODE_NAME", "DATASET_CHECKS"]

PLUGIN_NAME = "tokfidelity-session"  # the session is registered under this name (looked up by name:
# pytester's in-process runs re-import modules, so a module-level key would not survive them)
# The suite's node path: a name under the rootdir, so that node ids read
# ``tokfidelity_suite.py::test_fidelity[<DATASET>/<id>]`` and only the rootdir's conftest
# applies (the package's own folder may sit below a project conftest).
SUITE_NODE_NAME = "tokfidelity_suite.py"
SAMPLE_TEST = "test_fidelity"
CHUNK = 32  # samples judged by one background task
AHEAD = 512  # samples judged ahead of the running test, at most: memory stays flat
WORKER_OUTPUT_KEY = "tokfidelity_counts"  # a worker's counts, sent to the controller
WORKER_TOKENIZERS_KEY = "tokfidelity_tokenizers"  # per dataset: the tokenizer fingerprint and profile a worker judged with
WORKER_PINS_KEY = "tokfidelity_pins"  # per dataset: the hashes of what a worker read
PROPERTY = "tokfidelity"  # report.user_properties entry of a suite test: (dataset, check)


@dataclass(slots=True)
class Judged:
    """Verdicts on a chunk of one dataset's samples, and what the whole-dataset checks saw in them."""

    verdicts: dict[int, Verdict | BaseException] = field(default_factory=dict)
    noted: list[int] = field(default_factory=list)  # positions the vocabulary and stop checks looked at
    vocabulary: list[str] = field(default_factory=list)  # problems found by those checks
    stops: list[str] = field(default_factory=list)
    absorbed: bool = False  # set by DatasetRun.absorb, once


def session_of(config: pytest.Config) -> "FidelitySession":
    return config.pluginmanager.get_plugin(PLUGIN_NAME)


class SuiteModule(pytest.Module):
    """The fidelity suite (``pytest_tokfidelity.suite``), collected under a node path in the rootdir."""

    def _getobj(self):
        import importlib

        return importlib.import_module("pytest_tokfidelity.suite")


def _fallback_manifest(path: Path, data: bytes | None) -> Manifest | None:
    """The usable part of an invalid manifest: profile and tokenizer, everything else default."""
    import json

    from pipeline.core.profiles import PROFILES
    from pipeline.core.views import VIEWS

    try:
        raw = json.loads(data.decode("utf-8-sig"))
    except (AttributeError, ValueError):
        return None
    if not isinstance(raw, dict) or raw.get("profile") not in PROFILES or not isinstance(raw.get("tokenizer"), str):
        return None
    view = raw.get("api_view", "sglang")
    return Manifest(
        name=path.name, profile=raw["profile"], tokenizer=raw["tokenizer"], source=str(raw.get("source", "")),
        api_view=view if view in VIEWS else "sglang", path=path, raw=raw,
    )


class DatasetRun:
    """One dataset in one process: its manifest, index, judge and verdicts."""

    explain = None  # (tokenizer, profile) -> the judge's explain callback; set for --tokfidelity-report

    def __init__(self, position: int, path: Path, tokenizer_override: str | None, view_override: str | None):
        self.position = position
        self.dir = path
        self.name = path.name
        self.tokenizer_override = tokenizer_override
        self.view_override = view_override
        self.manifest: Manifest | None = None
        self.manifest_error: str | None = None
        try:  # read once: the bytes parsed are the bytes pinned
            data: bytes | None = (path / MANIFEST_FILE).read_bytes()
        except OSError:
            data = None  # load_manifest says why
        self.manifest_sha256 = sha256_bytes(data) if data is not None else None
        try:
            self.manifest = load_manifest(path, data=data)
        except GoldenError as e:
            self.manifest_error = str(e)
            self.manifest = _fallback_manifest(path, data)  # so the samples still run; test_manifest fails
        self._other_files: dict[str, str] | None = None  # sha256 of the dataset's other files, when indexed
        self._index: SampleIndex | None = None
        self._lock = threading.Lock()
        self._setup: tuple[Judge | None, str | None] | None = None
        self._stored: set[str] | None = None
        self._fd: int | None = None
        self._scan: tuple[list[str], list[str]] | None = None
        self._noted: set[int] = set()
        self._noted_problems: tuple[list[str], list[str]] = ([], [])
        self.selected: list[int] = []  # positions collected as tests, in order
        self.rank: dict[int, int] = {}
        self.scheduled: dict[int, Future] = {}  # position -> the future judging its chunk

    # -- per-process resources, loaded on first use ----------------------------------------
    @property
    def index(self) -> SampleIndex:
        if self._index is None:
            self._index = SampleIndex(self.dir / SAMPLES_FILE)
            self._other_files = golden_file_hashes(self.dir, skip=(MANIFEST_FILE, SAMPLES_FILE))
        return self._index

    def pins(self) -> Pins:
        """The hashes of what this process read of the dataset and its tokenizer."""
        golden = dict(self._other_files or {})
        if self.manifest_sha256 is not None:
            golden[MANIFEST_FILE] = self.manifest_sha256
        if self._index is not None and self._index.sha256 is not None:
            golden[SAMPLES_FILE] = self._index.sha256
        judge = self._setup[0] if self._setup is not None else None
        return Pins(golden, dict(judge.tokenizer.file_digests) if judge is not None else {})

    @property
    def fd(self) -> int:
        if self._fd is None:
            self._fd = os.open(self.index.path, os.O_RDONLY)
        return self._fd

    @property
    def view(self) -> str:
        return self.view_override or (self.manifest.api_view if self.manifest else "sglang")

    @property
    def tokenizer_spec(self) -> str | None:
        return self.tokenizer_override or (self.manifest.tokenizer if self.manifest else None)

    def setup(self) -> tuple[Judge | None, str | None]:
        """(judge, None), or (None, why this dataset's samples cannot be judged). Thread-safe."""
        if self._setup is None:
            with self._lock:
                if self._setup is None:
                    self._setup = self._load()
        return self._setup

    def _load(self) -> tuple[Judge | None, str | None]:
        if self.manifest is None:
            return None, f"the manifest has no usable profile and tokenizer: {self.manifest_error}"
        from pipeline.core.profiles import bind_profile
        from pipeline.core.tokenizer import load_tokenizer

        try:
            tokenizer = load_tokenizer(self.tokenizer_spec)
        except Exception as e:  # noqa: BLE001 - shown in the dataset's tests, never crashing the session
            return None, f"{self.dir / 'manifest.json'}: field 'tokenizer': cannot load {self.tokenizer_spec!r}: {e}"
        try:
            profile = bind_profile(self.manifest.profile, tokenizer)
        except Exception as e:  # noqa: BLE001
            return None, f"{self.dir / 'manifest.json'}: field 'profile': {e}"
        explain = self.explain(tokenizer, profile) if self.explain is not None else None
        return Judge(profile, tokenizer, self.view, self.manifest.accept, explain=explain), None

    @property
    def stored(self) -> set[str]:
        """Names of the reviewed divergences on disk (read once per process)."""
        if self._stored is None:
            self._stored = stored_names(self.dir)
        return self._stored

    def judged_with(self) -> dict[str, str] | None:
        """The tokenizer fingerprint and profile this process judged with (None: never set up)."""
        judge = self._setup[0] if self._setup is not None else None
        if judge is None:
            return None
        return {"fingerprint": judge.tokenizer.fingerprint, "profile": judge.profile.name}

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    # -- judging: on a judging thread or in a judging process; it changes nothing here -----------
    def judge_positions(self, positions: list[int]) -> Judged:
        """Verdicts on the samples at ``positions``, with the vocabulary and stop checks run on
        them. An exact sample's ids came out of the tokenizer, so only others need the vocabulary
        check; a sample whose judging failed on ids outside the vocabulary gets that verdict."""
        from pipeline.core.fidelity import stop_token_problems, vocabulary_problems

        judged = Judged()
        judge, _ = self.setup()  # in a judging process, a dataset set up after the fork loads here
        if judge is None:  # the sample tests say why, without asking for a verdict
            return judged
        index, fd, tokenizer, profile = self.index, self.fd, judge.tokenizer, judge.profile
        verdicts = judged.verdicts
        for p in positions:
            try:
                sample = index.read(p, fd)
                try:
                    verdict = judge(sample)
                except Exception as e:  # noqa: BLE001 - re-raised in the sample's own test
                    verdict = e
                if type(sample) is GoldenSample:
                    one = (sample,)
                    if not (type(verdict) is Verdict and verdict.kind == EXACT):
                        problems = vocabulary_problems(one, tokenizer)
                        if problems:
                            judged.vocabulary += problems
                            # Ids outside the vocabulary are bad input, whatever judging made of them
                            # (a negative id decodes, through Python's indexing, as a token from the end).
                            if isinstance(verdict, BaseException) or verdict.kind != BAD_INPUT:
                                verdict = Verdict(sample.id, sample.line, BAD_INPUT, len(sample.output_ids), report=f"{index.path}: {problems[0]}")
                    judged.stops += stop_token_problems(one, profile, tokenizer)
                    judged.noted.append(p)
            except Exception as e:  # noqa: BLE001
                verdict = e
            verdicts[p] = verdict
        return judged

    # -- whole-dataset checks: noted while judging, or one scan when that did not see every sample
    def absorb(self, judged: Judged) -> None:
        """Keep what the checks saw in a judged chunk (main thread, once per chunk)."""
        if not judged.absorbed:
            judged.absorbed = True
            self._noted.update(judged.noted)
            self._noted_problems[0].extend(judged.vocabulary)
            self._noted_problems[1].extend(judged.stops)

    def scan(self) -> tuple[list[str], list[str]]:
        """(vocabulary problems, stop-token problems) over every readable sample (first 10 each)."""
        if self._scan is None:
            if len(self._noted) < len(self.index):
                from pipeline.core.fidelity import stop_token_problems, vocabulary_problems

                judge, _ = self.setup()
                samples = [s for s in (self.index.read(p, self.fd) for p in range(len(self.index))) if isinstance(s, GoldenSample)]
                self._noted_problems = (
                    vocabulary_problems(samples, judge.tokenizer),
                    stop_token_problems(samples, judge.profile, judge.tokenizer),
                )
            by_line = lambda p: int(p.split(" ", 2)[1])  # noqa: E731 - "line N (...): ..."
            self._scan = tuple(sorted(problems, key=by_line)[:10] for problems in self._noted_problems)
        return self._scan


_FORKED_DATASETS: list[DatasetRun] = []  # in a judging process: the session's datasets as forked


def _die_with_parent(parent: int) -> None:
    """Linux: the kernel kills this process when its parent dies (even by kill -9)."""
    import ctypes
    import signal

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # no prctl: the pool's own pipe watch still ends it, later
        return
    if os.getppid() != parent:  # the parent died before the request took effect
        os._exit(1)


def _adopt(datasets: list[DatasetRun], parent: int) -> None:
    """Start of a judging process: die with the parent, take the forked datasets; interrupts are
    the parent's business."""
    import signal

    global _FORKED_DATASETS
    _die_with_parent(parent)
    _FORKED_DATASETS = datasets
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _judge_in_child(dataset: int, positions: list[int]) -> Judged:
    judged = _FORKED_DATASETS[dataset].judge_positions(positions)
    for p, verdict in judged.verdicts.items():
        if isinstance(verdict, BaseException):
            judged.verdicts[p] = _portable(verdict)
    return judged


def _portable(error: BaseException) -> BaseException:
    """An exception that survives the trip back from a judging process, its traceback as a note."""
    import pickle
    import traceback

    where = "".join(traceback.format_exception(error))
    try:
        error = pickle.loads(pickle.dumps(error))
    except Exception:  # noqa: BLE001 - an exception that does not pickle: keep its type's name and message
        error = RuntimeError(f"{type(error).__qualname__}: {error}")
    error.add_note(f"raised in a judging process:\n{where}")
    return error


class FidelitySession:
    """Per-process state of a ``--tokfidelity-dataset`` run, registered as a pytest plugin."""

    def __init__(self, config: pytest.Config, names: list[str], golden_dir: Path, judges: int | None = None):
        self.config = config
        self.golden_dir = golden_dir
        opt = config.option
        self.sample_limit: int | None = opt.tokfidelity_sample
        self.datasets = [
            DatasetRun(i, p, opt.tokfidelity_tokenizer, opt.tokfidelity_view)
            for i, p in enumerate(find_datasets(golden_dir, names))
        ]
        self.by_name = {d.name: d for d in self.datasets}
        self.is_worker = hasattr(config, "workerinput")
        self.counts: dict[str, Counts] = {d.name: Counts() for d in self.datasets}
        workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")) if self.is_worker else 1
        cpus = os.cpu_count() or 1
        # judging processes (or threads) per pytest process; TOKFIDELITY_JUDGES overrides
        self.judges = judges or max(1, min(4, cpus // workers))
        self.judge_restarts = 0
        self._pool: Executor | None = None
        self._task = None  # (dataset position, sample positions) -> Judged, run by the pool
        self.update_snapshots = bool(getattr(opt, "update_snapshots", False))
        self.results = None  # the ResultsRecorder (results.py) when --tokfidelity-report is given

    # -- collection ---------------------------------------------------------------------------
    def sample_cases(self) -> tuple[list[tuple[int, int]], list[str]]:
        keys, ids = [], []
        for ds in self.datasets:
            index = ds.index
            positions = index.subset(self.sample_limit) if self.sample_limit else range(len(index))
            for p in positions:
                keys.append((ds.position, p))
                ids.append(f"{ds.name}/{index.name(p)}")
        return keys, ids

    def dataset_cases(self) -> tuple[list[int], list[str]]:
        return [d.position for d in self.datasets], [d.name for d in self.datasets]

    @pytest.hookimpl(tryfirst=True)
    def pytest_collection_modifyitems(self, session: pytest.Session, items: list[pytest.Item]) -> None:
        module = SuiteModule.from_parent(session, path=self.config.rootpath / SUITE_NODE_NAME)
        items[:0] = [i for i in session.genitems(module)]

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        for ds in self.datasets:
            ds.selected.clear()
        self.case_of_item = []
        for item in session.items:
            case = None
            params = self._suite_params(item)
            if params is not None:
                if "case" in params and type(params["case"]) is tuple:
                    case = params["case"]
                    self.datasets[case[0]].selected.append(case[1])
                    item.user_properties.append((PROPERTY, (self.datasets[case[0]].name, SAMPLE_TEST)))
                elif type(params.get("dataset")) is int:
                    item.user_properties.append((PROPERTY, (self.datasets[params["dataset"]].name, item.originalname)))
            self.case_of_item.append(case)
        for ds in self.datasets:
            ds.rank = {p: r for r, p in enumerate(ds.selected)}
        if self.is_worker:  # xdist's worker loop, whose queue says which items this process runs next
            self._xdist_worker = next(
                (p for p in self.config.pluginmanager.get_plugins() if type(p).__name__ == "WorkerInteractor"), None
            )

    def _queued_positions(self, ds: DatasetRun, limit: int) -> list[int] | None:
        """Positions of ds's samples queued for this xdist worker, in run order (None: unknown)."""
        worker = getattr(self, "_xdist_worker", None)
        try:
            with worker.torun.lock() as queue:  # xdist internals: a deque of item indices
                pending = list(queue)
            nxt = worker.nextitem_index
        except Exception:  # noqa: BLE001 - another xdist version: fall back to small windows
            return None
        out = []
        for i in ([nxt] if isinstance(nxt, int) else []) + pending:
            case = self.case_of_item[i] if isinstance(i, int) and i < len(self.case_of_item) else None
            if case is not None and case[0] == ds.position:
                out.append(case[1])
                if len(out) >= limit:
                    break
        return out

    @staticmethod
    def _suite_params(item: pytest.Item) -> dict[str, Any] | None:
        """The parameters of a fidelity-suite test (None for any other test of the session)."""
        if not isinstance(item.parent, SuiteModule):
            return None
        callspec = getattr(item, "callspec", None)
        return callspec.params if callspec is not None else None

    def dataset_of_item(self, item: pytest.Item) -> DatasetRun | None:
        """The dataset a fidelity-suite test belongs to (None: another test of the session)."""
        params = self._suite_params(item)
        if params is None:
            return None
        return self.datasets[params["case"][0] if "case" in params else params["dataset"]]

    # -- verdicts -------------------------------------------------------------------------------
    def _upcoming(self, ds: DatasetRun, position: int) -> list[int]:
        """Positions of ds's samples this process runs after ``position``, in order (at most AHEAD)."""
        if self.is_worker:
            return self._queued_positions(ds, AHEAD) or []
        rank = ds.rank.get(position, 0)  # a lone process runs its selected items in order
        return ds.selected[rank + 1 : rank + 1 + AHEAD]

    def _start_judges(self) -> None:
        """Judging processes forked from a lone, single-threaded pytest on Linux; threads
        otherwise (an xdist worker runs beside execnet's threads, forking a multi-threaded
        process can deadlock the child, and macOS system libraries are not fork-safe)."""
        if not self.is_worker and threading.active_count() == 1 and sys.platform == "linux":
            import multiprocessing
            from concurrent.futures.process import ProcessPoolExecutor  # not the package's cached name:
            # pytester's in-process runs drop and re-import the submodule, whose classes must match

            self._pool = ProcessPoolExecutor(
                self.judges, mp_context=multiprocessing.get_context("fork"), initializer=_adopt, initargs=(self.datasets, os.getpid())
            )
            self._task = _judge_in_child
        else:
            self._pool = ThreadPoolExecutor(self.judges, thread_name_prefix="tokfidelity")
            datasets = self.datasets
            self._task = lambda dataset, positions: datasets[dataset].judge_positions(positions)

    def _schedule(self, ds: DatasetRun, todo: list[int]) -> None:
        """Judge ``todo`` in the background, in chunks, while pytest runs the tests before them."""
        ds.index, ds.fd  # opened here, once, before the judges read them
        if self._pool is None:
            self._start_judges()
        for start in range(0, len(todo), CHUNK):
            chunk = todo[start : start + CHUNK]
            future = self._pool.submit(self._task, ds.position, chunk)
            for p in chunk:
                ds.scheduled[p] = future

    def _verdict(self, ds: DatasetRun, position: int) -> Verdict | BaseException:
        from concurrent.futures.process import BrokenProcessPool

        try:
            return self._verdict_once(ds, position)
        except BrokenProcessPool:  # a judging process died (killed, out of memory): judge on threads from here
            self._restart_judges()
            return self._verdict_once(ds, position)

    def _restart_judges(self) -> None:
        """Replace a broken pool of judging processes by judging threads, once; a second loss
        stops the run with one error instead of failing every remaining sample."""
        self.judge_restarts += 1
        if self.judge_restarts > 1:
            pytest.exit("tokfidelity: judging processes died twice; the run stops (see the system log: killed, out of memory?)", returncode=3)
        import warnings

        warnings.warn("tokfidelity: a judging process died; the remaining samples are judged on threads", stacklevel=1)
        self._pool.shutdown(wait=False, cancel_futures=True)
        self._pool = ThreadPoolExecutor(self.judges, thread_name_prefix="tokfidelity")
        datasets = self.datasets
        self._task = lambda dataset, positions: datasets[dataset].judge_positions(positions)
        for ds in self.datasets:
            ds.scheduled.clear()

    def _verdict_once(self, ds: DatasetRun, position: int) -> Verdict | BaseException:
        scheduled = ds.scheduled
        if position not in scheduled:
            self._schedule(ds, [position])
        future = scheduled.pop(position)
        if len(scheduled) < AHEAD // 2:  # keep the judges ahead of the tests
            more = [p for p in self._upcoming(ds, position) if p not in scheduled and p != position]
            if more:
                self._schedule(ds, more)
        judged = future.result()
        ds.absorb(judged)
        return judged.verdicts[position]

    def check_sample(self, case: tuple[int, int], request: pytest.FixtureRequest) -> None:
        ds = self.datasets[case[0]]
        position = case[1]
        counts = self.counts[ds.name]
        judge, why = ds.setup()
        counts.samples += 1
        if judge is None:
            counts.bad_input += 1
            self._record(ds, position, None, "bad-input")
            pytest.fail(f"not verified: {why.splitlines()[0]} (see test_manifest[{ds.name}])", pytrace=False)
        verdict = self._verdict(ds, position)
        if isinstance(verdict, BaseException):
            counts.bad_input += 1
            self._record(ds, position, verdict, "bad-input")
            raise verdict
        counts.tokens += verdict.n_tokens
        kind = verdict.kind
        if kind == BAD_INPUT:
            counts.bad_input += 1
            report = verdict.report
            if not report.startswith(str(ds.index.path)):  # the judge knows no file: name it here
                report = f"{ds.index.path}: {report}"
            self._record(ds, position, verdict, "bad-input")
            pytest.fail(report, pytrace=False)
        counts.hunks += verdict.hunks
        if kind in (EXACT, POLICY):
            if kind == EXACT:
                counts.exact += 1
            else:
                counts.policy += 1
                policy_hunks = counts.policy_hunks_by_class
                for cls, n in verdict.hunks_by_class.items():
                    policy_hunks[cls] = policy_hunks.get(cls, 0) + n
                self._record(ds, position, verdict, "policy")
            if ds.stored and request.node.name in ds.stored:
                counts.stale_snapshots.append(request.node.name)
            return
        snapshot = request.getfixturevalue("snapshot").use_extension(DiagnosisExtension)
        if snapshot == verdict.signature:
            counts.known += 1
            Counts.bump(counts.known_by_class, verdict.classes)
            self._record(ds, position, verdict, "known")
            return
        counts.new += 1
        Counts.bump(counts.new_by_class, verdict.classes)
        self._record(ds, position, verdict, "new")
        stored = request.node.name in ds.stored
        hint = (
            f"It differs from the reviewed divergence stored in {snapshot_file(ds.dir)}."
            if stored
            else "No reviewed divergence is stored for this sample."
        )
        pytest.fail(
            f"{ds.name}/{ds.index.name(position)} (line {verdict.line}): the rebuilt ids differ from the golden ids: "
            f"{', '.join(verdict.classes)}\n{verdict.report}\n{hint} If this divergence is expected, review it and "
            f"record it with `pytest --tokfidelity-dataset={ds.name} --snapshot-update`.",
            pytrace=False,
        )

    def _record(self, ds: DatasetRun, position: int, verdict, outcome: str) -> None:
        if self.results is not None:
            self.results.record(ds, position, verdict, outcome)

    # -- dataset checks -------------------------------------------------------------------------
    def check_dataset(self, name: str, dataset: int) -> None:
        ds = self.datasets[dataset]
        if name == "test_manifest":
            problems = [ds.manifest_error] if ds.manifest_error else []
            if ds.manifest is not None:
                from pipeline.core.fidelity import policy_problems

                problems += [f"{ds.dir / 'manifest.json'}: field {p}" for p in policy_problems(ds.manifest.accept)]
            _, why = ds.setup()
            if why:
                problems.append(why)
            if ds.index.problem:
                problems.append(f"{ds.index.path}: {ds.index.problem}")
            if problems:
                pytest.fail("\n".join(problems), pytrace=False)
            return
        judge, why = ds.setup()
        if judge is None:
            pytest.fail(f"cannot check {ds.name}: {why}", pytrace=False)
        if name == "test_special_tokens":
            from pipeline.core.audit import audit

            report = audit(judge.profile, judge.tokenizer)
            if not report.ok:
                pytest.fail(f"special-token audit of profile {judge.profile.name} on {judge.tokenizer.name}:\n{report.render()}", pytrace=False)
            return
        vocabulary, stops = ds.scan()
        problems = vocabulary if name == "test_vocabulary" else stops
        if problems:
            pytest.fail(f"{ds.index.path}:\n  " + "\n  ".join(problems), pytrace=False)

    # -- hooks: every process ---------------------------------------------------------------------
    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if self._pool is not None:
            self._pool.shutdown(cancel_futures=True)
        for ds in self.datasets:
            ds.close()
        if self.is_worker:
            output = self.config.workeroutput
            output[WORKER_OUTPUT_KEY] = {name: counts.to_dict() for name, counts in self.counts.items()}
            # so that the controller writes gate records without loading each tokenizer again
            output[WORKER_TOKENIZERS_KEY] = {ds.name: facts for ds in self.datasets if (facts := ds.judged_with())}
            output[WORKER_PINS_KEY] = {ds.name: ds.pins().to_dict() for ds in self.datasets if ds._index is not None}
