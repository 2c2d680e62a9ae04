"""The special-token audit: does a profile's every marker id match its tokenizer, and the data?

``audit(profile, tokenizer, samples=None) -> AuditReport`` checks

* each marker of the profile: its text encodes (specials allowed, as the model's tokenizer does)
  to exactly its configured id, that id decodes back to the text, and it is a special token;
* each added/special token of the tokenizer: ``encode(text) == [id]`` and ``decode([id]) == text``;
* look-alike ids (warnings): ordinary tokens that spell part of a marker's text, and ordinary ids
  just below the special range (like Kimi's 163533 ``chas`` below 163584) that are no marker;
* with golden samples: the final token of every sample, by finish reason.

A failed round trip, a marker that is not exactly one id, or a configured id that differs from
what the marker's text encodes to (``profile.with_ids(stop=163533)``) is a failure. The audit never
raises on a misconfigured profile: it reports.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from .golden import GoldenError, GoldenSample
from .profiles import Profile, ProfileError, ProfileSpec, bind_profile, get_profile_spec, marker_texts
from .tokenizer import Tokenizer

__all__ = ["MarkerCheck", "SpecialTokenCheck", "FinalTokens", "AuditReport", "audit"]

NEAR_RANGE = 64  # ordinary ids this close below the first special id are look-alike candidates
NEAR_SHOWN = 3  # of those, this many nearest are named
LOOKALIKES_PER_MARKER = 2  # longest ordinary tokens inside a marker's text, named per marker
MIN_LOOKALIKE_BYTES = 4  # shorter pieces ('<', '|', 'im') are everywhere and say nothing
LIST_LIMIT = 10  # failures of one kind listed before "... and N more"


def _show(tokenizer: Tokenizer, token_id: int) -> str:
    """`163586 '<|im_end|>'`: an id with its text, safe for any id."""
    if not isinstance(token_id, int) or not tokenizer.is_valid_id(token_id):
        return f"{token_id} (not an id of {tokenizer.name})"
    return f"{token_id} {tokenizer.token_text(token_id)!r}"


@dataclass(frozen=True)
class MarkerCheck:
    roles: tuple[str, ...]
    text: str
    configured_id: int | None  # None when the marker could not be bound at all
    encoded: list[int]  # encode(text), specials allowed
    decoded: str | None  # decode([configured_id])
    as_text: list[int]  # encode_ordinary(text): the same text written as ordinary tokens
    lookalikes: list[int]  # ordinary ids whose text is a long piece of the marker's text
    problems: list[str]

    @property
    def ok(self) -> bool:
        return not self.problems


@dataclass(frozen=True)
class SpecialTokenCheck:
    text: str
    id: int
    encoded: list[int]
    decoded: str | None  # None when the id is outside the vocabulary

    @property
    def ok(self) -> bool:
        return self.encoded == [self.id] and self.decoded == self.text


@dataclass
class FinalTokens:
    """Final tokens of the golden samples with one finish reason."""

    finish_reason: str
    expected_id: int | None  # the stop id for "stop"; None for "length" (no stop token expected)
    stop_id: int | None = None  # the profile's stop id
    stop_ids: tuple[int, ...] = ()  # every stop id of the profile (the main one first)
    total: int = 0
    matching: int = 0
    found: Counter = field(default_factory=Counter)  # final id (None for an empty output) -> count
    first_mismatch: str | None = None  # "sample 'x' (line 3)"


@dataclass
class AuditReport:
    profile: str
    tokenizer: str
    tokenizer_source: str
    fingerprint: str
    markers: list[MarkerCheck]
    special_tokens: list[SpecialTokenCheck]
    first_special_id: int | None
    near_special_range: list[int]  # look-alike ordinary ids to name, nearest first
    golden: dict[str, FinalTokens]
    failures: list[str]
    warnings: list[str]
    _tokenizer: Tokenizer = field(repr=False, compare=False, default=None)

    @property
    def ok(self) -> bool:
        return not self.failures

    def to_json(self) -> dict[str, Any]:
        tok = self._tokenizer
        failed = [s for s in self.special_tokens if not s.ok]
        return {
            "ok": self.ok,
            "profile": self.profile,
            "tokenizer": self.tokenizer,
            "tokenizer_source": self.tokenizer_source,
            "fingerprint": self.fingerprint,
            "markers": [
                {
                    "roles": list(m.roles),
                    "text": m.text,
                    "id": m.configured_id,
                    "encoded": m.encoded,
                    "decoded": m.decoded,
                    "as_text": m.as_text,
                    "lookalikes": [{"id": i, "text": tok.token_text(i)} for i in m.lookalikes],
                    "ok": m.ok,
                    "problems": m.problems,
                }
                for m in self.markers
            ],
            "special_tokens": {
                "checked": len(self.special_tokens),
                "failed": [{"text": s.text, "id": s.id, "encoded": s.encoded, "decoded": s.decoded} for s in failed],
            },
            "lookalikes": {
                "first_special_id": self.first_special_id,
                "near_special_range": [{"id": i, "text": tok.token_text(i)} for i in self.near_special_range],
            },
            "golden": {
                reason: {
                    "total": g.total,
                    "expected_id": g.expected_id,
                    "matching": g.matching,
                    "found": {("empty" if i is None else str(i)): n for i, n in g.found.most_common()},
                }
                for reason, g in self.golden.items()
            },
            "failures": list(self.failures),
            "warnings": list(self.warnings),
        }

    def render(self) -> str:
        tok = self._tokenizer
        lines = [
            f"tokfidelity audit: profile {self.profile}, tokenizer {self.tokenizer} ({self.tokenizer_source}), "
            f"fingerprint {self.fingerprint[:16]}",
            "markers:",
        ]
        rows = [("roles", "text", "id", "encode(text)", "decode([id])", "as ordinary text", "result")]
        for m in self.markers:
            rows.append(
                (
                    ", ".join(m.roles),
                    repr(m.text),
                    "-" if m.configured_id is None else str(m.configured_id),
                    str(m.encoded),
                    "-" if m.decoded is None else repr(m.decoded),
                    str(m.as_text),
                    "ok" if m.ok else "FAIL",
                )
            )
        widths = [max(len(r[c]) for r in rows) for c in range(len(rows[0]))]
        for r in rows:
            lines.append("  " + "  ".join(cell.ljust(w) for cell, w in zip(r, widths)).rstrip())
        failed = [s for s in self.special_tokens if not s.ok]
        lines.append(
            f"special tokens: {len(self.special_tokens)} checked, {len(self.special_tokens) - len(failed)} round-trip "
            "(encode(text) == [id] and decode([id]) == text)"
        )
        for s in failed[:LIST_LIMIT]:
            lines.append(f"  FAIL {s.text!r} {s.id}: encode -> {s.encoded}, decode -> {s.decoded!r}")
        lines.append("look-alikes:")
        for text, ids in _lookalikes_by_text(self.markers).items():
            lines.append(f"  {text!r}: ordinary {', '.join(_show(tok, i) for i in ids)}")
        if self.near_special_range:
            names = ", ".join(_show(tok, i) for i in self.near_special_range)
            lines.append(f"  below the special range (first special id {self.first_special_id}): {names}")
        if self.golden:
            lines.append("golden samples (final token):")
            for g in self.golden.values():
                lines.append(f"  {_final_tokens_line(g, tok)}")
        if self.failures:
            lines.append(f"failures ({len(self.failures)}):")
            lines += [f"  - {f}" for f in self.failures]
        if self.warnings:
            lines.append(f"warnings ({len(self.warnings)}):")
            lines += [f"  - {w}" for w in self.warnings]
        lines.append("result: " + ("OK" if self.ok else f"FAILED ({len(self.failures)} failure(s))"))
        return "\n".join(lines)


def _lookalikes_by_text(markers: list[MarkerCheck]) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for m in markers:
        if m.lookalikes:
            out.setdefault(m.text, m.lookalikes)
    return out


def _final_tokens_line(g: FinalTokens, tok: Tokenizer) -> str:
    if g.expected_id is not None:
        others = [(i, n) for i, n in g.found.most_common() if i not in g.stop_ids]
    else:  # cut at the length limit: only a stop token (or nothing at all) is wrong
        others = [(i, n) for i, n in g.found.most_common() if i is None or i in g.stop_ids]
    found = ", ".join(f"{'(empty output)' if i is None else _show(tok, i)} x{n}" for i, n in others[:LIST_LIMIT])
    if g.expected_id is not None:
        ends = " or ".join(_show(tok, i) for i in g.stop_ids)
        line = f"{g.matching}/{g.total} {g.finish_reason} samples end with {ends}"
        if others:
            line += f"; the others end with {found}"
    else:
        line = f"{g.matching}/{g.total} {g.finish_reason} samples end without a stop token"
        if others:
            line += f"; the others end with {found}"
    if g.first_mismatch and g.matching < g.total:
        line += f" (first: {g.first_mismatch})"
    return line


# ------------------------------------------------------------------------------------------
# Checks
# ------------------------------------------------------------------------------------------
def _marker_rows(profile: Profile | ProfileSpec | str, tokenizer: Tokenizer) -> tuple[str, list[tuple[str, str, int | None]], list[str]]:
    """(profile name, [(role, text, configured id)], output marker texts), without raising."""
    if isinstance(profile, Profile):
        roles = [(role, profile.texts[role], profile.ids.get(role)) for role in profile.texts]
        return profile.name, roles, [*profile.spec.markers.values(), *profile.spec.extra_stops]
    spec = get_profile_spec(profile) if isinstance(profile, str) else profile
    try:
        bound = bind_profile(spec, tokenizer)
    except ProfileError:
        texts = marker_texts(spec)
        rows = []
        for role, text in texts.items():
            ids = tokenizer.encode(text)
            rows.append((role, text, ids[0] if len(ids) == 1 else None))
        return spec.name, rows, [*spec.markers.values(), *spec.extra_stops]
    return _marker_rows(bound, tokenizer)


def _lookalikes_inside(text: str, tokenizer: Tokenizer) -> list[int]:
    """Ordinary ids whose bytes are a long piece of ``text``: what a look-alike of the marker is made of."""
    data = text.encode("utf-8")
    found: dict[int, int] = {}
    for start in range(len(data)):
        for end in range(start + MIN_LOOKALIKE_BYTES, len(data) + 1):
            piece = data[start:end]
            try:
                ids = tokenizer.encode_ordinary(piece.decode("utf-8"))
            except UnicodeDecodeError:
                continue
            if len(ids) == 1 and ids[0] not in tokenizer.special_ids and tokenizer.token_bytes(ids[0]) == piece:
                found[ids[0]] = len(piece)
    return sorted(found, key=lambda i: (-found[i], i))[:LOOKALIKES_PER_MARKER]


def _check_marker(roles, text, configured, tokenizer, output_texts) -> MarkerCheck:
    encoded = tokenizer.encode(text)
    problems = []
    if len(encoded) != 1:
        problems.append(
            f"encodes to {len(encoded)} ids {encoded}, not one id: the tokenizer has no such marker "
            "(wrong tokenizer for this profile?)"
        )
    elif configured is not None and encoded[0] != configured:
        problems.append(
            f"is configured as {_show(tokenizer, configured)} but its text encodes to {_show(tokenizer, encoded[0])}: "
            "the profile or pipeline uses the wrong id; bind marker ids from their text (bind_profile)"
        )
    decoded = None
    if configured is not None:
        if not tokenizer.is_valid_id(configured):
            problems.append(f"configured id {configured} is not an id of {tokenizer.name} (n_vocab {tokenizer.n_vocab})")
        else:
            decoded = tokenizer.decode([configured])
            if decoded != text:
                problems.append(f"decode([{configured}]) is {decoded!r}, not {text!r}")
            if configured not in tokenizer.special_ids:
                problems.append(f"{_show(tokenizer, configured)} is an ordinary token, not a special one")
    table_id = tokenizer.special_tokens.get(text)
    if len(encoded) == 1 and table_id is not None and table_id != encoded[0]:
        problems.append(f"encodes to {encoded[0]} but the special-token table says {table_id}")
    lookalikes = _lookalikes_inside(text, tokenizer) if text in output_texts else []
    return MarkerCheck(
        roles=tuple(roles),
        text=text,
        configured_id=configured,
        encoded=encoded,
        decoded=decoded,
        as_text=tokenizer.encode_ordinary(text),
        lookalikes=lookalikes,
        problems=problems,
    )


def _final_tokens(samples, stop_ids: tuple, tokenizer: Tokenizer, failures: list[str], warnings: list[str]):
    stop_id = stop_ids[0] if stop_ids else None
    groups: dict[str, FinalTokens] = {}
    bad_lines: list[str] = []
    for sample in samples:
        if isinstance(sample, GoldenError):
            bad_lines.append(str(sample))
            continue
        if not isinstance(sample, GoldenSample):
            raise TypeError(f"audit samples must be GoldenSample or GoldenError, got {type(sample).__name__}")
        reason = "length" if sample.finish_reason == "length" else "stop"
        g = groups.get(reason)
        if g is None:
            g = groups[reason] = FinalTokens(reason, stop_id if reason == "stop" else None, stop_id, stop_ids)
        last = sample.output_ids[-1] if sample.output_ids else None
        g.total += 1
        g.found[last] += 1
        good = (last in stop_ids) if reason == "stop" else (last is not None and last not in stop_ids)
        if good:
            g.matching += 1
        elif g.first_mismatch is None:
            g.first_mismatch = f"sample {sample.id!r} (line {sample.line})"
    if bad_lines:
        shown = bad_lines[:LIST_LIMIT]
        more = f" ... and {len(bad_lines) - LIST_LIMIT} more" if len(bad_lines) > LIST_LIMIT else ""
        failures.append(f"{len(bad_lines)} golden line(s) could not be read: " + "; ".join(shown) + more)
    stop = groups.get("stop")
    if stop and stop.matching < stop.total:
        failures.append(
            _final_tokens_line(stop, tokenizer)
            + ": the engine's stop token and the profile's stop id disagree (or samples were cut without "
            "finish_reason 'length')"
        )
    length = groups.get("length")
    if length and length.matching < length.total:
        warnings.append(
            _final_tokens_line(length, tokenizer) + ": a sample cut at the length limit should not end with the stop token"
        )
    return groups


def _special_token_checks(tokenizer: Tokenizer, failures: list[str], warnings: list[str]) -> list[SpecialTokenCheck]:
    """Every special token's round trip (encode its text, decode its id); failures and warnings noted."""
    specials = [
        SpecialTokenCheck(
            text, i, tokenizer.encode(text), tokenizer.decode([i]) if tokenizer.is_valid_id(i) else None
        )
        for text, i in sorted(tokenizer.special_tokens.items(), key=lambda kv: kv[1])
    ]
    failed = [s for s in specials if not s.ok]
    for s in failed[:LIST_LIMIT]:
        failures.append(
            f"special token {s.text!r} {s.id} does not round-trip: encode(text) = {s.encoded}, decode([id]) = {s.decoded!r}"
        )
    if len(failed) > LIST_LIMIT:
        failures.append(f"... and {len(failed) - LIST_LIMIT} more special tokens do not round-trip")
    if len(set(tokenizer.special_tokens.values())) != len(tokenizer.special_tokens):
        dup = [i for i, n in Counter(tokenizer.special_tokens.values()).items() if n > 1]
        warnings.append(f"several special-token texts share an id: {dup[:LIST_LIMIT]}")
    return specials


