"""The controlling process's view of a fidelity run: outcomes, summary, gate records.

``RunReport`` lives only in the process that owns the terminal (a lone pytest, or the xdist
controller). It tallies every fidelity test's report, merges the counts that xdist workers
send, decides per dataset whether the run was full and green, writes or closes the dataset's
gate record (``pipeline.core.gate``), removes stale reviewed divergences on ``--snapshot-update``,
and prints the per-dataset summary.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from pipeline.core import gate

from .counts import merge_counts
from .session import DATASET_CHECKS, SAMPLE_TEST, SUITE_NODE_NAME, WORKER_OUTPUT_KEY, WORKER_TOKENIZERS_KEY, DatasetRun, FidelitySession
from .snapshots import DiagnosisExtension, snapshot_file

__all__ = ["RunReport"]


class RunReport:
    """Controller-side plugin: per-dataset tallies, gate decisions and the terminal summary."""

    def __init__(self, session: FidelitySession):
        self.session = session
        self.config = session.config
        self.counts = session.counts  # a lone process counts here; workers' counts are merged in
        self.started = time.perf_counter()
        self.reports: dict[str, dict[str, Any]] = {
            d.name: {"passed": set(), "checks": set(), "failed": set()} for d in session.datasets
        }
        self.lost_workers: list[str] = []
        self.judged_with: dict[str, list[dict[str, str]]] = {}  # dataset -> what xdist workers judged with
        self.summary_lines: list[str] = []
        self.outcomes: dict[str, dict[str, Any]] = {}  # dataset -> gate note, problems, wall time (for results.json)
        self.partial: list[str] = []

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        path, _, name = report.nodeid.partition("::")
        if path != SUITE_NODE_NAME or "[" not in name:
            return
        func, _, param = name.partition("[")
        param = param[:-1]
        dataset = param.split("/", 1)[0]
        tally = self.reports.get(dataset)
        if tally is None:
            return
        start, stop = getattr(report, "start", None), getattr(report, "stop", None)
        if start is not None:
            tally["start"] = min(tally.get("start", start), start)
            tally["stop"] = max(tally.get("stop", stop), stop)
        if report.failed:
            tally["failed"].add(name)
        elif report.when == "call" and report.passed:
            tally["passed" if func == SAMPLE_TEST else "checks"].add(name if func == SAMPLE_TEST else func)

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node, error) -> None:
        output = getattr(node, "workeroutput", {}) or {}
        for name, counts in output.get(WORKER_OUTPUT_KEY, {}).items():
            if name in self.counts:
                merge_counts(self.counts[name], counts)
        for name, facts in output.get(WORKER_TOKENIZERS_KEY, {}).items():
            self.judged_with.setdefault(name, []).append(facts)
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
            reasons.append("--snapshot-update (review the recorded divergences, then run again without it)")
        return reasons

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if self.config.option.collectonly:
            return
        wall = time.perf_counter() - self.started
        partial = self._partial_reasons(session)
        state_dir = self.config.option.tokfidelity_state_dir
        args = list(self.config.invocation_params.args)
        for ds in self.session.datasets:
            counts = self.counts[ds.name]
            tally = self.reports[ds.name]
            problems = [f"{len(tally['failed'])} test(s) failed"] if tally["failed"] else []
            problems += self._rate_problems(ds, counts)
            if self.session.update_snapshots and counts["stale_snapshots"]:
                DiagnosisExtension().delete_snapshots(
                    snapshot_location=str(snapshot_file(ds.dir)), snapshot_names=set(counts["stale_snapshots"])
                )
            gate_note = self._gate(ds, counts, tally, problems, partial, state_dir, args)
            if problems and not tally["failed"]:
                session.exitstatus = pytest.ExitCode.TESTS_FAILED
            span = tally.get("stop", 0.0) - tally.get("start", 0.0)  # first test start to last test end
            self.summary_lines += self._summary(ds, counts, span or wall, gate_note, problems)
            self.outcomes[ds.name] = {"gate": gate_note, "problems": problems, "wall": span or wall}
        self.partial = partial
        if self.session.results is not None:
            self.session.results.write(self)

    def _rate_problems(self, ds: DatasetRun, counts: dict[str, Any]) -> list[str]:
        problems = []
        tokens = counts["tokens"]
        if ds.manifest is not None:
            for cls, n in counts["policy_hunks_by_class"].items():
                limit = ds.manifest.accept.get(cls, 0.0)
                if tokens and n / tokens > limit:
                    problems.append(
                        f"accept policy exceeded: {n} {cls} hunks in {tokens} tokens "
                        f"({n / tokens:.5f} per token) > {limit} (manifest accept.{cls})"
                    )
        return problems

    def _gate(self, ds, counts, tally, problems, partial, state_dir, args) -> str:
        record_counts = {k: v for k, v in counts.items() if not isinstance(v, list)}
        if problems:
            reason = "; ".join(problems) + f" (pytest {' '.join(args)})"
            gate.write_closed_record(ds.name, state_dir=state_dir, reason=reason, counts=record_counts, pytest_args=args)
            return "closed (record written: " + "; ".join(problems) + ")"
        if partial:
            return "record unchanged: partial run (" + ", ".join(partial) + ")"
        expected = len(ds.index)  # every non-blank line of samples.jsonl
        if expected == 0:
            return "record unchanged: the dataset has no samples"
        missing_checks = [c for c in DATASET_CHECKS if c not in tally["checks"]]
        if len(tally["passed"]) != expected or missing_checks:
            return (
                f"record unchanged: {len(tally['passed'])} of {expected} samples passed"
                + (f", checks not passed: {', '.join(missing_checks)}" if missing_checks else "")
            )
        samples = counts["samples"] or 1
        limit = ds.manifest.max_known_divergence_rate
        if counts["known"] / samples > limit:
            reason = (
                f"known-divergence rate {counts['known']}/{counts['samples']} = {counts['known'] / samples:.4f} "
                f"exceeds the manifest's max_known_divergence_rate {limit}"
            )
            gate.write_closed_record(ds.name, state_dir=state_dir, reason=reason, counts=record_counts, pytest_args=args)
            return f"closed: {reason}"
        facts = self.judged_with.get(ds.name, [])
        if not facts or any(f != facts[0] for f in facts):  # a lone process, or workers that disagree
            ds.setup()  # loads the tokenizer only where this process has not yet
            facts = [ds.judged_with()]
        path = gate.write_open_record(
            ds.dir,
            state_dir=state_dir,
            tokenizer_spec=ds.tokenizer_spec,
            tokenizer_fingerprint=facts[0]["fingerprint"],
            profile=facts[0]["profile"],
            view=ds.view,
            counts=record_counts,
            pytest_args=args,
        )
        return f"open (record {path})"

    def _summary(self, ds, counts, wall, gate_note, problems) -> list[str]:
        n = counts["samples"]
        tokens = counts["tokens"]
        divergent = counts["policy"] + counts["known"] + counts["new"]

        def by_class(d: dict[str, int]) -> str:
            return ", ".join(f"{k} {v}" for k, v in sorted(d.items())) or "none"

        per_k = 1000 * counts["hunks"] / tokens if tokens else 0.0
        lines = [
            f"{ds.name}: {n} samples, {counts['exact']} exact, {counts['policy']} accepted by policy "
            f"(hunks: {by_class(counts['policy_hunks_by_class'])}), {counts['known']} known divergences "
            f"({by_class(counts['known_by_class'])}), {counts['new']} new divergences ({by_class(counts['new_by_class'])}), "
            f"{counts['bad_input']} bad input",
            f"  rates: {divergent / n if n else 0:.2%} of samples diverge, {per_k:.3f} hunks per 1,000 tokens; "
            f"{tokens:,} tokens in {wall:.2f} s ({tokens / wall if wall else 0:,.0f} tokens/s)",
        ]
        if counts["stale_snapshots"]:
            verb = "removed" if self.session.update_snapshots else "stale (sample now passes without it; --snapshot-update removes it)"
            lines.append(f"  {len(counts['stale_snapshots'])} reviewed divergence(s) {verb}")
        for p in problems:
            if not p.endswith("failed"):
                lines.append(f"  FAILED: {p}")
        lines.append(f"  gate: {gate_note}")
        return lines

    def pytest_terminal_summary(self, terminalreporter) -> None:
        if not self.summary_lines:
            return
        terminalreporter.section("tokfidelity")
        for line in self.summary_lines:
            terminalreporter.write_line(line)
