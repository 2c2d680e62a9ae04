"""Verdicts on golden samples: reconstruct, compare, diagnose, apply the accept policy.

Plain functions for anything that judges golden data (the pytest plugin is one caller).
``Judge`` binds a dataset's profile, tokenizer, view and accept policy once; calling it on a
sample is the per-sample path, run millions of times: no per-call setup in it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from .diagnose import diagnose
from .diagnosis import Diagnosis
from .divergence_classes import CLASSES, TEXT_PRESERVING_CLASSES, by_severity
from .prompt_check import PROMPT_EXACT, PROMPT_OFF, PROMPT_UNCHECKED
from .render import RenderError
from .golden import GoldenError, GoldenSample
from .profiles import Profile
from .reconstruct import ReconstructionError, reconstruct_unless
from .responses import ResponseError, parse_response
from .tokenizer import Tokenizer
from .engines.request import request_of
from .views import api_view, view_turn_and_bytes

__all__ = [
    "EXACT",
    "POLICY",
    "DIVERGENT",
    "BAD_INPUT",
    "Verdict",
    "Judge",
    "with_prompt",
    "PROMPT_CLASS_PREFIX",
    "PROMPT_EXACT",
    "PROMPT_OFF",
    "PROMPT_UNCHECKED",
    "policy_problems",
    "vocabulary_problems",
    "vocabulary_problem",
    "stop_token_problems",
]

# Verdict kinds.
EXACT = "exact"  # reconstruction equals the golden ids
POLICY = "policy"  # differs only in text-preserving ways the manifest's accept policy allows
DIVERGENT = "divergent"  # differs otherwise: passes only as a reviewed (snapshotted) divergence
BAD_INPUT = "bad-input"  # the sample (or its recorded response) cannot be read


@dataclass(frozen=True, slots=True)
class Verdict:
    sample_id: str
    line: int
    kind: str
    n_tokens: int = 0  # golden output ids
    classes: tuple[str, ...] = ()  # divergence classes, each once, in order of first hunk
    hunks: int = 0
    hunks_by_class: Mapping[str, int] = field(default_factory=dict)
    signature: Any = None  # Diagnosis.signature(): what a reviewed snapshot stores
    report: str = ""  # the rendered diagnosis, or what is wrong with the input
    details: Any = None  # what Judge's ``explain`` made of the diagnosis (None without one)
    # The prompt side (prompt_check.py): "exact", "" (not checked: no prompt_ids), "off" (prompt verdicts
    # off), or the prompt's divergence class (its hunk is in ``signature["prompt"]`` and ``report``).
    prompt: str = ""

    def __reduce__(self):
        """Pickled as the call that makes it (judging processes send verdicts in chunks; the
        dataclass's own way costs about 4x): an exact verdict as its id, line, length and prompt side."""
        if (
            self.kind == EXACT and self.classes == () and self.hunks == 0 and type(self.hunks_by_class) is dict
            and not self.hunks_by_class and self.signature is None and self.report == "" and self.details is None
        ):
            return _exact_verdict, (self.sample_id, self.line, self.n_tokens, self.prompt)
        return Verdict, (
            self.sample_id, self.line, self.kind, self.n_tokens, self.classes, self.hunks, self.hunks_by_class,
            self.signature, self.report, self.details, self.prompt,
        )

    @property
    def output_diverged(self) -> bool:
        """The output side differs (a prompt divergence alone leaves it exact)."""
        return any(not c.startswith(PROMPT_CLASS_PREFIX) for c in self.classes)


PROMPT_CLASS_PREFIX = "prompt:"  # a prompt divergence's class among a verdict's classes: "prompt:history"


def sample_request(sample: GoldenSample):
    """The request a golden sample records (its tools, tool_choice, chat template kwargs and prompt ids):
    what the view's parsers read besides the text."""
    return request_of(sample.tools, sample.tool_choice, sample.chat_template_kwargs, sample.prompt_ids)


def _exact_verdict(sample_id: str, line: int, n_tokens: int, prompt: str = "") -> Verdict:
    return Verdict(sample_id, line, EXACT, n_tokens, prompt=prompt)


def policy_problems(accept: Mapping[str, float]) -> list[str]:
    """What is wrong with a manifest's ``accept`` policy: only text-preserving classes may be listed."""
    problems = []
    for cls in accept:
        if cls not in CLASSES:
            problems.append(f"accept.{cls}: unknown divergence class; known: {', '.join(CLASSES)}")
        elif cls not in TEXT_PRESERVING_CLASSES:
            problems.append(
                f"accept.{cls}: this class changes or loses text, so no policy may accept it; "
                "review each such sample and record it with --snapshot-update instead"
            )
    return problems


class Judge:
    """Verdicts for one dataset's samples, with everything per-dataset bound once."""

    def __init__(
        self, profile: Profile, tokenizer: Tokenizer, view: str, accept: Mapping[str, float] | None = None,
        explain: Callable[[GoldenSample, Diagnosis, str], Any] | None = None, prompts: bool = True,
        reconstruct: Callable[[Mapping[str, Any]], list[int]] | None = None,
        render: Callable[..., list[int]] | None = None,
        trainer: Any = None,
    ):
        from .prompt_check import PromptJudge

        self.profile = profile
        # A user's own functions (own_code.bound_reconstructor / bound_renderer), judged instead of
        # tokfidelity's: None judges tokfidelity's reconstruction and rendering.
        self.reconstruct = reconstruct
        # A trainer's preprocessing (trainers.Trainer), judged on both sides instead of tokfidelity's code.
        self.trainer = trainer
        # The prompt side: each sample's conversation rendered and compared with its prompt_ids (None: off).
        self.prompts = PromptJudge(profile, tokenizer, render) if prompts else None
        self.tokenizer = tokenizer
        self.view = view
        # Called on each diagnosed sample with its verdict kind (e.g. a report's per-sample details,
        # pipeline.reporting); what it returns travels with the verdict as ``details``.
        self.explain = explain
        # Only text-preserving classes can be accepted by policy, whatever the manifest says.
        self.accept = {c: r for c, r in (accept or {}).items() if c in TEXT_PRESERVING_CLASSES}
        # Samples judged by reconstruction here, and how many of them differed: the packed comparison
        # (reconstruct_unless) saves about 6% of an exact sample's instructions and costs about 2% of a
        # differing one's, so it is taken while at most 60% have differed. Either way answers alike.
        self._compared = 0
        self._differed = 0

    def __call__(self, sample: GoldenSample | GoldenError) -> Verdict:
        """The verdict on both sides of a sample: its output, then its prompt."""
        return self.prompt_side(sample, self._output(sample))

    def output_side(self, sample: GoldenSample | GoldenError) -> Verdict:
        """The verdict on the sample's output alone; ``prompt_side`` completes it. A judge of many samples
        runs each side over a chunk of them in turn: rendering and encoding interleaved sample by sample
        evict each other's code and tables from the CPU's caches (the prompt side then costs about twice
        as much)."""
        return self._output(sample)

    def prompt_side(self, sample: GoldenSample | GoldenError, verdict: Verdict) -> Verdict:
        """``verdict`` (``output_side``'s on ``sample``) with the sample's prompt side judged."""
        return self.prompt_sides(sample, (verdict,))[0]

    def output_sides(self, sample: GoldenSample | GoldenError, others: Sequence["Judge"]) -> tuple[Verdict, ...]:
        """``output_side`` under this judge's view and each of ``others``' (judges of the same profile and
        tokenizer under other views: a dataset judged under several); ``prompt_sides`` completes them."""
        return (self._output(sample), *(j._output(sample) for j in others))

    def prompt_sides(self, sample: GoldenSample | GoldenError, verdicts: tuple[Verdict, ...]) -> tuple[Verdict, ...]:
        """``output_sides``' verdicts with the sample's prompt side, rendered once for every view."""
        if type(sample) is not GoldenSample or all(v.kind == BAD_INPUT for v in verdicts) or self.trainer is not None:
            return verdicts  # (a trainer's verdict holds its prompt side)
        prompt = self._prompt(sample)
        return tuple(
            v if v.kind == BAD_INPUT else prompt if type(prompt) is Verdict else with_prompt(v, sample, prompt) for v in verdicts
        )

    def _prompt(self, sample: GoldenSample) -> Any:
        """The prompt side of a sample (with_prompt's ``prompt``), or a bad-input Verdict when it cannot be rendered."""
        if self.prompts is None:
            return PROMPT_OFF
        try:
            return self.prompts(sample)
        except RenderError as e:
            return Verdict(sample.id, sample.line, BAD_INPUT, len(sample.output_ids),
                           report=f"{sample.id}: line {sample.line}: field {e.field!r}: the prompt cannot be rendered: {e.message}")

    def output_side_chunk(
        self, samples: Sequence[GoldenSample | GoldenError], began: Callable[[int], None] | None = None,
        others: Sequence["Judge"] = (),
    ) -> list[Any]:
        """``output_side`` of each of ``samples``: its Verdict, or the exception judging it raised. In two
        passes over the chunk: every sample's API view (its golden ids decoded and parsed), then every
        reconstruction (encoded and compared). Decoding and encoding interleaved sample by sample evict each
        other's tables from the CPU's caches; two passes take about 8% less CPU (bench/bench_judge.py). The
        verdicts are output_side's: each pass runs the same code on each sample, the second in order.
        ``began(i)`` is called before each pass over ``samples[i]`` (a judging process's progress). With
        ``others`` each item is ``output_sides(sample, others)``'s tuple, judged sample by sample."""
        # A user's code (a trainer, an own reconstruction) and several views judge sample by sample.
        own = self.trainer is not None or self.reconstruct is not None or bool(others)
        viewed = []
        for i, sample in enumerate(samples):
            if began is not None:
                began(i)
            viewed.append(None if own or not isinstance(sample, GoldenSample) else self._viewed(sample))
        out: list[Any] = []
        for i, sample in enumerate(samples):
            if began is not None:
                began(i)
            try:
                out.append(self.output_sides(sample, others) if others else self._output(sample, viewed[i]))
            except Exception as e:  # noqa: BLE001 - the caller re-raises it in the sample's own test
                out.append(e)
        return out

    def _viewed(self, sample: GoldenSample) -> Any:
        """The first of output_side_chunk's passes: ``_view(sample)``, or the exception it raised."""
        try:
            return self._view(sample)
        except Exception as e:  # noqa: BLE001 - raised again where _judge would have raised it
            return e

    def _view(self, sample: GoldenSample) -> tuple[Any, bytes | None]:
        """(the turn to reconstruct, the golden ids' bytes when the view decoded them: a diagnosis reuses them)."""
        if sample.response is not None:
            return parse_response(sample.response), None
        return view_turn_and_bytes(
            sample.output_ids, sample.finish_reason, self.profile, self.tokenizer, self.view, sample_request(sample)
        )

    def _output(self, sample: GoldenSample | GoldenError, viewed: Any = None) -> Verdict:
        """The verdict on one sample's output (``viewed``: ``_viewed(sample)`` when taken already). Ids
        outside the vocabulary (negative ones included, which Python's indexing would read as tokens
        from the table's end) are bad input, whatever judging made of them; an exact sample's ids came
        out of the tokenizer, so only others are checked."""
        if isinstance(sample, GoldenError):
            return Verdict("", sample.line, BAD_INPUT, report=str(sample))
        try:
            verdict = self._judge(sample, viewed)
        except Exception:
            if (outside := self._outside(sample)) is not None:
                return outside
            raise
        if verdict.kind != EXACT and (outside := self._outside(sample)) is not None:
            return outside
        return verdict

    def _outside(self, sample: GoldenSample) -> Verdict | None:
        problem = vocabulary_problem(sample.output_ids, self.tokenizer)
        if problem is None:
            return None
        return Verdict(sample.id, sample.line, BAD_INPUT, len(sample.output_ids), report=f"line {sample.line} ({sample.id}): {problem}")

    def _judge(self, sample: GoldenSample, viewed: Any = None) -> Verdict:
        if self.trainer is not None:
            return self.trainer.judge(self, sample)
        if self.reconstruct is not None:
            return self._judge_own(sample)
        golden = sample.output_ids
        try:
            if viewed is None:
                response, golden_bytes = self._view(sample)
            elif isinstance(viewed, BaseException):
                raise viewed
            else:
                response, golden_bytes = viewed
            packed = self._differed * 5 <= self._compared * 3
            rebuilt = reconstruct_unless(golden, response, self.profile, self.tokenizer, packed=packed)
        except (ResponseError, ReconstructionError) as e:
            where = "response." + e.field if sample.response is not None else f"(view {self.view}) {e.field}"
            return Verdict(
                sample.id, sample.line, BAD_INPUT, len(golden),
                report=f"{sample.id}: line {sample.line}: field {where!r}: {e.message}",
            )
        self._compared += 1
        if rebuilt is None:  # the reconstruction is the golden ids
            return Verdict(sample.id, sample.line, EXACT, len(golden))
        self._differed += 1
        return self._diagnosed(sample, golden, rebuilt, golden_bytes, response.finish_reason)

    def _judge_own(self, sample: GoldenSample) -> Verdict:
        """The verdict on a user's reconstruction: the message dict the view returns (or the recorded
        response), through the user's function, compared and diagnosed as tokfidelity's own would be."""
        golden = sample.output_ids
        try:
            if sample.response is not None:
                finish = parse_response(sample.response).finish_reason  # a response that cannot be read is bad input
                message = sample.response
            else:
                message = api_view(golden, sample.finish_reason, self.profile, self.tokenizer, self.view,
                                   sample_request(sample))
                finish = message["finish_reason"]
        except (ResponseError, ReconstructionError) as e:
            where = "response." + e.field if sample.response is not None else f"(view {self.view}) {e.field}"
            return Verdict(sample.id, sample.line, BAD_INPUT, len(golden), report=f"{sample.id}: line {sample.line}: field {where!r}: {e.message}")
        rebuilt = self.reconstruct(message)
        if rebuilt == golden:
            return Verdict(sample.id, sample.line, EXACT, len(golden))
        return self._diagnosed(sample, golden, rebuilt, None, finish)

    def _diagnosed(
        self, sample: GoldenSample, golden: Sequence[int], rebuilt: Sequence[int], golden_bytes: bytes | None = None,
        response_finish: str | None = None,
    ) -> Verdict:
        diagnosis = diagnose(
            golden, rebuilt, self.tokenizer, profile=self.profile, finish_reason=sample.finish_reason,
            golden_bytes=golden_bytes, response_finish_reason=response_finish,
        )
        by_class: dict[str, int] = {}
        for hunk in diagnosis.hunks:
            by_class[hunk.cls] = by_class.get(hunk.cls, 0) + 1
        accepted = bool(diagnosis.hunks) and all(h.text_preserving and h.cls in self.accept for h in diagnosis.hunks)
        kind = POLICY if accepted else DIVERGENT
        return Verdict(
            sample.id,
            sample.line,
            kind,
            len(golden),
            classes=tuple(by_severity(by_class)),  # the headline (most severe) class first
            hunks=len(diagnosis.hunks),
            hunks_by_class=by_class,
            signature=None if accepted else diagnosis.signature(),
            report="" if accepted else diagnosis.render(),
            details=self.explain(sample, diagnosis, kind) if self.explain is not None else None,
        )


def vocabulary_problem(ids: Sequence[int], tokenizer: Tokenizer) -> str | None:
    """What is wrong with ``ids`` outside the tokenizer's vocabulary, negative ones included (None: nothing).
    The one rule for every caller: the judge, the suite's vocabulary check, ``build``."""
    n = tokenizer.n_vocab
    if ids and (min(ids) < 0 or max(ids) >= n):
        bad = sorted({i for i in ids if not 0 <= i < n})
        return f"ids {bad[:5]} are outside the vocabulary of {tokenizer.name} (0..{n - 1})"
    return None


def with_prompt(verdict: Verdict, sample: GoldenSample, prompt: Any) -> Verdict:
    """The verdict on the output with the prompt side's: ``prompt`` is PROMPT_EXACT, PROMPT_UNCHECKED,
    PROMPT_OFF or a PromptDivergence (then the sample diverges, whatever its output did)."""
    if type(prompt) is str:
        if prompt == verdict.prompt:
            return verdict
        if verdict.kind == EXACT:
            return Verdict(verdict.sample_id, verdict.line, EXACT, verdict.n_tokens, details=verdict.details, prompt=prompt)
        return replace(verdict, prompt=prompt)
    output = dict(verdict.signature) if isinstance(verdict.signature, Mapping) else {}
    side = "the output is exact" if verdict.kind == EXACT else "the output is accepted by policy" if verdict.kind == POLICY else None
    report = f"prompt: {prompt.render()}\n" + (f"output: {side}" if side else f"output: {verdict.report}")
    return replace(
        verdict, kind=DIVERGENT, classes=verdict.classes + (PROMPT_CLASS_PREFIX + prompt.cls,),
        signature={**output, "prompt": prompt.signature()}, report=report, prompt=prompt.cls,
    )


def vocabulary_problems(samples: Iterable[GoldenSample], tokenizer: Tokenizer, limit: int = 10) -> list[str]:
    """Samples holding ids outside the tokenizer's vocabulary (first ``limit``)."""
    problems = []
    for s in samples:
        if (problem := vocabulary_problem(s.output_ids, tokenizer)) is not None:
            problems.append(f"line {s.line} ({s.id}): {problem}")
            if len(problems) >= limit:
                break
    return problems


def stop_token_problems(samples: Iterable[GoldenSample], profile: Profile, tokenizer: Tokenizer, limit: int = 10) -> list[str]:
    """``stop`` samples whose last id is none of the profile's stop tokens (first ``limit``)."""
    stops = profile.stop_ids
    problems = []
    for s in samples:
        if s.finish_reason == "stop" and (not s.output_ids or s.output_ids[-1] not in stops):
            # (built for a problem only: this runs on every judged sample)
            expected = " or ".join(f"{i} {t!r}" for i, t in zip(stops, profile.spec.stop_texts))
            last = s.output_ids[-1] if s.output_ids else None
            found = "no ids" if last is None else f"{last} {tokenizer.token_text(last)!r}" if tokenizer.is_valid_id(last) else str(last)
            problems.append(f"line {s.line} ({s.id}): finish_reason stop but the last id is {found}, not {expected}")
            if len(problems) >= limit:
                break
    return problems