def _near_special_range(tokenizer: Tokenizer, first_special: int | None, rows, golden, warnings: list[str]) -> list[int]:
    """Ordinary ids just below the special range (and any of them this profile or data uses); warned about."""
    near: list[int] = []
    if first_special is not None:
        candidates = [
            i
            for i in range(first_special - 1, max(-1, first_special - 1 - NEAR_RANGE), -1)
            if i not in tokenizer.special_ids and tokenizer.token_bytes(i)
        ]
        near = candidates[:NEAR_SHOWN]
        of_interest = {c for _, _, c in rows if c is not None} | {
            i for g in golden.values() for i in g.found if i is not None and i not in g.stop_ids
        }
        near += [i for i in candidates[NEAR_SHOWN:] if i in of_interest]
        if near:
            flagged = [i for i in near if i in of_interest]
            note = f"; {', '.join(_show(tokenizer, i) for i in flagged)} appear(s) in this profile or data" if flagged else ""
            warnings.append(
                f"look-alikes: {', '.join(_show(tokenizer, i) for i in near[:NEAR_SHOWN])} are ordinary tokens just "
                f"below the special range (first special id {first_special}); an id from there written as a "
                f"marker is a misconfiguration{note}"
            )
    return near


def _bound(profile: Profile | ProfileSpec | str, tokenizer: Tokenizer) -> Profile | None:
    if isinstance(profile, Profile):
        return profile
    try:
        return bind_profile(get_profile_spec(profile) if isinstance(profile, str) else profile, tokenizer)
    except ProfileError:
        return None


