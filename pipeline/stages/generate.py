"""Bulk generation: prompts in, one checked record per finished sample out, resumable at any moment.

Output folder layout (``--out DIR``):

* ``run.json``: what the records were made with (dataset, profile, tokenizer and its fingerprint,
  model, base URL). A later run into the same folder must agree, so two runs never mix.
* ``generations.jsonl``: one JSON object a line, one line per finished sample, written with a single
  ``write`` of the whole line on an ``O_APPEND`` descriptor. A process killed at any moment (``kill -9``
  included) leaves whole lines plus at most one torn last line; the next run cuts the torn line off,
  skips every id already present and asks only for the rest. No finished sample is lost or written twice.
* ``summary.json``: totals over the whole file, rewritten at the end of each run.

Each record holds the request (``messages``, ``tools``), the API response as received, the reconstructed
``output_ids`` (``pipeline.core.reconstruct``) and ``check``: ``ok`` when ``len(output_ids)`` equals
``usage.completion_tokens``, else ``usage_mismatch``, ``usage_missing``, ``reconstruction_error`` or
``hidden_reasoning`` (usage counts reasoning tokens, the response holds no reasoning text), with
``check_detail``. Flagged records are kept (the response was paid for) but never pass as ok.

When the server returned token ids (vLLM/SGLang ``return_token_ids``: ``pipeline.stages.engine_ids``),
``output_ids`` are the engine's (``ids_source: "engine"``; otherwise ``"reconstruction"``), the
server's prompt ids are kept as ``prompt_ids`` and compared with our rendering (``prompt_render``),
and the reconstruction is judged against the engine's ids by the suite's own judge
(``pipeline.stages.engine_check``): a difference is ``check: reconstruction_differs`` with the
``divergence`` (classes, hunks, the snapshot signature); such a record is still usable. OpenRouter's
``provider`` and ``native_finish_reason`` are kept per record; the summary counts checks, divergence
classes and ids sources overall and per provider. Each record carries the ``view`` its provider serves
with (``--view-for``; ``pipeline.stages.served_views``) and, with engine ids, ``views_reproduce``: which of
the profile's views give back the response's text; the summary's ``views_by_provider`` counts them.
"""

from __future__ import annotations

import asyncio
import io
import json
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.files import atomic_write, os_error_message, read_input
from .client import ApiError, ChatClient, ChatResult, RetryPolicy
from .engine_check import compare_engine_ids, hidden_reasoning_tokens, prompt_render_result
from .engine_ids import EngineIdsError, returned_ids
from ..core.fidelity import Judge
from ..core.golden import DEFAULT_VIEW
from ..core.jsonl import JsonLineError, json_lines
from ..core.profiles import Profile
from .prompts import Prompt
from .secrets import KeyMask
from .served_views import ViewMatrix, view_of, views_reproduce
from ..core.reconstruct import ReconstructionError, reconstruct_output_ids
from ..core.responses import ResponseError, parse_response
from ..core.tokenizer import Tokenizer

__all__ = [
    "GenerationJob",
    "Totals",
    "check_record",
    "JsonlAppender",
    "load_finished",
    "run_generation",
    "write_summary",
    "RunResult",
    "RECORDS_FILE",
    "RUN_FILE",
    "SUMMARY_FILE",
]

RECORDS_FILE = "generations.jsonl"
RUN_FILE = "run.json"
SUMMARY_FILE = "summary.json"
CHECKS = ("ok", "usage_mismatch", "usage_missing", "reconstruction_error", "hidden_reasoning", "reconstruction_differs")
# Checks whose record's ids may be used for training: engine ids are the truth even when the text differs.
USABLE_ENGINE_CHECKS = ("ok", "reconstruction_differs")


