"""The controlling process's view of a fidelity run: outcomes, summary, gate records.

``RunReport`` lives only in the process that owns the terminal (a lone pytest, or the xdist
controller). It tallies every fidelity test's report, merges the counts that xdist workers
send, decides per dataset whether the run was full and green, writes or closes the dataset's
gate record (``pipeline.core.gate``), removes stale reviewed divergences on ``--snapshot-update``,
and prints the per-dataset summary.
"""

from __future__ import annotations

import dataclasses
import time
from typing import TYPE_CHECKING, Any

import pytest

from pipeline.core import gate
from pipeline.core.decision import CLOSED, OPEN, Completeness, Counts, Decision, decide
from pipeline.core.files import os_error_message
from pipeline.core.pins import Pins

from .collection import GATE_TEST, PROPERTY, SAMPLE_TEST
from .dataset import DatasetRun
from .keys import WORKER_OUTPUT_KEY, WORKER_PINS_KEY, WORKER_TOKENIZERS_KEY
from .selection import dataset_file, file_nodeid, selects_tests
from .sharding import rates_deferred, shard_size, write_shard
from .snapshots import DiagnosisExtension, snapshot_file
from .pytest_adapter import failed_report, index_teardown_reports
from .summary import plural, shown, summary_lines

if TYPE_CHECKING:
    from .session import FidelitySession

__all__ = ["RunReport"]

NODE_IDS_REASON = "node ids given (PATH::NAME)"  # a partial run's reason: single tests of the dataset selected


