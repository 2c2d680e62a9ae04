"""What each suite test asserts, and the counts it keeps: one sample's verdict, one dataset check.

The verdict comes from the prefetching judge (judges.py); this module turns it into an outcome
(exact, accepted by policy, known divergence, new divergence, bad input), counts it in the
dataset's ``Counts`` and fails the test with a report a person can act on.
"""

from __future__ import annotations

import pytest

from pipeline.core.fidelity import BAD_INPUT, EXACT, POLICY, PROMPT_EXACT, PROMPT_OFF, PROMPT_UNCHECKED, Verdict

from .collection import GATE_TEST
from .judge_watch import JudgeStuck
from .snapshots import reviewed_under_other_names, snapshot_assertion, snapshot_file

__all__ = ["Checks"]


class Checks:
    """The suite's assertions for one process (``session``: its FidelitySession)."""

    def __init__(self, session):
        self.session = session
        self.datasets = session.datasets
        self.counts = session.counts

    def fetch(self, item) -> Verdict | BaseException | None:
        """A sample's verdict from the judges, or what judging it raised (None: its dataset
        cannot be judged)."""
        ds = self.datasets[item.case[0]]
        if ds.setup()[0] is None:
            return None
        try:
            return self._take(ds, item.case)
        except Exception as e:  # noqa: BLE001 - raised again by the sample's test
            return e

    def _take(self, ds, case: tuple[int, int, int]):
        """The verdict of one sample test: under its view, for a dataset judged under several (whose
        sample is judged once for all of them: its other views' tests take theirs from ``ds.held``)."""
        _, position, v = case
        if not ds.multi_view:
            return self.session.prefetcher.verdict(ds, position)
        verdicts = ds.held.pop(position, None)
        if verdicts is None:
            verdicts = self.session.prefetcher.verdict(ds, position)
        if v < len(ds.views) - 1:  # a later view's test of this sample is still to come
            ds.held[position] = verdicts
        return verdicts[v] if type(verdicts) is tuple else verdicts

    def count_passed(self, item, verdict: Verdict) -> bool:
        """Count a passing verdict (exact, or accepted by policy) as check_sample does, unless the sample
        has a stored reviewed divergence (then check_sample must see it: the snapshot is stale): False,
        nothing counted."""
        ds = self.datasets[item.case[0]]
        if ds.stored and ds.snapshot_key(item) in ds.stored:
            return False
        counts = self.counts[ds.count_keys[item.case[2]]]
        counts.samples += 1
        counts.tokens += verdict.n_tokens
        counts.hunks += verdict.hunks
        self._passed(ds, item.case[1], counts, verdict, item)
        return True

    def _passed(self, ds, position: int, counts, verdict: Verdict, item) -> None:
        """Count an exact or policy-accepted verdict (its sample, tokens and hunks counted by the caller)."""
        _count_prompt(counts, verdict.prompt, False)
        if verdict.kind == EXACT:
            counts.exact += 1
            return
        counts.policy += 1
        policy_hunks = counts.policy_hunks_by_class
        for cls, n in verdict.hunks_by_class.items():
            policy_hunks[cls] = policy_hunks.get(cls, 0) + n
        self._record(ds, position, verdict, "policy", item)

    def check_sample(self, case: tuple[int, int, int], item: pytest.Item) -> None:
        ds = self.datasets[case[0]]
        position = case[1]
        counts = self.counts[ds.count_keys[case[2]]]
        judge, why = ds.setup()
        counts.samples += 1
        if judge is None:
            counts.bad_input += 1
            self._record(ds, position, None, "bad-input", item)
            pytest.fail(f"not verified: {ds.name} cannot be judged ({self._test_id(ds, 'test_manifest')} says why)", pytrace=False)
        verdict, item.verdict = item.verdict, None  # fetched already by protocol.py, when it looked
        if verdict is None:
            verdict = self._take(ds, case)
        if isinstance(verdict, BaseException):
            counts.bad_input += 1
            self._record(ds, position, verdict, "bad-input", item)
            if isinstance(verdict, JudgeStuck):  # not the sample's error: no traceback of the plugin
                pytest.fail(str(verdict), pytrace=False)
            raise verdict
        counts.tokens += verdict.n_tokens
        kind = verdict.kind
        if kind == BAD_INPUT:
            counts.bad_input += 1
            report = verdict.report
            if not report.startswith(str(ds.index.path)):  # the judge knows no file: name it here
                report = f"{ds.index.path}: {report}"
            self._record(ds, position, verdict, "bad-input", item)
            pytest.fail(report, pytrace=False)
        counts.hunks += verdict.hunks
        if kind in (EXACT, POLICY):
            self._passed(ds, position, counts, verdict, item)
            if ds.stored and (key := ds.snapshot_key(item)) in ds.stored:
                counts.stale_snapshots.append(key)
            return
        snapshot = snapshot_assertion(item)
        if snapshot == verdict.signature:
            _count_prompt(counts, verdict.prompt, True)
            counts.known += 1
            type(counts).bump(counts.known_by_class, verdict.classes)
            self._record(ds, position, verdict, "known", item)
            return
        counts.new += 1
        _count_prompt(counts, verdict.prompt, False)
        type(counts).bump(counts.new_by_class, verdict.classes)
        self._record(ds, position, verdict, "new", item)
        hint = self._no_match_hint(ds, item)
        pytest.fail(
            f"{ds.name}/{ds.index.name(position)}{f' under view {ds.views[case[2]]}' if ds.multi_view else ''} "
            f"(line {verdict.line}): {_sides(verdict)}{ds.judged_code}: "
            f"{', '.join(verdict.classes)}\n{verdict.report}\n{hint} If this divergence is expected, review it and "
            f"record it with `pytest {self._pasted_id(ds, item.name)}{self._golden_option()} --snapshot-update` (every such "
            f"sample of the dataset: `pytest --tokfidelity-dataset={ds.name}{self._golden_option()} --snapshot-update`).",
            pytrace=False,
        )

    def _no_match_hint(self, ds, item) -> str:
        """Why no reviewed divergence matched: the stored one differs, none is stored, or one is stored under
        another dataset's name (the folder renamed or copied: names carry the folder's name)."""
        key, where = ds.snapshot_key(item), snapshot_file(ds.dir, ds.snapshot_basename)
        if key in ds.stored:
            return f"It differs from the reviewed divergence stored in {where}."
        others = reviewed_under_other_names(ds.stored, key)
        if not others:
            return "No reviewed divergence is stored for this sample."
        other, name = others[0]
        return (
            f"No reviewed divergence is stored for this sample under this dataset's name ({ds.name}), but {where} holds "
            f"one named {name}: reviews are named by their dataset's folder, so a folder renamed or copied finds "
            f"none of them. If this folder was {other}, rename the entries' `[{other}/` to `[{ds.name}/` in that file "
            f"(its review is then checked as before)."
        )

    def _check_gate_record(self, ds) -> None:
        """``test_gate_policy`` named alone: the gate as its record and today's files say (``gate check``)."""
        from pipeline.core.gate import check_gate

        opt = self.session.config.option
        status = check_gate(ds.name, golden_dir=self.session.golden_dir, tokenizer=opt.tokfidelity_tokenizer,
                            state_dir=opt.tokfidelity_state_dir, view=None if "," in (opt.tokfidelity_view or "") else opt.tokfidelity_view)
        if not status.open:
            whole = f"pytest {self._pasted_id(ds)}"
            pytest.fail(f"{status.message}\nnext: {status.next_step}\n(the gate is decided by a run of the whole dataset: `{whole}`)",
                        pytrace=False)

    def _file_id(self, ds) -> str:
        """The node id of ``ds``'s file (its samples.jsonl), as pytest prints it and takes it back."""
        from .selection import dataset_file, file_nodeid

        return file_nodeid(self.session.config, dataset_file(ds.dir))

    def _pasted_id(self, ds, name: str | None = None) -> str:
        """``ds``'s file (and test ``name`` in it) as a pasted command names it (selection.pasted_path)."""
        from .selection import dataset_file, pasted_path

        path = pasted_path(self.session.config, dataset_file(ds.dir))
        return f"{path}::{name}" if name else path

    def _golden_option(self) -> str:
        """The run's --tokfidelity-golden-dir, for a printed command (a path outside the default golden dir names
        its dataset only with it)."""
        golden = self.session.config.option.tokfidelity_golden_dir
        return f" --tokfidelity-golden-dir={golden}" if golden else ""

    def _test_id(self, ds, name: str) -> str:
        return f"{self._file_id(ds)}::{name}"

    def _record(self, ds, position: int, verdict, outcome: str, item) -> None:
        if self.session.results is not None:
            self.session.results.record(ds, position, verdict, outcome, test=item.nodeid, view=ds.views[item.case[2]])

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
            if ds.view_error and not any(ds.view_error in p for p in problems):  # --tokfidelity-view's
                problems.append(ds.view_error)
            if ds.index.problem:
                problems.append(f"{ds.index.path}: {ds.index.problem}")
            problems += [f"{ds.dir / rel}: cannot be read ({why}); make it readable, or move it out of the dataset folder "
                         "(every file of a dataset folder is pinned by the gate)" for rel, why in ds.unreadable_files().items()]
            if problems:
                pytest.fail("\n".join(problems), pytrace=False)
            return
        if name == GATE_TEST:
            return self._check_gate_record(ds)
        judge, why = ds.setup()
        if judge is None:
            pytest.fail(f"cannot check {ds.name}: it cannot be judged ({self._test_id(ds, 'test_manifest')} says why)", pytrace=False)
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


def _count_prompt(counts, prompt: str, reviewed: bool) -> None:
    """Count a judged sample's prompt side (``Verdict.prompt``)."""
    if prompt == PROMPT_EXACT:
        counts.prompt_exact += 1
    elif prompt == PROMPT_UNCHECKED:
        counts.prompt_unchecked += 1
    elif prompt == PROMPT_OFF:
        counts.prompt_off += 1
    elif reviewed:
        counts.prompt_reviewed += 1
    else:
        counts.prompt_new += 1


def _sides(verdict: Verdict) -> str:
    """Which side of the sample diverged, in words."""
    prompt = verdict.prompt not in (PROMPT_EXACT, PROMPT_UNCHECKED, PROMPT_OFF)
    if prompt and verdict.output_diverged:
        return "the rendered prompt ids differ from the golden prompt_ids, and the rebuilt ids from the golden ids"
    if prompt:
        return "the rendered prompt ids differ from the golden prompt_ids (the output is exact or accepted)"
    return "the rebuilt ids differ from the golden ids"