def _required_markers(samples: list, profile: Profile, tokenizer: Tokenizer, failures: list[str]) -> None:
    """Golden outputs lacking a marker their profile requires (a thinking profile whose output starts
    inside the reasoning closes it with think_end in every finished output), and the look-alike ids
    (ordinary ids just below the special range) found where that marker belongs."""
    spec, end = profile.spec, profile.ids.get("think_end")
    if not (spec.thinking and end is not None and "think_begin" not in spec.markers):
        return
    first = min(tokenizer.special_ids) if tokenizer.special_ids else 0
    near = set(range(max(0, first - NEAR_RANGE), first)) - tokenizer.special_ids
    missing, lookalikes = [], []
    for s in samples:
        if not isinstance(s, GoldenSample) or s.finish_reason == "length" or end in s.output_ids:
            continue
        missing.append(f"line {s.line} ({s.id})")
        found = next((i for i in s.output_ids[:-1] if i in near), None)  # the last id is the stop's place
        if found is not None:
            lookalikes.append(f"line {s.line} ({s.id}): {_show(tokenizer, found)} at index {s.output_ids.index(found)}")
    text = profile.texts.get("think_end", "think_end")
    more = lambda n: f" ... and {n - LIST_LIMIT} more" if n > LIST_LIMIT else ""  # noqa: E731
    if missing:
        failures.append(
            f"{len(missing)} finished golden output(s) lack {text!r} ({end}), which profile {profile.name} requires "
            f"(its output starts inside the reasoning and closes it): " + "; ".join(missing[:LIST_LIMIT]) + more(len(missing))
        )
    if lookalikes:
        failures.append(
            f"look-alike id(s) where {text!r} belongs (ordinary ids just below the special range, written as the "
            "marker: a misconfigured marker id): " + "; ".join(lookalikes[:LIST_LIMIT]) + more(len(lookalikes))
        )