@dataclass
class Totals:
    """Counts over records; ``add`` one record at a time."""

    samples: int = 0
    checks: dict[str, int] = field(default_factory=lambda: dict.fromkeys(CHECKS, 0))
    prompt_tokens: int = 0
    completion_tokens: int = 0
    reasoning_tokens: int = 0
    output_ids: int = 0
    cost: float = 0.0
    ids_sources: dict[str, int] = field(default_factory=dict)  # engine | reconstruction
    engine_compared: int = 0  # records with engine ids whose reconstruction was judged against them
    divergence_samples: dict[str, int] = field(default_factory=dict)  # class -> records holding it
    divergence_hunks: dict[str, int] = field(default_factory=dict)  # class -> hunks
    prompt_render: dict[str, int] = field(default_factory=dict)  # same | differs (server prompt ids vs ours)
    by_provider: dict[str, "Totals"] = field(default_factory=dict)
    views: ViewMatrix = field(default_factory=ViewMatrix)  # provider x view: served with, responses reproduced

    def add(self, record: Mapping[str, Any], *, per_provider: bool = True) -> None:
        self.samples += 1
        self.checks[record["check"]] = self.checks.get(record["check"], 0) + 1
        usage = record.get("usage") or {}
        self.prompt_tokens += _int(usage.get("prompt_tokens"))
        self.completion_tokens += _int(usage.get("completion_tokens"))
        self.reasoning_tokens += _int((usage.get("completion_tokens_details") or {}).get("reasoning_tokens"))
        cost = usage.get("cost")
        if isinstance(cost, (int, float)) and not isinstance(cost, bool):
            self.cost += cost
        self.output_ids += len(record.get("output_ids") or ())
        source = record.get("ids_source") or "reconstruction"
        self.ids_sources[source] = self.ids_sources.get(source, 0) + 1
        if source == "engine" and record["check"] in USABLE_ENGINE_CHECKS:
            self.engine_compared += 1
        divergence = record.get("divergence") if isinstance(record.get("divergence"), dict) else {}
        for cls in divergence.get("classes") or ():
            self.divergence_samples[cls] = self.divergence_samples.get(cls, 0) + 1
        for cls, n in (divergence.get("hunks_by_class") or {}).items():
            self.divergence_hunks[cls] = self.divergence_hunks.get(cls, 0) + _int(n)
        render = record.get("prompt_render")
        if render is not None:
            key = "same" if render == "same" else "differs"
            self.prompt_render[key] = self.prompt_render.get(key, 0) + 1
        if per_provider:
            self.views.add(record)
            name = record.get("provider") if isinstance(record.get("provider"), str) else "(not named)"
            self.by_provider.setdefault(name, Totals()).add(record, per_provider=False)

    @property
    def flagged(self) -> int:
        return self.samples - self.checks.get("ok", 0)

    def divergence_rates(self) -> dict[str, float]:
        """Per class: the share of engine-compared records whose reconstruction diverges in that class."""
        n = self.engine_compared
        return {cls: round(k / n, 6) for cls, k in sorted(self.divergence_samples.items())} if n else {}

    def as_dict(self) -> dict[str, Any]:
        out = {
            "samples": self.samples,
            "checks": dict(self.checks),
            "flagged": self.flagged,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "reasoning_tokens": self.reasoning_tokens,
            "output_ids": self.output_ids,
            "cost": round(self.cost, 8),
            "ids_sources": dict(self.ids_sources),
        }
        if self.engine_compared:
            out["engine_ids"] = {
                "compared": self.engine_compared,
                "exact": self.engine_compared - self.checks.get("reconstruction_differs", 0),
                "reconstruction_differs": self.checks.get("reconstruction_differs", 0),
                "samples_by_class": dict(sorted(self.divergence_samples.items())),
                "rate_by_class": self.divergence_rates(),
                "hunks_by_class": dict(sorted(self.divergence_hunks.items())),
            }
        if self.prompt_render:
            out["prompt_render"] = dict(self.prompt_render)
        if self.views.providers:
            out["views_by_provider"] = self.views.as_dict()
        if self.by_provider:
            out["by_provider"] = {name: t.as_dict() for name, t in sorted(self.by_provider.items())}
        return out


def _int(value: Any) -> int:
    return value if type(value) is int else 0


