"""``--tokfidelity-report=DIR``: results.json and report.html from a fidelity run.

``ResultsRecorder`` is registered in every process that runs tests when a report is asked for.
It gives each dataset's judge the report's ``explain`` callback (``pipeline.reporting.details``),
so that per-sample details are made where the diagnosis is (judging processes or threads), and
keeps one record per non-exact sample as the sample's test decides its outcome, and notes which
samples' tests ran (their positions: merged files compare them). An xdist worker sends its records
to the controller with its counts (``workeroutput``); the controller, once the run's summary and
gate records are done, writes DIR/results.json and DIR/report.html, together or not at all.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import pytest

from .keys import WORKER_RAN_KEY, WORKER_RESULTS_KEY

__all__ = ["ResultsRecorder"]


def _explainer(tokenizer, profile):
    from pipeline.reporting import details

    return details.SampleDetails(tokenizer, profile, details.DETAIL_LIMIT)


class ResultsRecorder:
    """Per-process: sample records. On the controller: merging and writing the report."""

    def __init__(self, session, out_dir: Path):
        if out_dir.exists() and not out_dir.is_dir():  # said now, not after the whole run when the report is due
            raise pytest.UsageError(f"--tokfidelity-report: {out_dir} is a file; the report needs a folder there")
        self.session = session
        self.config = session.config
        self.out_dir = out_dir
        self.samples: list[dict[str, Any]] = []
        self.written: list[Path] = []
        self.failed_checks: dict[str, list[dict[str, str]]] = {}  # dataset -> failed whole-dataset checks
        self.error: str | None = None
        self._case_of: dict[str, tuple[int, int]] = {}  # node id -> (dataset, sample) position, tests run here
        self.ran: dict[str, set[int]] = {ds.name: set() for ds in session.datasets}  # dataset -> positions run
        for ds in session.datasets:
            ds.explain = _explainer  # DatasetRun builds its Judge with explain=ds.explain(tokenizer, profile)

    # -- every process: one record per non-exact sample ---------------------------------------
    def record(self, ds, position: int, verdict: Any, outcome: str, test: str | None = None, view: str | None = None) -> None:
        """``outcome``: new | known | policy | bad-input; ``verdict``: a Verdict, an exception or None;
        ``test``: the sample test's node id (``pytest TEST`` runs it alone); ``view``: the view it was judged
        under (default: the dataset's first)."""
        details = getattr(verdict, "details", None)
        if details is None:
            rec: dict[str, Any] = {"id": getattr(verdict, "sample_id", "") or ds.index.name(position),
                                   "line": getattr(verdict, "line", None)}
        else:
            rec = dict(details)
            if outcome == "new" and not rec.get("detail"):  # a failure is always shown in full
                rec = self._full_details(ds, position, view or ds.view) or rec
        signature = getattr(verdict, "signature", None)
        if isinstance(signature, dict) and isinstance(signature.get("prompt"), dict):  # the prompt side diverged
            from pipeline.core.prompt_check import PROMPT_ADVICE

            prompt = signature["prompt"]
            rec["prompt"] = {**prompt, "advice": PROMPT_ADVICE.get(prompt.get("class"), "")}
            rec["classes"] = [*rec.get("classes", []), f"prompt:{prompt.get('class')}"]
        rec["dataset"] = ds.name
        rec["view"] = view or ds.view
        rec["verdict"] = outcome
        if test:
            rec["test"] = test
        if outcome != "policy":
            rec["report"] = getattr(verdict, "report", "") or (str(verdict) if verdict is not None else "not verified")
        self.samples.append(rec)

    def _full_details(self, ds, position: int, view: str) -> dict[str, Any] | None:
        from pipeline.core.fidelity import Judge

        judge, _ = ds.setup()
        explain = getattr(judge, "explain", None)
        if explain is None:
            return None
        again = Judge(judge.profile, judge.tokenizer, view, judge.accept, explain=functools.partial(explain, force=True),
                      prompts=judge.prompts is not None)
        return getattr(again(ds.index.read(position, ds.fd)), "details", None)

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        """The samples this process may run (an xdist controller collects none)."""
        from .collection import SampleItem

        self._case_of = {item.nodeid: item.case for item in session.items if type(item) is SampleItem}

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if hasattr(self.config, "workerinput"):
            from pipeline.reporting.results import ranges

            self.config.workeroutput[WORKER_RESULTS_KEY] = self.samples
            self.config.workeroutput[WORKER_RAN_KEY] = {name: ranges(p) for name, p in self.ran.items()}

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Every process: which samples' tests ran here. The controller: failed whole-dataset checks
        (test_manifest, test_stop_tokens, ...), with their messages."""
        if report.when == "call" and (case := self._case_of.get(report.nodeid)) is not None:
            self.ran[self.session.datasets[case[0]].name].add(case[1])
        if not report.failed or hasattr(self.config, "workerinput"):
            return
        from .collection import PROPERTY, SAMPLE_TEST

        found = next((value for key, value in report.user_properties if key == PROPERTY), None)  # (dataset, check)
        if found is not None and found[1] != SAMPLE_TEST:
            message = str(report.longrepr)
            self.failed_checks.setdefault(found[0], []).append({"check": found[1], "message": message[-4000:]})

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node, error) -> None:
        output = getattr(node, "workeroutput", {}) or {}
        self.samples.extend(output.get(WORKER_RESULTS_KEY, []))
        for name, spans in output.get(WORKER_RAN_KEY, {}).items():
            if name in self.ran:
                self.ran[name].update(p for start, end in spans for p in range(start, end))

    def write(self, run_report) -> None:
        """Called by the controller's RunReport once gate records are written."""
        from pipeline.core import fingerprints
        from pipeline.reporting.results import dataset_entry, dataset_fingerprint, ranges, results_document, write_outputs

        datasets = []
        for ds in self.session.datasets:
            outcome = run_report.outcomes.get(ds.name, {})
            facts = (run_report.judged_with.get(ds.name) or [None])[0] or ds.judged_with() or {}
            manifest = ds.manifest
            _, pins, _ = run_report.decided.get(ds.name, (None, None, 0.0))  # (decision, pins, wall time)
            pins = pins or ds.pins()  # the run's: a samples file still as read is not hashed again
            datasets.append(dataset_entry(
                name=ds.name, counts=run_report.total(ds).to_dict(), samples_total=len(ds.index),
                by_view={v: c.to_dict() for v, c in run_report.by_view(ds).items()},
                profile=facts.get("profile") or (manifest.profile if manifest else None), tokenizer=ds.tokenizer_spec,
                tokenizer_fingerprint=facts.get("fingerprint"), view=ds.view, golden_files=pins.golden_now(ds.dir),
                accept=manifest.accept if manifest else {},
                max_known_divergence_rate=manifest.max_known_divergence_rate if manifest else 0.0,
                gate_note=outcome.get("gate", "record unchanged"), problems=outcome.get("problems", []),
                partial_reasons=run_report.partial_of.get(ds.name, run_report.partial), wall_s=outcome.get("wall", 0.0),
                golden_dir=self.config.option.tokfidelity_golden_dir, path=str(ds.dir),
                failed_checks=self.failed_checks.get(ds.name, []), ran=ranges(self.ran[ds.name]),
            ))
        libraries = fingerprints.library_versions()  # the fingerprint as gate records compute it
        judged = [d.get("profile") for d in datasets]  # every family judged, its modules included
        fingerprint = dataset_fingerprint({**fingerprints.code_file_hashes(judged), **{f"lib:{k}": v for k, v in libraries.items()}})
        code = {"fingerprint": fingerprint, "libraries": libraries}
        doc = results_document(datasets, self.samples, command=list(self.config.invocation_params.args),
                               partial_reasons=run_report.partial, code=code)
        try:
            self.written = write_outputs(doc, self.out_dir)
        except OSError as e:
            self.error = (f"--tokfidelity-report: cannot write to {self.out_dir}: {e.strerror or e}; the run fails: "
                          "give a folder you can write to (nothing was written there)")

    def pytest_terminal_summary(self, terminalreporter) -> None:
        if self.error:
            terminalreporter.write_line(self.error, red=True)
        elif self.written:
            terminalreporter.write_line("tokfidelity report: " + ", ".join(str(p) for p in self.written))
