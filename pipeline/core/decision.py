"""The gate decision: may a dataset's gate open on these counts, this manifest and this run?

One function, ``decide``, used twice: by the plugin when a run ends (to write an open or a closed
record, or leave the record as it is) and by ``check_gate`` on a stored record (whose counts must
be counts that could have opened the gate: a hand-edited "new 7" or "bad_input 3" keeps it shut).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any

__all__ = ["Counts", "Completeness", "Decision", "decide", "DATASET_CHECKS", "OPEN", "CLOSED", "UNCHANGED"]

DATASET_CHECKS = ("test_manifest", "test_vocabulary", "test_special_tokens", "test_stop_tokens")
OPEN, CLOSED, UNCHANGED = "open", "closed", "unchanged"
_NUMBERS = ("samples", "exact", "policy", "known", "new", "bad_input", "tokens", "hunks",
            "prompt_exact", "prompt_reviewed", "prompt_new", "prompt_unchecked", "prompt_off")
_BY_CLASS = ("policy_hunks_by_class", "known_by_class", "new_by_class")


@dataclass(slots=True)
class Counts:
    """Outcomes of one dataset's sample tests in one process, merged across processes."""

    samples: int = 0
    exact: int = 0
    policy: int = 0
    known: int = 0
    new: int = 0
    bad_input: int = 0
    tokens: int = 0
    hunks: int = 0
    # The prompt side of the samples that were judged (prompt_check.py): rendered and equal to the golden
    # prompt_ids, diverging as a reviewed snapshot says, diverging otherwise, not checked (no
    # prompt_ids), or not rendered (--tokfidelity-prompts=off).
    prompt_exact: int = 0
    prompt_reviewed: int = 0
    prompt_new: int = 0
    prompt_unchecked: int = 0
    prompt_off: int = 0
    policy_hunks_by_class: dict[str, int] = field(default_factory=dict)
    known_by_class: dict[str, int] = field(default_factory=dict)
    new_by_class: dict[str, int] = field(default_factory=dict)
    stale_snapshots: list[str] = field(default_factory=list)

    def merge(self, other: "Counts") -> "Counts":
        for name in _NUMBERS:
            setattr(self, name, getattr(self, name) + getattr(other, name))
        for name in _BY_CLASS:
            mine = getattr(self, name)
            for k, v in getattr(other, name).items():
                mine[k] = mine.get(k, 0) + v
        self.stale_snapshots.extend(other.stale_snapshots)
        return self

    @staticmethod
    def bump(counter: dict[str, int], keys: Iterable[str], n: int = 1) -> None:
        for k in keys:
            counter[k] = counter.get(k, 0) + n

    @property
    def passed(self) -> int:
        return self.exact + self.policy + self.known

    def to_dict(self) -> dict[str, Any]:
        return {f.name: (list(v) if isinstance(v := getattr(self, f.name), list) else dict(v) if isinstance(v, dict) else v) for f in fields(self)}

    def to_record(self) -> dict[str, Any]:
        """What a gate record keeps (no per-sample lists)."""
        return {k: v for k, v in self.to_dict().items() if not isinstance(v, list)}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "Counts":
        """Counts from a record or a worker; ValueError naming the first field that is not a count."""
        if not isinstance(d, Mapping):
            raise ValueError("counts: not an object")
        out = cls()
        for name in _NUMBERS:
            value = d.get(name, 0)
            if type(value) is not int or value < 0:
                raise ValueError(f"counts.{name}: expected a whole number >= 0, got {value!r}")
            setattr(out, name, value)
        for name in _BY_CLASS:
            value = d.get(name, {})
            if not isinstance(value, Mapping) or not all(isinstance(k, str) and type(v) is int and v >= 0 for k, v in value.items()):
                raise ValueError(f"counts.{name}: expected {{class: whole number}}, got {value!r}")
            setattr(out, name, dict(value))
        out.stale_snapshots = [s for s in d.get("stale_snapshots", []) if isinstance(s, str)]
        return out