def _usage_check(n_ids: int, usage: Mapping[str, Any] | None, what: str) -> tuple[str, str | None]:
    completion = usage.get("completion_tokens") if usage else None
    if type(completion) is not int:
        return "usage_missing", "the response has no integer usage.completion_tokens to check the ids against"
    if completion != n_ids:
        return "usage_mismatch", (
            f"{what} {n_ids} ids but usage.completion_tokens is {completion} ({n_ids - completion:+d}): "
            + ("the text does not give back the model's ids" if what == "reconstructed" else "the server's ids and its usage disagree")
        )
    return "ok", None


def _native_finish(body: Mapping[str, Any]) -> Any:
    choices = body.get("choices")
    return choices[0].get("native_finish_reason") if isinstance(choices, list) and choices and isinstance(choices[0], Mapping) else None


def check_record(prompt: Prompt, body: Mapping[str, Any], profile: Profile, tokenizer: Tokenizer, judge: Judge | None = None,
                 view: str | None = None) -> dict[str, Any]:
    """The record for one response: its ids (the engine's when returned, else reconstructed) and the checks;
    ``view``: the view its provider serves with (recorded; None: not recorded). With the engine's ids, which
    of the profile's views reproduce the response's text (``views_reproduce``)."""
    usage = body.get("usage") if isinstance(body.get("usage"), dict) else None
    record: dict[str, Any] = {"id": prompt.id, "messages": prompt.messages}
    if prompt.tools:
        record["tools"] = prompt.tools
    if prompt.params.get("chat_template_kwargs") is not None:  # the template variables the server rendered with
        record["chat_template_kwargs"] = prompt.params["chat_template_kwargs"]
    output_ids = finish = detail = turn = None
    divergence = reproduce = None
    try:
        returned = returned_ids(body)
    except EngineIdsError as e:
        returned, check, detail = None, "reconstruction_error", f"the server's ids are unreadable: {e}"
    try:
        turn = parse_response(body)
        finish = turn.finish_reason
        output_ids = reconstruct_output_ids(turn, profile, tokenizer)
    except (ResponseError, ReconstructionError) as e:
        check, detail = "reconstruction_error", str(e)
    if returned is not None and returned.present:
        output_ids = returned.output_ids
        record["ids_source"] = "engine"
        record["prompt_ids"] = returned.prompt_ids
        record["prompt_render"] = prompt_render_result(prompt, returned, profile, tokenizer)
        if detail is None:
            reproduce = views_reproduce(output_ids, turn, profile, tokenizer)
            comparison = compare_engine_ids(prompt.id, output_ids, finish, body, judge or Judge(profile, tokenizer, DEFAULT_VIEW))
            check, detail = _usage_check(len(output_ids), usage, "the server returned")
            if check == "ok" and not comparison.exact:
                divergence = comparison.divergence
                check = "reconstruction_differs" if divergence else "reconstruction_error"
                detail = comparison.report.split("\n", 1)[0] if comparison.report else None
    elif detail is None:
        record["ids_source"] = "reconstruction"
        hidden = hidden_reasoning_tokens(usage, turn.reasoning)
        if hidden:
            check = "hidden_reasoning"
            detail = (f"usage counts {hidden} reasoning tokens but the response holds no reasoning text: those ids "
                      "cannot be rebuilt; ask for reasoning in the response (OpenRouter: reasoning.exclude false) or use another provider")
        else:
            check, detail = _usage_check(len(output_ids), usage, "reconstructed")
    record.update(
        model=body.get("model"),
        provider=body.get("provider"),
        **({"view": view} if view is not None else {}),
        native_finish_reason=_native_finish(body),
        finish_reason=finish,
        output_ids=output_ids,
        usage=usage,
        check=check,
    )
    if divergence:
        record["divergence"] = divergence
    if reproduce is not None:
        record["views_reproduce"] = reproduce
    if detail:
        record["check_detail"] = detail
    record["response"] = body
    return record


