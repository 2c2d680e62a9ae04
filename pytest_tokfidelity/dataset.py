"""One dataset in one process: its manifest, sample index, judge, pins and whole-dataset checks.

A ``DatasetRun`` loads what it needs on first use (the index at collection, the tokenizer and
profile when a sample is first judged; a lone pytest builds the index in a forked process while
it loads the tokenizer, session.py) and pins every input as it reads it (pipeline.core.pins):
the manifest from the bytes it parses, ``samples.jsonl`` from the indexing pass, the dataset's other
files when it is indexed, the tokenizer's files as loaded. ``judge_positions`` runs on judging
threads or in judging processes and changes nothing here; ``absorb`` keeps, on the main thread,
what the vocabulary and stop-token checks saw in a judged chunk.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from pipeline.core.fidelity import EXACT, Judge, Verdict
from pipeline.core.own_code import judged_label, snapshot_suffix
from pipeline.core.golden import DEFAULT_VIEW, MANIFEST_FILE, SAMPLES_FILE, GoldenError, GoldenSample, Manifest, load_manifest
from pipeline.core.pins import Pins, golden_file_hashes, sha256_bytes, unreadable_files

from .index import SampleIndex
from .snapshots import SNAPSHOT_BASENAME, snapshot_key, stored_names

__all__ = ["DatasetRun", "Judged"]

SCAN_CHUNK = 256  # samples parsed at a time by the whole-dataset scan


@dataclass(slots=True)
class Judged:
    """Verdicts on a chunk of one dataset's samples, and what the whole-dataset checks saw in them."""

    verdicts: dict[int, Verdict | BaseException] = field(default_factory=dict)
    noted: list[int] = field(default_factory=list)  # positions the vocabulary and stop checks looked at
    vocabulary: list[tuple[int, str]] = field(default_factory=list)  # (line, problem) found by those checks
    stops: list[tuple[int, str]] = field(default_factory=list)
    absorbed: bool = False  # set by DatasetRun.absorb, once