@dataclass(frozen=True)
class Completeness:
    """How complete a run of one dataset was."""

    expected: int  # samples in the dataset (non-blank lines of samples.jsonl)
    passed: int  # sample tests that passed
    failed: int = 0  # tests of the dataset that failed (samples and checks)
    checks_passed: frozenset[str] = frozenset(DATASET_CHECKS)
    partial: Sequence[str] = ()  # why the run did not cover the whole dataset (-k, -x, a lost worker...)
    share: bool = False  # a shard's share of the dataset, which may hold no sample: green on its checks alone


@dataclass(frozen=True)
class Decision:
    status: str  # OPEN, CLOSED (write a closed record), or UNCHANGED (a partial run: leave the record)
    reason: str  # why, in a few words
    problems: tuple[str, ...] = ()  # what fails the run itself (failed tests, a policy exceeded...), not only the gate
    fix: str = ""  # what to change before the next run can open the gate (no command: the caller knows which)

    @property
    def open(self) -> bool:
        return self.status == OPEN


FAILED_TESTS_FIX = "fix what the failed tests report (a divergence you accept: review it, then record it with --snapshot-update)"


def _policy_problems(counts: Counts, accept: Mapping[str, float]) -> tuple[list[str], list[str]]:
    """(problems, fixes): accepted hunks of a class over the manifest's rate for it."""
    problems, fixes = [], []
    for cls, n in sorted(counts.policy_hunks_by_class.items()):
        limit = accept.get(cls, 0.0)
        if counts.tokens and n / counts.tokens > limit or not counts.tokens and n:
            per = n / counts.tokens if counts.tokens else float("inf")
            problems.append(
                f"accept policy exceeded: {n} {cls} hunks in {counts.tokens} tokens ({per:.5f} per token) > {limit} (manifest accept.{cls})"
            )
            fixes.append(f"raise the manifest's field accept.{cls} to at least {per:.5f} if these re-splits are acceptable")
    return problems, fixes


def decide(counts: Counts, manifest: Any, completeness: Completeness) -> Decision:
    """The gate decision. ``manifest``: the dataset's ``Manifest`` (None when it is invalid)."""
    problems = [f"{completeness.failed} test(s) failed"] if completeness.failed else []
    fixes = [FAILED_TESTS_FIX] if completeness.failed else []
    if manifest is not None:
        policy, policy_fixes = _policy_problems(counts, manifest.accept)
        problems += policy
        fixes += policy_fixes
    if not completeness.failed:  # counts that contradict the test outcomes (a hand-edited record)
        if counts.new:
            problems.append(f"{counts.new} new divergence(s)")
        if counts.bad_input:
            problems.append(f"{counts.bad_input} sample(s) with bad input")
    if problems:
        return Decision(CLOSED, "; ".join(problems), tuple(problems), "; ".join(fixes) or FAILED_TESTS_FIX)
    if completeness.partial:
        return Decision(UNCHANGED, "partial run (" + ", ".join(completeness.partial) + ")")
    if manifest is None:
        return Decision(CLOSED, "the manifest is invalid", fix="fix manifest.json as test_manifest says")
    if completeness.expected == 0 and not completeness.share:
        return Decision(UNCHANGED, "the dataset has no samples")
    missing = [c for c in DATASET_CHECKS if c not in completeness.checks_passed]
    if completeness.passed != completeness.expected or missing:
        return Decision(
            UNCHANGED,
            f"{completeness.passed} of {completeness.expected} samples passed"
            + (f", checks not passed: {', '.join(missing)}" if missing else ""),
        )
    if counts.samples != completeness.expected or counts.passed != counts.samples:
        why = (
            f"the counts do not add up: {counts.samples} samples counted, {counts.passed} passed "
            f"({counts.exact} exact + {counts.policy} policy + {counts.known} known), {completeness.expected} in the dataset"
        )
        return Decision(CLOSED, why, (why,), "run the suite again")
    limit = manifest.max_known_divergence_rate
    rate = counts.known / counts.samples if counts.samples else 0.0  # a shard may hold no sample
    if rate > limit:
        return Decision(
            CLOSED,
            f"known-divergence rate {counts.known}/{counts.samples} = {rate:.4f} "
            f"exceeds the manifest's max_known_divergence_rate {limit}",
            fix=f"review the known divergences; if they are acceptable, raise the manifest's field max_known_divergence_rate "
            f"to at least {rate:.4f}, else fix the samples",
        )
    return Decision(OPEN, "complete and green")
