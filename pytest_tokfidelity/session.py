"""The one object behind the fidelity suite in each process: datasets, verdicts, counts.

Every process that runs tests (a lone pytest, or each xdist worker) holds one
``FidelitySession``: it indexes the selected datasets for collection, loads each dataset's
tokenizer and profile once, judges upcoming samples in background threads while pytest runs
the tests before them, and counts outcomes. The summary and the gate records belong to the
controlling process (report.py).
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from pipeline.fidelity import BAD_INPUT, EXACT, POLICY, Judge, Verdict
from pipeline.golden import GoldenError, GoldenSample, Manifest, find_datasets, load_manifest

from .counts import bump, new_counts
from .index import SampleIndex
from .snapshots import DiagnosisExtension, snapshot_file, stored_names

__all__ = ["FidelitySession", "session_of", "PLUGIN_NAME", "SUITE_NODE_NAME", "DATASET_CHECKS"]

PLUGIN_NAME = "tokfidelity-session"  # the session is registered under this name (looked up by name:
# pytester's in-process runs re-import modules, so a module-level key would not survive them)
# The suite's node path: a name under the rootdir, so that node ids read
# ``tokfidelity_suite.py::test_fidelity[<DATASET>/<id>]`` and only the rootdir's conftest
# applies (the package's own folder may sit below a project conftest).
SUITE_NODE_NAME = "tokfidelity_suite.py"
DATASET_CHECKS = ("test_manifest", "test_vocabulary", "test_special_tokens", "test_stop_tokens")
SAMPLE_TEST = "test_fidelity"
CHUNK = 32  # samples judged by one background task
AHEAD = 512  # samples judged ahead of the running test, at most: memory stays flat
WORKER_OUTPUT_KEY = "tokfidelity_counts"  # a worker's counts, sent to the controller
WORKER_TOKENIZERS_KEY = "tokfidelity_tokenizers"  # per dataset: the tokenizer fingerprint and profile a worker judged with


def session_of(config: pytest.Config) -> "FidelitySession":
    return config.pluginmanager.get_plugin(PLUGIN_NAME)


class SuiteModule(pytest.Module):
    """The fidelity suite (``pytest_tokfidelity.suite``), collected under a node path in the rootdir."""

    def _getobj(self):
        import importlib

        return importlib.import_module("pytest_tokfidelity.suite")


def _fallback_manifest(path: Path) -> Manifest | None:
    """The usable part of an invalid manifest: profile and tokenizer, everything else default."""
    import json

    from pipeline.profiles import PROFILES
    from pipeline.views import VIEWS

    try:
        raw = json.loads((path / "manifest.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
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

    def __init__(self, position: int, path: Path, tokenizer_override: str | None, view_override: str | None):
        self.position = position
        self.dir = path
        self.name = path.name
        self.tokenizer_override = tokenizer_override
        self.view_override = view_override
        self.manifest: Manifest | None = None
        self.manifest_error: str | None = None
        try:
            self.manifest = load_manifest(path)
        except GoldenError as e:
            self.manifest_error = str(e)
            self.manifest = _fallback_manifest(path)  # so the samples still run; test_manifest fails
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
            self._index = SampleIndex(self.dir / "samples.jsonl")
        return self._index

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
        from pipeline.profiles import bind_profile
        from pipeline.tokenizer import load_tokenizer

        try:
            tokenizer = load_tokenizer(self.tokenizer_spec)
        except Exception as e:  # noqa: BLE001 - shown in the dataset's tests, never crashing the session
            return None, f"{self.dir / 'manifest.json'}: field 'tokenizer': cannot load {self.tokenizer_spec!r}: {e}"
        try:
            profile = bind_profile(self.manifest.profile, tokenizer)
        except Exception as e:  # noqa: BLE001
            return None, f"{self.dir / 'manifest.json'}: field 'profile': {e}"
        return Judge(profile, tokenizer, self.view, self.manifest.accept), None

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

    # -- whole-dataset checks: noted while judging, or one scan when that did not see every sample
    def note(self, position: int, sample: GoldenSample, verdict: Verdict | BaseException) -> Verdict | BaseException:
        """Run the vocabulary and stop checks on a sample judged in this process (thread-safe).
        An exact sample's ids came out of the tokenizer, so only others need the vocabulary
        check; a sample whose judging failed on ids outside the vocabulary gets that verdict."""
        from pipeline.fidelity import stop_token_problems, vocabulary_problems

        judge = self._setup[0]
        one = (sample,)
        if not (isinstance(verdict, Verdict) and verdict.kind == EXACT):
            problems = vocabulary_problems(one, judge.tokenizer)
            if problems:
                self._noted_problems[0].extend(problems)
                if isinstance(verdict, BaseException):
                    verdict = Verdict(sample.id, sample.line, BAD_INPUT, len(sample.output_ids), report=f"{self.index.path}: {problems[0]}")
        self._noted_problems[1].extend(stop_token_problems(one, judge.profile, judge.tokenizer))
        self._noted.add(position)
        return verdict

    def scan(self) -> tuple[list[str], list[str]]:
        """(vocabulary problems, stop-token problems) over every readable sample (first 10 each)."""
        if self._scan is None:
            if len(self._noted) < len(self.index):
                from pipeline.fidelity import stop_token_problems, vocabulary_problems

                judge, _ = self.setup()
                samples = [s for s in (self.index.read(p, self.fd) for p in range(len(self.index))) if isinstance(s, GoldenSample)]
                self._noted_problems = (
                    vocabulary_problems(samples, judge.tokenizer),
                    stop_token_problems(samples, judge.profile, judge.tokenizer),
                )
            by_line = lambda p: int(p.split(" ", 2)[1])  # noqa: E731 - "line N (...): ..."
            self._scan = tuple(sorted(problems, key=by_line)[:10] for problems in self._noted_problems)
        return self._scan


class FidelitySession:
    """Per-process state of a ``--tokfidelity-dataset`` run, registered as a pytest plugin."""

    def __init__(self, config: pytest.Config, names: list[str], golden_dir: Path):
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
        self.counts: dict[str, dict[str, Any]] = {d.name: new_counts() for d in self.datasets}
        workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")) if self.is_worker else 1
        cpus = os.cpu_count() or 1
        # Threads share the tokenizer's encode (it releases the GIL); TOKFIDELITY_THREADS overrides.
        self.threads = int(os.environ.get("TOKFIDELITY_THREADS") or max(1, min(4, cpus // workers)))
        self._pool: ThreadPoolExecutor | None = None
        self.update_snapshots = bool(getattr(opt, "update_snapshots", False))

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
            callspec = getattr(item, "callspec", None)
            case = None
            if callspec is not None and getattr(item, "originalname", None) == SAMPLE_TEST:
                case = callspec.params["case"]
                self.datasets[case[0]].selected.append(case[1])
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

    def dataset_of_item(self, item: pytest.Item) -> DatasetRun:
        params = item.callspec.params
        return self.datasets[params["case"][0] if "case" in params else params["dataset"]]

    # -- verdicts -------------------------------------------------------------------------------
    def _upcoming(self, ds: DatasetRun, position: int) -> list[int]:
        """Positions of ds's samples this process runs after ``position``, in order (at most AHEAD)."""
        if self.is_worker:
            return self._queued_positions(ds, AHEAD) or []
        rank = ds.rank.get(position, 0)  # a lone process runs its selected items in order
        return ds.selected[rank + 1 : rank + 1 + AHEAD]

    def _schedule(self, ds: DatasetRun, todo: list[int]) -> None:
        """Judge ``todo`` in the background, in chunks, while pytest runs the tests before them."""
        index, fd = ds.index, ds.fd

        def judge_chunk(chunk: list[int]) -> dict[int, Verdict | BaseException]:
            judge, why = ds.setup()  # the first chunk may load the tokenizer, off the main thread
            out: dict[int, Verdict | BaseException] = {}
            if judge is None:  # the sample tests say why, without asking for a verdict
                return out
            for p in chunk:
                try:
                    sample = index.read(p, fd)
                    try:
                        verdict = judge(sample)
                    except Exception as e:  # noqa: BLE001 - re-raised in the sample's own test
                        verdict = e
                    if type(sample) is GoldenSample:
                        verdict = ds.note(p, sample, verdict)
                except Exception as e:  # noqa: BLE001
                    verdict = e
                out[p] = verdict
            return out

        if self._pool is None:
            self._pool = ThreadPoolExecutor(self.threads, thread_name_prefix="tokfidelity")
        for start in range(0, len(todo), CHUNK):
            chunk = todo[start : start + CHUNK]
            future = self._pool.submit(judge_chunk, chunk)
            for p in chunk:
                ds.scheduled[p] = future

    def _verdict(self, ds: DatasetRun, position: int) -> Verdict | BaseException:
        scheduled = ds.scheduled
        if position not in scheduled:
            self._schedule(ds, [position])
        future = scheduled.pop(position)
        if len(scheduled) < AHEAD // 2:  # keep the background threads ahead of the tests
            more = [p for p in self._upcoming(ds, position) if p not in scheduled and p != position]
            if more:
                self._schedule(ds, more)
        return future.result()[position]

    def check_sample(self, case: tuple[int, int], request: pytest.FixtureRequest) -> None:
        ds = self.datasets[case[0]]
        position = case[1]
        counts = self.counts[ds.name]
        judge, why = ds.setup()
        counts["samples"] += 1
        if judge is None:
            counts["bad_input"] += 1
            pytest.fail(f"not verified: {why.splitlines()[0]} (see test_manifest[{ds.name}])", pytrace=False)
        verdict = self._verdict(ds, position)
        if isinstance(verdict, BaseException):
            counts["bad_input"] += 1
            raise verdict
        counts["tokens"] += verdict.n_tokens
        kind = verdict.kind
        if kind == BAD_INPUT:
            counts["bad_input"] += 1
            pytest.fail(verdict.report, pytrace=False)
        counts["hunks"] += verdict.hunks
        if kind in (EXACT, POLICY):
            counts["exact" if kind == EXACT else "policy"] += 1
            if kind == POLICY:
                policy_hunks = counts["policy_hunks_by_class"]
                for cls, n in verdict.hunks_by_class.items():
                    policy_hunks[cls] = policy_hunks.get(cls, 0) + n
            if ds.stored and request.node.name in ds.stored:
                counts["stale_snapshots"].append(request.node.name)
            return
        snapshot = request.getfixturevalue("snapshot").use_extension(DiagnosisExtension)
        if snapshot == verdict.signature:
            counts["known"] += 1
            bump(counts["known_by_class"], verdict.classes)
            return
        counts["new"] += 1
        bump(counts["new_by_class"], verdict.classes)
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

    # -- dataset checks -------------------------------------------------------------------------
    def check_dataset(self, name: str, dataset: int) -> None:
        ds = self.datasets[dataset]
        if name == "test_manifest":
            problems = [ds.manifest_error] if ds.manifest_error else []
            if ds.manifest is not None:
                from pipeline.fidelity import policy_problems

                problems += [f"{ds.dir / 'manifest.json'}: field {p}" for p in policy_problems(ds.manifest.accept)]
            _, why = ds.setup()
            if why:
                problems.append(why)
            if ds.index.missing:
                problems.append(f"{ds.index.path}: missing: every dataset folder needs a samples.jsonl")
            if problems:
                pytest.fail("\n".join(problems), pytrace=False)
            return
        judge, why = ds.setup()
        if judge is None:
            pytest.fail(f"cannot check {ds.name}: {why}", pytrace=False)
        if name == "test_special_tokens":
            from pipeline.audit import audit

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
            output[WORKER_OUTPUT_KEY] = self.counts
            # so that the controller writes gate records without loading each tokenizer again
            output[WORKER_TOKENIZERS_KEY] = {ds.name: facts for ds in self.datasets if (facts := ds.judged_with())}