class RunReport:
    """Controller-side plugin: per-dataset tallies, gate decisions and the terminal summary."""

    def __init__(self, session: FidelitySession):
        self.session = session
        self.config = session.config
        self.counts = session.counts  # a lone process counts here; workers' counts are merged in
        self.started = time.perf_counter()
        self.started_at = time.time()
        self.reports: dict[str, dict[str, Any]] = {
            d.name: {"passed": set(), "checks": set(), "failed": set()} for d in session.datasets
        }
        self.lost_workers: list[str] = []
        self.judged_with: dict[str, list[dict[str, str]]] = {}  # dataset -> what xdist workers judged with
        self.worker_pins: dict[str, list[Pins]] = {}  # dataset -> what each xdist worker read
        self.summary_lines: list[str] = []
        self.outcomes: dict[str, dict[str, Any]] = {}  # dataset -> gate note, problems, wall time (for results.json)
        self.partial: list[str] = []  # why the run was partial, for every dataset
        self.partial_of: dict[str, list[str]] = {}  # dataset -> why its run was partial (the above, and its own)
        self.decided: dict[str, tuple[Decision, Pins | None, float]] = {}  # dataset -> decision, pins, wall time
        self._files = {file_nodeid(self.config, dataset_file(d.dir)): d.name for d in session.datasets}  # node id -> dataset

    def by_view(self, ds: DatasetRun) -> dict[str, Counts]:
        """A dataset's counts per view (one entry when it has one view)."""
        return {view: self.counts[key] for view, key in zip(ds.views, ds.count_keys)}

    def total(self, ds: DatasetRun) -> Counts:
        """A dataset's counts over all its views: each sample counted once per view it was judged under."""
        if len(ds.count_keys) == 1:
            return self.counts[ds.count_keys[0]]
        total = Counts()
        for key in ds.count_keys:
            total.merge(self.counts[key])
        return total

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        from .adapter_notes import adapter_notes

        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        for line in adapter_notes():  # one line per adapter outside its checked releases; none when locked
            if reporter is not None:
                reporter.write_line(line)
        index_teardown_reports(self.config)  # pytest's failure summary made linear (pytest_adapter.py)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        found = next((value for key, value in report.user_properties if key == PROPERTY), None)
        if found is None:  # not a test of the fidelity suite, or one whose xdist worker crashed under it
            dataset = self._files.get(report.nodeid.partition("::")[0]) if report.failed else None
            if dataset is not None:  # the failure counts against the dataset of its file
                self.reports[dataset]["failed"].add(report.nodeid)
            return
        dataset, check = found
        tally = self.reports.get(dataset)
        if tally is None or check == GATE_TEST:  # the gate's own test: decided after the run, or a check of its record
            return
        start, stop = getattr(report, "start", None), getattr(report, "stop", None)
        if start and stop and start >= self.started_at - 1:  # a lost worker's report has none worth the name
            tally["start"] = min(tally.get("start", start), start)
            tally["stop"] = max(tally.get("stop", stop), stop)
        if report.failed:
            tally["failed"].add(report.nodeid)
        elif report.when == "call" and report.passed:
            tally["passed" if check == SAMPLE_TEST else "checks"].add(report.nodeid if check == SAMPLE_TEST else check)

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node, error) -> None:
        output = getattr(node, "workeroutput", {}) or {}
        for name, counts in output.get(WORKER_OUTPUT_KEY, {}).items():
            if name in self.counts:
                self.counts[name].merge(Counts.from_dict(counts))
        for name, facts in output.get(WORKER_TOKENIZERS_KEY, {}).items():
            self.judged_with.setdefault(name, []).append(facts)
        for name, pins in output.get(WORKER_PINS_KEY, {}).items():
            self.worker_pins.setdefault(name, []).append(Pins.from_dict(pins))
        if error:
            self.lost_workers.append(f"{getattr(node, 'gateway', None) and node.gateway.id}: {error}")

    def _partial_reasons(self, session: pytest.Session) -> list[str]:
        opt = self.config.option
        reasons = []
        if getattr(opt, "keyword", ""):
            reasons.append(f"-k {opt.keyword!r}")
        if getattr(opt, "markexpr", ""):
            reasons.append(f"-m {opt.markexpr!r}")
        if getattr(opt, "deselect", None):
            reasons.append("--deselect")
        if getattr(opt, "lf", False):
            reasons.append("--lf")

        if self.session.sample_limit:
            reasons.append(f"--tokfidelity-sample={self.session.sample_limit}")
        if session.shouldstop or session.shouldfail:
            reasons.append(f"stopped early ({session.shouldstop or session.shouldfail})")
        if self.lost_workers:
            reasons.append("lost xdist worker(s): " + "; ".join(self.lost_workers))
        if self.session.update_snapshots:
            reasons.append("--snapshot-update: review the recorded divergences, then run again without it")
        return reasons

    @pytest.hookimpl(wrapper=True)
    def pytest_runtestloop(self, session: pytest.Session):
        """Once every test has run: decide each dataset's gate, and fail ``test_gate_policy[DATASET]``
        for any reason that keeps it closed which no failed test of the run shows, so that pytest's
        exit code is the gate's verdict."""
        result = yield
        if not self.config.option.collectonly:
            self._decide_all(session)
            for ds in self.session.datasets:
                self._fail_gate_policy(session, ds, self.decided[ds.name][0])
        return result

    def _decide_all(self, session: pytest.Session) -> None:
        wall = time.perf_counter() - self.started
        self.partial = partial = self._partial_reasons(session)
        shard = self.session.shard
        for ds in self.session.datasets:
            counts, tally = self.total(ds), self.reports[ds.name]
            own = [NODE_IDS_REASON] if selects_tests(self.config, ds.dir) else []  # golden/DS/samples.jsonl::NAME
            self.partial_of[ds.name] = [*partial, *own]
            completeness = Completeness(  # a sample test per sample and view
                expected=shard_size(ds, shard) if shard else len(ds.index) * len(ds.count_keys), passed=len(tally["passed"]),
                failed=len(tally["failed"]), checks_passed=frozenset(tally["checks"]), partial=tuple(self.partial_of[ds.name]),
                share=shard is not None,
            )
            decision = decide(counts, rates_deferred(ds.manifest) if shard else ds.manifest, completeness)
            pins = None
            if decision.status == OPEN:
                pins, changed = self._pins(ds)
                if changed:
                    why = "inputs changed during the run: " + "; ".join(changed)
                    decision = Decision(CLOSED, why, (why,), "run the suite again once nothing edits the dataset or tokenizer")
            span = tally.get("stop", 0.0) - tally.get("start", 0.0)  # first test start to last test end
            self.decided[ds.name] = (decision, pins, min(span, wall) if span > 0 else wall)

    def _fail_gate_policy(self, session: pytest.Session, ds: DatasetRun, decision: Decision) -> None:
        """Report ``test_gate_policy[DATASET]`` failed with the gate's reasons that no failed test shows."""
        if decision.status != CLOSED:
            return
        reasons = [p for p in decision.problems if not p.endswith("test(s) failed")] or (
            [] if decision.problems else [decision.reason]
        )
        if not reasons:
            return
        fix = decision.fix or "fix what is said above"
        message = "\n".join([f"the gate of {ds.name} stays closed: {r}" for r in reasons] + [
            f"manifest: {ds.dir / 'manifest.json'}", f"next: {fix}; then run `{self._command(ds)}`"])
        path = next(f for f, name in self._files.items() if name == ds.name)
        nodeid = f"{path}::{GATE_TEST}"
        location = (path, 0, GATE_TEST)
        session.testscollected += 1  # pytest's progress counts it
        hook = self.config.hook
        hook.pytest_runtest_logstart(nodeid=nodeid, location=location)
        hook.pytest_runtest_logreport(report=failed_report(
            nodeid, location, {GATE_TEST: 1, ds.name: 1}, message, [(PROPERTY, (ds.name, GATE_TEST))],
        ))
        hook.pytest_runtest_logfinish(nodeid=nodeid, location=location)

    def _command(self, ds: DatasetRun) -> str:
        """The command that runs this dataset's suite again (a shard's own, when sharded)."""
        opt = self.config.option
        parts = ["pytest", f"--tokfidelity-dataset={ds.name}"]
        for name, value in (("golden-dir", opt.tokfidelity_golden_dir), ("tokenizer", opt.tokfidelity_tokenizer),
                            ("reconstruct", opt.tokfidelity_reconstruct), ("render", opt.tokfidelity_render),
                            ("trainer", opt.tokfidelity_trainer),
                            ("view", opt.tokfidelity_view), ("state-dir", opt.tokfidelity_state_dir), ("shard", opt.tokfidelity_shard)):
            if value is not None:
                parts.append(f"--tokfidelity-{name}={value}")
        return " ".join(parts)

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if self.config.option.collectonly:
            return
        if len(self.decided) != len(self.session.datasets):  # the test loop never finished (a collection error)
            self._decide_all(session)
        state_dir = self.config.option.tokfidelity_state_dir
        args = list(self.config.invocation_params.args)
        for ds in self.session.datasets:
            counts = self.total(ds)
            tally = self.reports[ds.name]
            decision, pins, span = self.decided[ds.name]
            if self.session.update_snapshots and counts.stale_snapshots:
                DiagnosisExtension().delete_snapshots(
                    snapshot_location=str(snapshot_file(ds.dir, ds.snapshot_basename)), snapshot_names=set(counts.stale_snapshots)
                )
            shard = self.session.shard
            try:
                if shard:  # a shard record, never the full one
                    gate_note = write_shard(self, ds, shard, counts, decision, tally, state_dir, args, pins)
                else:
                    gate_note = self._gate(ds, counts, decision, state_dir, args, pins)
                said = gate_note
            except OSError as e:  # a read-only or full state dir: said once, on the FAILED line, and the run fails
                gate_note = f"gate record NOT written: {os_error_message(e)}"
                decision = dataclasses.replace(decision, problems=(*decision.problems, gate_note))
                said = "NOT written (the FAILED line above says why)"
            if decision.problems and not tally["failed"]:
                session.exitstatus = pytest.ExitCode.TESTS_FAILED
            self.summary_lines += self._summary(ds, counts, span, said, decision)
            self.outcomes[ds.name] = {"gate": gate_note, "problems": list(decision.problems), "wall": span}
        if self.session.results is not None:
            self.session.results.write(self)
            if self.session.results.error:  # a report asked for and not written fails the run
                session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def _pins(self, ds: DatasetRun) -> tuple[Pins | None, list[str]]:
        """What the run read of the dataset and its tokenizer, and what differs on disk now."""
        seen = self.worker_pins.get(ds.name) or [ds.pins()]
        tokenizers = [(p.tokenizer, p.template, p.template_sha256) for p in seen if p.tokenizer]  # a worker that judged none of its samples has none
        if any(p.golden != seen[0].golden for p in seen) or any(t != tokenizers[0] for t in tokenizers):
            return None, ["the dataset, tokenizer or chat template files changed while xdist workers were reading them"]
        pins = Pins(seen[0].golden, *(tokenizers[0] if tokenizers else ({}, {}, None)), stamps=seen[0].stamps, code=seen[0].code)
        if not pins.tokenizer:  # no process needed the tokenizer for a sample: pin it now
            ds.setup()
            now = ds.pins()
            pins = Pins(pins.golden, now.tokenizer, now.template, now.template_sha256, stamps=pins.stamps, code=pins.code)
        own = [own.changes() for own in (self.session.reconstructor, self.session.renderer) if own is not None]
        return pins, pins.changes(ds.dir) + [c for changes in own for c in changes]

    def own_fields(self) -> dict[str, Any]:
        """What a record says of the code judged: tokfidelity's, or the project's own functions and their files."""
        from pipeline.core.own_code import record_fields

        return record_fields(self.session.reconstructor, self.session.renderer)

    def _gate(self, ds, counts: Counts, decision, state_dir, args, pins) -> str:
        if decision.status == OPEN:
            facts = self.judged_with.get(ds.name, [])
            if not facts or any(f != facts[0] for f in facts):  # a lone process, or workers that disagree
                ds.setup()  # loads the tokenizer only where this process has not yet
                facts = [ds.judged_with()]
            path = gate.write_open_record(
                ds.dir, state_dir=state_dir, tokenizer_spec=ds.tokenizer_spec, tokenizer_fingerprint=facts[0]["fingerprint"],
                profile=facts[0]["profile"], view=ds.views, counts=counts, pytest_args=args, pins=pins,
                counts_by_view=self.by_view(ds) if ds.multi_view else None,
                tokenizer_location=facts[0].get("location"),
                prompts="on" if self.session.prompts else "off", own=self.own_fields(),
            )
            return f"open (record {shown(path)})"
        if decision.status == CLOSED:
            reason = decision.reason + (f" (pytest {' '.join(args)})" if decision.problems else "")
            gate.write_closed_record(
                ds.name, state_dir=state_dir, reason=reason, counts=counts, pytest_args=args, next_step=decision.fix or None,
            )
            return f"closed (record written: {decision.reason})" if decision.problems else f"closed: {decision.reason}"
        return f"record unchanged: {decision.reason}"

    def _summary(self, ds, counts: Counts, span: float, gate_note: str, decision) -> list[str]:
        stale = None
        if counts.stale_snapshots:
            verb = "removed" if self.session.update_snapshots else "stale (the sample now passes without it; --snapshot-update removes it)"
            stale = f"{plural(len(counts.stale_snapshots), 'reviewed divergence')} {verb}"
        loading_included = self.config.getoption("dist", "no") != "no" or not self.reports[ds.name].get("stop")
        by_view = self.by_view(ds) if ds.multi_view else None
        return summary_lines(ds.name, counts, span, loading_included, gate_note, decision.problems, stale, by_view)

    def pytest_terminal_summary(self, terminalreporter) -> None:
        if not self.summary_lines:
            return
        terminalreporter.section("tokfidelity")
        for line in self.summary_lines:
            terminalreporter.write_line(line)