def audit(
    profile: Profile | ProfileSpec | str,
    tokenizer: Tokenizer,
    samples: Iterable[GoldenSample | GoldenError] | None = None,
) -> AuditReport:
    """Audit a profile (bound, a spec, or a profile name) against a tokenizer and optional golden
    samples (as ``pipeline.core.golden.read_samples`` yields them). Never raises on a misconfigured
    profile; an unknown profile name raises ProfileError."""
    name, rows, output_texts = _marker_rows(profile, tokenizer)
    failures: list[str] = []
    warnings: list[str] = []

    grouped: dict[tuple[str, int | None], list[str]] = {}
    for role, text, configured in rows:
        grouped.setdefault((text, configured), []).append(role)
    output_order = {t: n for n, t in enumerate(output_texts)}
    items = sorted(grouped.items(), key=lambda kv: (output_order.get(kv[0][0], len(output_order)), kv[1][0]))
    markers = [_check_marker(roles, text, configured, tokenizer, set(output_texts)) for (text, configured), roles in items]
    for m in markers:
        for problem in m.problems:
            failures.append(f"marker {m.text!r} ({', '.join(m.roles)}) {problem}")

    specials = _special_token_checks(tokenizer, failures, warnings)

    stop_ids = tuple(c for role, _, c in rows if c is not None and (role == "stop" or role.startswith("stop.")))
    if samples is not None:
        samples = list(samples)
    golden = _final_tokens(samples, stop_ids, tokenizer, failures, warnings) if samples is not None else {}
    bound = _bound(profile, tokenizer)
    if samples is not None and bound is not None:
        _required_markers(samples, bound, tokenizer, failures)

    # Look-alikes: ordinary tokens inside marker text, and ordinary ids just below the special range.
    with_lookalikes = _lookalikes_by_text(markers)
    if with_lookalikes:
        m = next(m for m in markers if m.lookalikes)
        warnings.append(
            f"look-alikes: ordinary tokens spell parts of {len(with_lookalikes)} marker(s), e.g. "
            f"{_show(tokenizer, m.lookalikes[0])} in {m.text!r} (as ordinary text {m.text!r} is {m.as_text}); "
            "such text in content stays ordinary tokens: a parser that maps it to the marker makes marker-text hunks"
        )
    first_special = min(tokenizer.special_ids) if tokenizer.special_ids else None
    near = _near_special_range(tokenizer, first_special, rows, golden, warnings)
    return AuditReport(
        profile=name,
        tokenizer=tokenizer.name,
        tokenizer_source=tokenizer.source,
        fingerprint=tokenizer.fingerprint,
        markers=markers,
        special_tokens=specials,
        first_special_id=first_special,
        near_special_range=near,
        golden=golden,
        failures=failures,
        warnings=warnings,
        _tokenizer=tokenizer,
    )