class JsonlAppender:
    """Appends whole lines: each record is one ``os.write`` of the complete line on O_APPEND."""

    def __init__(self, path: os.PathLike | str, fsync: bool = False, mask: KeyMask = KeyMask(None)):
        self.path = Path(path)
        self.fsync = fsync
        self.mask = mask  # the last guard: no line holds the API key, however it got into the record
        self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666)

    def write(self, record: Mapping[str, Any]) -> None:
        try:
            data = memoryview(self.mask.text(json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n").encode())
        except UnicodeEncodeError:  # a lone surrogate ("\ud800" in a prompt or an answer): kept escaped
            data = memoryview(self.mask.text(json.dumps(record, separators=(",", ":")) + "\n").encode())
        start = os.fstat(self._fd).st_size  # one writer per folder (folder_lock): the line starts here
        try:
            while data:  # a regular file takes it in one call; loop only for the pathological case
                n = os.write(self._fd, data)
                data = data[n:]
        except OSError as e:  # a full disk: the part written is cut, so every line stays whole
            os.ftruncate(self._fd, start)
            raise OSError(e.errno, e.strerror, str(self.path)) from None
        if self.fsync:
            os.fsync(self._fd)

    def close(self) -> None:
        os.close(self._fd)


def load_finished(path: os.PathLike | str, view_of_provider: Callable[[Any], str] | None = None) -> tuple[set[str], Totals, int]:
    """Ids already in a records file, their totals, and how many bytes of a torn last line were cut.

    A torn last line (no newline: the writer was killed mid-write) is removed from the file; any
    other unreadable line is an error naming the line, since whole-line writes cannot produce it.
    ``view_of_provider``: the view this run records for a provider; a record that names another view
    was served under other settings (run.json edited between runs) and is an error naming its line: the
    folder would otherwise hold two claims on one provider's view."""
    path = Path(path)
    done: set[str] = set()
    totals = Totals()
    if not path.exists():
        return done, totals, 0
    try:
        data = read_input(path)
    except OSError as e:  # a folder, a FIFO, no permission
        raise ValueError(f"{path}: cannot be read ({e.strerror}); it should be the generations file of an earlier run") from None
    cut = 0
    end = data.rfind(b"\n") + 1
    if end < len(data):
        cut = len(data) - end
        os.truncate(path, end)
        data = data[:end]
    for line_no, record in json_lines(io.BytesIO(data), path):
        try:
            if isinstance(record, JsonLineError):
                raise record
            record_id = record["id"]
            record["check"]
            if not isinstance(record_id, str) or not isinstance(record.get("usage") or {}, dict):
                raise TypeError("field 'id' must be a string and 'usage' an object")
        except (JsonLineError, KeyError, TypeError) as e:
            why = e.message if isinstance(e, JsonLineError) else f"{type(e).__name__}: {e}"
            raise ValueError(
                f"{path}:{line_no}: not a generation record ({why}); "
                "the file was edited by hand or by another program: move it away or fix that line"
            ) from None
        if record_id in done:
            raise ValueError(f"{path}:{line_no}: field 'id': {record_id!r} appears twice; remove one of the lines")
        if view_of_provider is not None and "view" in record and record["view"] != (now := view_of_provider(record.get("provider"))):
            raise ValueError(f"{path}:{line_no}: field 'view': {record['view']!r}, but this run records provider "
                             f"{record.get('provider')!r} as served with view {now!r} (--view-for, or run.json's view_for, "
                             "changed between runs): use another --out folder so the two claims do not mix")
        done.add(record_id)
        totals.add(record)
    return done, totals, cut


@dataclass
class GenerationJob:
    """Everything one run needs, decided once before the first request."""

    out_dir: Path
    profile: Profile
    tokenizer: Tokenizer
    base_url: str
    api_key: str | None = field(repr=False)  # never in a repr, a log line or a traceback's locals
    model: str
    request_defaults: Mapping[str, Any]  # fields sent with every request (provider, reasoning, max_tokens, ...)
    concurrency: int = 32
    max_retries: int = 8
    timeout: float = 600.0
    retry_base_delay: float = 0.5
    fsync: bool = False
    default_view: str | None = None  # the view of providers --view-for does not name (the manifest's)
    view_for: Mapping[str, str] = field(default_factory=dict)  # provider -> view (served_views.view_of)

    @property
    def mask(self) -> KeyMask:
        return KeyMask(self.api_key)

    def request_body(self, prompt: Prompt) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.model, "messages": prompt.messages, **self.request_defaults, **prompt.params}
        if prompt.max_tokens is not None:
            body["max_tokens"] = prompt.max_tokens
        if prompt.tools:
            body["tools"] = prompt.tools
        return body


@dataclass
class RunResult:
    finished: int  # this run
    skipped: int  # already in the file
    failed: list[tuple[str, str]]  # (id, error) this run
    torn_bytes: int
    totals: Totals  # whole file
    run_totals: Totals  # this run
    stopped_early: str | None = None
    interrupted: bool = False  # Ctrl-C (SIGINT): the requests in flight were dropped, every written record kept


def run_generation(
    job: GenerationJob,
    prompts: Iterable[Prompt],
    on_progress: Callable[[int], None] | None = None,
) -> RunResult:
    """Generate every prompt whose id is not yet in ``generations.jsonl``; return the counts."""
    records_path = job.out_dir / RECORDS_FILE
    view_check = (lambda provider: view_of(provider, job.view_for, job.default_view)) if job.default_view else None
    done, totals, torn = load_finished(records_path, view_check)
    prompts = list(prompts)
    todo = [p for p in prompts if p.id not in done]
    result = RunResult(0, len(prompts) - len(todo), [], torn, totals, Totals())
    if not todo:
        return result
    writer = JsonlAppender(records_path, fsync=job.fsync, mask=job.mask)
    judge = Judge(job.profile, job.tokenizer, DEFAULT_VIEW)  # judges only recorded responses: the view is unused

    async def main() -> None:
        pending = iter(todo)
        retry = RetryPolicy(max_retries=job.max_retries, base_delay=job.retry_base_delay)
        async with ChatClient(job.base_url, job.api_key, concurrency=job.concurrency, timeout=job.timeout, retry=retry) as client:

            async def worker() -> None:
                for prompt in pending:
                    if result.stopped_early:
                        return
                    try:
                        answer: ChatResult = await client.chat(job.request_body(prompt))
                    except ApiError as e:
                        result.failed.append((prompt.id, str(e)))
                        if e.status in (401, 402, 403):  # every other request would fail the same way
                            result.stopped_early = str(e)
                        continue
                    view = view_of(answer.body.get("provider"), job.view_for, job.default_view) if job.default_view else None
                    record = check_record(prompt, answer.body, job.profile, job.tokenizer, judge, view)
                    record["attempts"] = answer.attempts
                    try:
                        writer.write(record)
                    except OSError as e:  # a full disk: stop asking, keep what is written
                        result.stopped_early = result.stopped_early or (
                            f"cannot write {os_error_message(e)}; every record written before is whole and kept, and "
                            f"{prompt.id!r} and the samples not yet asked are asked by the next run")
                        return
                    result.finished += 1
                    totals.add(record)
                    result.run_totals.add(record)
                    if on_progress:
                        on_progress(1)

            await asyncio.gather(*(worker() for _ in range(min(job.concurrency, len(todo)))))

    try:
        asyncio.run(main())
    except KeyboardInterrupt:  # Ctrl-C: asyncio cancelled the requests in flight; no record is half-written
        result.interrupted = True
        result.stopped_early = "interrupted (Ctrl-C): the requests in flight were dropped; run the same command again for the rest"
    finally:
        writer.close()
    return result


def write_summary(out_dir: Path, result: RunResult, extra: Mapping[str, Any], mask: KeyMask = KeyMask(None)) -> Path:
    path = out_dir / SUMMARY_FILE
    summary = {**extra, **result.totals.as_dict(), "last_run": {
        "finished": result.finished,
        "skipped": result.skipped,
        "failed": len(result.failed),
        "torn_bytes_cut": result.torn_bytes,
        **{k: v for k, v in result.run_totals.as_dict().items() if k != "samples"},
    }}
    atomic_write(path, mask.text(json.dumps(summary, indent=2) + "\n"))
    return path