class DatasetRun:
    """One dataset in one process: its manifest, index, judge and verdicts."""

    explain = None  # (tokenizer, profile) -> the judge's explain callback; set for --tokfidelity-report
    tokenizer_location: str | None = None  # where the tokenizer was found, absolute (set when it loads)
    prompts = True  # prompt verdicts on (--tokfidelity-prompts=off: False)
    reconstructor = None  # the project's own reconstruction judged (pipeline.core.own_code.OwnFunction; None: tokfidelity's)
    renderer = None  # the project's own prompt rendering judged (None: the model's template)
    trainer_spec = None  # --tokfidelity-trainer: a trainer's preprocessing judged instead (reconstructor and renderer name it)
    test_file = ""  # the node id of the file its tests are collected from (session.py: selection.file_nodeid)

    def __init__(self, position: int, path: Path, tokenizer_override: str | None, view_override: tuple[str, ...] | str | None):
        self.position = position
        self.dir = path
        self.name = path.name
        self.tokenizer_override = tokenizer_override
        # --tokfidelity-view: the views to judge under instead of the manifest's (comma-separated on the command line)
        if isinstance(view_override, str):
            view_override = [v.strip() for v in view_override.split(",")]
        self.view_override = tuple(view_override or ())
        self.manifest: Manifest | None = None
        self.manifest_error: str | None = None
        try:  # read once: the bytes parsed are the bytes pinned
            data: bytes | None = (path / MANIFEST_FILE).read_bytes()
        except OSError:
            data = None  # load_manifest says why
        self.manifest_sha256 = sha256_bytes(data) if data is not None else None
        try:  # not strict: with a usable profile and tokenizer the samples still run; test_manifest fails
            self.manifest = load_manifest(path, strict=False, data=data)
        except GoldenError as e:
            self.manifest_error = str(e)
        else:
            self.manifest_error = "\n".join(str(p) for p in self.manifest.problems) or None
        views = self.views
        self.multi_view = len(views) > 1 and self.view_error is None
        # the keys of this dataset's counts (session.counts), one per view: its name alone when it has one view
        self.count_keys = tuple(f"{self.name}[{v}]" for v in views) if self.multi_view else (self.name,)
        # sample tests are named SAMPLE[VIEW] (and so have their own reviewed divergences) unless the
        # dataset is judged under its manifest's one view: a divergence reviewed under one view never
        # passes another's test
        self.view_suffix = self.multi_view or (self.manifest is not None and self.view_error is None and views != self.manifest.views)
        self._other_files: dict[str, str] | None = None  # sha256 of the dataset's other files, when indexed
        self._code_files: dict[str, str] = {}  # sha256 of the code that judges, where hashed with the index
        # (read_index() of the session's datasets, and their code by profile) from a forked process, or None
        self.indexed_elsewhere = None
        self._index: SampleIndex | None = None
        self._lock = threading.Lock()
        self._setup: tuple[Judge | None, str | None] | None = None
        self._view_judges: tuple[Judge, ...] = ()  # one judge per view of ``views`` (set up with the first)
        self.held: dict[int, tuple] = {}  # position -> its verdicts under each view, until its last view's test took one
        self._stored: set[str] | None = None
        self._fd: int | None = None
        self._scan: tuple[list[str], list[str]] | None = None
        self._noted: set[int] = set()
        self._noted_problems: tuple[list[tuple[int, str]], list[tuple[int, str]]] = ([], [])  # (line, problem)
        self.selected: list[int] = []  # positions collected as tests, in order
        self.rank: dict[int, int] = {}
        self.scheduled: dict[int, Future] = {}  # position -> the future judging its chunk

    # -- per-process resources, loaded on first use ----------------------------------------
    @property
    def index(self) -> SampleIndex:
        if self._index is None:
            built = self.indexed_elsewhere.result() if self.indexed_elsewhere is not None else None
            self._index, self._other_files = built[0][self.position] if built is not None else self.read_index()
            self._code_files = built[1].get(self.manifest and self.manifest.profile, {}) if built is not None else {}
        return self._index

    def read_index(self) -> tuple[SampleIndex, dict[str, str]]:
        """What ``index`` holds: the sample index, and the sha256 of the dataset's other files."""
        return SampleIndex(self.dir / SAMPLES_FILE), golden_file_hashes(self.dir, skip=(MANIFEST_FILE, SAMPLES_FILE))

    indexed = property(lambda self: self._index is not None)

    def unreadable_files(self) -> dict[str, str]:
        """The dataset's files (other than its manifest and samples) that could not be read -> why."""
        _ = self.index  # read with it
        return unreadable_files(self._other_files or {})

    def pins(self) -> Pins:
        """The hashes of what this process read of the dataset and its tokenizer."""
        golden = dict(self._other_files or {})
        if self.manifest_sha256 is not None:
            golden[MANIFEST_FILE] = self.manifest_sha256
        if self._index is not None and self._index.sha256 is not None:
            golden[SAMPLES_FILE] = self._index.sha256
        stamps = {SAMPLES_FILE: self._index.stamp} if self._index is not None and self._index.stamp is not None else {}
        judge = self._setup[0] if self._setup is not None else None
        if judge is None:
            return Pins(golden, stamps=stamps)
        from pipeline.core.prompt_renderers import prompt_template_pins
        code = dict(self._code_files) if self.manifest and judge.profile.name == self.manifest.profile else {}  # hashed by its name
        return Pins(golden, dict(judge.tokenizer.file_digests), *prompt_template_pins(judge.profile, judge.tokenizer), stamps=stamps, code=code)

    @property
    def fd(self) -> int:
        if self._fd is None:
            self._fd = os.open(self.index.path, os.O_RDONLY)
        return self._fd

    @property
    def views(self) -> tuple[str, ...]:
        """The views each sample is judged under: --tokfidelity-view's, else the manifest's."""
        return self.view_override or (self.manifest.views if self.manifest else (DEFAULT_VIEW,))

    @property
    def view(self) -> str:
        return self.views[0]

    @property
    def view_error(self) -> str | None:
        """Why the samples cannot be judged under the views asked for (None: they can). Said once, by
        test_manifest; no sample test is collected then (collection.sample_cases), so no flood of failures."""
        if self.manifest is None:
            return None  # the manifest's own error says it
        if self.view_override:
            from pipeline.core.names import profile_views

            views = profile_views(self.manifest.profile)
            bad = [v for v in self.view_override if v not in views]
            if bad:
                return f"--tokfidelity-view: profile {self.manifest.profile} has no view {bad[0]!r}; its views: {', '.join(views)}"
            return None
        return next((str(p) for p in self.manifest.problems if str(getattr(p, "field", "")).startswith("api_view")), None)

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
        from pipeline.core.prompt_renderers import TemplateMismatch, use_manifest_template
        from pipeline.core.tokenizer import TokenizerNotFound, load_tokenizer, tokenizer_location

        where = "--tokfidelity-tokenizer" if self.tokenizer_override else f"{self.dir / 'manifest.json'}: field 'tokenizer'"
        try:
            self.tokenizer_location = tokenizer_location(self.tokenizer_spec)  # pinned by the gate record
            tokenizer = load_tokenizer(self.tokenizer_location)
        except TokenizerNotFound as e:  # said once, in one line, naming this plugin's option
            return None, f"{where}: {e.summary()}\nnext: {e.advice('--tokfidelity-tokenizer=PATH')}"
        except Exception as e:  # noqa: BLE001 - shown in the dataset's tests, never crashing the session
            return None, f"{where}: cannot load {self.tokenizer_spec!r}: {e}"
        try:  # then the manifest's chat template checked, and the template read (and pinned) once, before judges fork
            profile = bind_profile(self.manifest.profile, tokenizer)
            use_manifest_template(self.manifest, profile, tokenizer)
        except TemplateMismatch as e:  # said by test_manifest, once
            return None, str(e)
        except Exception as e:  # noqa: BLE001
            return None, f"{self.dir / 'manifest.json'}: field 'profile': {e}"
        explain = self.explain(tokenizer, profile) if self.explain is not None else None
        # one judge per view, sharing the tokenizer and profile; the first renders each sample's prompt for all
        views = self.views if self.view_error is None else self.views[:1]
        from pipeline.core.own_code import bound_reconstructor, bound_renderer

        if self.trainer_spec:  # a trainer's preprocessing on both sides (pipeline.core.trainers)
            from pipeline.core.trainers import load_trainer

            try:
                own = {"trainer": load_trainer(self.trainer_spec, self.tokenizer_location, profile=self.manifest.profile)}
            except Exception as e:  # noqa: BLE001 - said by test_manifest, once
                return None, f"--tokfidelity-trainer={self.trainer_spec}: {e}"
        else:
            own = {
                "reconstruct": bound_reconstructor(self.reconstructor, tokenizer, self.tokenizer_location) if self.reconstructor else None,
                "render": bound_renderer(self.renderer, tokenizer, self.tokenizer_location) if self.renderer else None,
            }
        self._view_judges = tuple(
            Judge(profile, tokenizer, view, self.manifest.accept, explain=explain, prompts=self.prompts and i == 0, **own)
            for i, view in enumerate(views)
        )
        return self._view_judges[0], None

    def before_fork(self) -> None:
        """Load here what each forked judge would otherwise load for itself: the compiled chat template
        (MiniJinja's, or transformers' renderer where MiniJinja cannot render it identically: about 1.1-1.5 s
        of CPU to import), when prompts are judged and the first sample records prompt_ids."""
        judge = self._setup[0] if self._setup is not None else None
        from pipeline.core.prompt_renderers import prompt_renderer

        if judge is None or judge.prompts is None or not prompt_renderer(judge.profile).uses_template or not len(self.index):
            return
        if getattr(self.index.read(0, self.fd), "prompt_ids", None) is not None:
            from pipeline.core.render import RenderError, renderer_for

            try:
                renderer_for(judge.tokenizer)  # the template compiled (and any fallback said), once
            except (RenderError, ImportError, SyntaxError, ValueError):  # each sample's prompt verdict says why
                pass

    def snapshot_key(self, item) -> str:
        """The name of a sample test's reviewed divergence: its test name, with the view it judges under
        when the name does not carry it (snapshots.snapshot_key)."""
        return snapshot_key(self.name, item.name, None if self.view_suffix else self.views[item.case[2]])

    @property
    def judged_code(self) -> str:
        return judged_label(self.reconstructor, self.renderer, bool(self.trainer_spec))

    @property
    def snapshot_basename(self) -> str:
        """The snapshot file's name (without extension): each reconstructor and renderer reviews its own divergences."""
        return SNAPSHOT_BASENAME + snapshot_suffix(self.reconstructor, self.renderer)

    @property
    def stored(self) -> set[str]:
        """Names of the reviewed divergences on disk (read once per process)."""
        if self._stored is None:
            self._stored = stored_names(self.dir, self.snapshot_basename)
        return self._stored

    def judged_with(self) -> dict[str, str] | None:
        """The tokenizer fingerprint and profile this process judged with (None: never set up)."""
        judge = self._setup[0] if self._setup is not None else None
        if judge is None:
            return None
        return {"fingerprint": judge.tokenizer.fingerprint, "profile": judge.profile.name, "location": self.tokenizer_location}

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    # -- judging: on a judging thread or in a judging process; it changes nothing here -----------
    def judge_positions(self, positions: list[int], began: Callable[[int], None] | None = None) -> Judged:
        """Verdicts on the samples at ``positions``, with the vocabulary and stop checks run on
        them. An exact sample's ids came out of the tokenizer, so only others need the vocabulary
        check; a sample whose judging failed on ids outside the vocabulary gets that verdict.
        ``began`` is called with each position before it is judged (a judging process's progress, judge_watch.py)."""
        from pipeline.core.fidelity import stop_token_problems, vocabulary_problems

        judged = Judged()
        judge, _ = self.setup()  # in a judging process, a dataset set up after the fork loads here
        if judge is None:  # the sample tests say why, without asking for a verdict
            return judged
        index, fd, tokenizer, profile = self.index, self.fd, judge.tokenizer, judge.profile
        others = self._view_judges[1:]  # a dataset judged under several views: verdicts[p] holds one per view
        stops = profile.stop_ids
        verdicts = judged.verdicts
        read = []  # (position, sample): every line read, then every output side, then every prompt side
        for p in positions:
            if began is not None:
                began(p)
            try:
                read.append((p, index.read(p, fd)))
            except Exception as e:  # noqa: BLE001 - re-raised in the sample's own test
                verdicts[p] = e
        # Every output side (views, then reconstructions), then every prompt side: each pass keeps its tables cached.
        sides = judge.output_side_chunk([s for _, s in read], began and (lambda i: began(read[i][0])), others)
        for (p, sample), verdict in zip(read, sides):
            if began is not None:
                began(p)
            try:
                if type(verdict) is Verdict or type(verdict) is tuple:
                    try:
                        verdict = judge.prompt_sides(sample, verdict) if others else judge.prompt_side(sample, verdict)
                    except Exception as e:  # noqa: BLE001 - re-raised in the sample's own test
                        verdict = e
                if type(sample) is GoldenSample:
                    one = (sample,)
                    first = verdict[0] if others and type(verdict) is tuple else verdict
                    if not (type(first) is Verdict and first.kind == EXACT):
                        # (ids outside the vocabulary are the judge's bad input too: pipeline.core.fidelity)
                        judged.vocabulary += [(sample.line, p) for p in vocabulary_problems(one, tokenizer)]
                    ids = sample.output_ids
                    if sample.finish_reason == "stop" and (not ids or ids[-1] not in stops):  # what the check looks for
                        judged.stops += [(sample.line, p) for p in stop_token_problems(one, profile, tokenizer)]
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
                # only the samples no judge saw (a shard's, a -k run's others), a chunk at a time: memory stays flat
                todo = [p for p in range(len(self.index)) if p not in self._noted]
                for start in range(0, len(todo), SCAN_CHUNK):
                    chunk = [s for s in (self.index.read(p, self.fd) for p in todo[start : start + SCAN_CHUNK]) if isinstance(s, GoldenSample)]
                    for s in chunk:
                        self._noted_problems[0].extend((s.line, p) for p in vocabulary_problems((s,), judge.tokenizer))
                        self._noted_problems[1].extend((s.line, p) for p in stop_token_problems((s,), judge.profile, judge.tokenizer))
            self._scan = tuple([p for _, p in sorted(problems, key=lambda lp: lp[0])[:10]] for problems in self._noted_problems)
        return self._scan
