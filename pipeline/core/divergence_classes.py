"""The divergence classes: one record per class, and the only place a class is described.

A diagnosis gives each hunk (an aligned block where the golden and rebuilt ids differ) one class.
Everything the project says about a class is a field of its record:

- ``name``: what reports, snapshots and results.json call it (``Hunk.cls``);
- ``severity``: lower is more severe; a sample is reported as its most severe hunk's class, and its
  report's advice leads with it. Ranks are distinct and spaced by ten, so a new class slots in
  between two others without renumbering;
- ``keeps_text``: the decoded bytes are the same on both sides, only the split differs: the only
  kind of divergence a dataset's policy may accept (manifest ``accept``);
- ``meaning`` and ``remedy``: the row of the table in docs/suite.md, "Diagnosing a divergence"
  (``tests/test_divergence_classes.py`` checks that table against these records);
- ``advice``: the line a report prints under "what to do".

``RECORDS`` holds them in the order reports list classes; the text report (``diagnosis.py``), the HTML
report and its charts (``pipeline/reporting``), the manifest's ``accept`` check (``fidelity.py``) and
the docs table read them from here. Which hunk gets which class is decided by the rules of
``hunk_rules.py``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

__all__ = [
    "DivergenceClass",
    "RECORDS",
    "BY_NAME",
    "CLASSES",
    "SEVERITY",
    "TEXT_PRESERVING_CLASSES",
    "ADVICE",
    "by_severity",
    "SPECIAL_TOKEN_ID",
    "STOP_TOKEN",
    "NON_CANONICAL_SPLIT",
    "MARKER_TEXT",
    "WHITESPACE",
    "TOOL_ARGS_JSON",
    "TOOL_CALL_ID",
    "DROPPED_TEXT",
    "SPECIAL_TEXT_DELETED",
    "STOP_TEXT_KEPT",
    "THINK_NOT_CLOSED",
    "MESSAGE_STRUCTURE",
    "CUT_IN_MARKUP",
    "FINISH_REWRITTEN",
    "TRUNCATED_UTF8",
    "INVALID_UTF8",
    "OTHER",
]


@dataclass(frozen=True, slots=True)
class DivergenceClass:
    """One divergence class: its name and everything reports, docs and policy say about it."""

    name: str
    severity: int  # lower is more severe
    keeps_text: bool  # same bytes on both sides: a policy may accept it
    meaning: str  # docs/suite.md table: what it is
    remedy: str  # docs/suite.md table: what to do
    advice: str  # a report's "what to do" line


SPECIAL_TOKEN_ID = "special-token-id"
STOP_TOKEN = "stop-token"
NON_CANONICAL_SPLIT = "non-canonical-split"
MARKER_TEXT = "marker-text"
WHITESPACE = "whitespace"
TOOL_ARGS_JSON = "tool-args-json"
TOOL_CALL_ID = "tool-call-id"
DROPPED_TEXT = "dropped-text"
SPECIAL_TEXT_DELETED = "special-text-deleted"
STOP_TEXT_KEPT = "stop-text-kept"
THINK_NOT_CLOSED = "think-not-closed"
MESSAGE_STRUCTURE = "message-structure"
CUT_IN_MARKUP = "cut-in-markup"
FINISH_REWRITTEN = "finish-rewritten"
TRUNCATED_UTF8 = "truncated-utf8"
INVALID_UTF8 = "invalid-utf8"
OTHER = "other"

RECORDS: tuple[DivergenceClass, ...] = (
    DivergenceClass(
        SPECIAL_TOKEN_ID, severity=10, keeps_text=False,
        meaning="a marker or special id replaced by another single id (163586 `<|im_end|>` -> 163533 `chas`)",
        remedy="the profile or pipeline uses the wrong id; run `tokfidelity audit`",
        advice="a marker or special token was replaced by another single id, or is missing or extra: the "
        "profile or pipeline uses the wrong id for a marker, or a marker was lost; run `tokfidelity audit --profile P "
        "--tokenizer T` and bind marker ids from their text (bind_profile), never by hand",
    ),
    DivergenceClass(
        STOP_TOKEN, severity=30, keeps_text=False,
        meaning="a stop token missing or extra at the end",
        remedy="check finish_reason handling (none on `length`) and the engine's stop id",
        advice="a stop token is missing or extra at the end: check the finish_reason handling (no stop token on "
        "`length`, one on `stop`/`tool_calls`) and that the engine's matched stop id is the profile's stop id",
    ),
    DivergenceClass(
        NON_CANONICAL_SPLIT, severity=170, keeps_text=True,
        meaning="same bytes, different split (the model's own tokenization)",
        remedy="harmless for the text; accept by policy, or take ids from the engine",
        advice="same bytes, different split: the model emitted a non-canonical tokenization that text "
        "cannot carry; harmless for the text, but the ids differ: accept it by policy (manifest `accept`) or capture "
        "ids from the engine (return_token_ids)",
    ),
    DivergenceClass(
        MARKER_TEXT, severity=20, keeps_text=False,
        meaning="a special id on one side, ordinary tokens spelling its text on the other; or a marker the parser "
        "made at marker text the model wrote (SGLang's gpt-oss text parser then cuts and moves the messages there; "
        "vLLM's DeepSeek reasoning parser takes the text after a written `<think>` for the reasoning); or the markup "
        "of a call the parser does not read, returned as content text",
        remedy="encode content as ordinary text; check the API view",
        advice="a special id on one side, ordinary tokens spelling its text on the other: a parser turned marker "
        "text into the marker (or back); encode content as ordinary text and insert markers as ids, and check the API "
        "view (e.g. spaces between special tokens, skip_special_tokens); or the model wrote marker text as ordinary "
        "text and a server's text parser took it for markup, cutting and moving the messages there (SGLang's gpt-oss "
        "parser; vLLM's DeepSeek reasoning parser, which returns the text after a written <think> as the reasoning), or "
        "returned the markup of a call it does not read as content text: take ids from the engine",
    ),
    DivergenceClass(
        WHITESPACE, severity=140, keeps_text=False,
        meaning="texts differ only in whitespace, outside tool-call arguments",
        remedy="pick the view that matches the engine version (`sglang` vs `sglang-legacy`)",
        advice="the texts differ only in whitespace outside tool-call arguments: the API stripped or added "
        "whitespace (around </think>, around the content or the calls); pick the API view that matches the provider's "
        "engine version (sglang vs sglang-legacy), or take ids from the engine",
    ),
    DivergenceClass(
        TOOL_ARGS_JSON, severity=120, keeps_text=False,
        meaning="tool-call arguments differ, whitespace (`json.dumps` spacing) and escapes (vLLM's gpt-oss "
        "`json.dumps` escapes non-ASCII: `C\\u00f3rdoba`) included; padding around them is `whitespace`; also a call "
        "the parser read where the golden layout sees none, written back from its re-serialised arguments (Llama's "
        "`arguments` key as `parameters`, DeepSeek-V3.2's direct JSON as DSML parameters)",
        remedy="the provider re-serialised the JSON; take ids from the engine",
        advice="tool-call arguments differ (json.dumps spacing, escapes, number format): the provider "
        "re-serialised the JSON (json.loads then json.dumps, as sglang's qwen25/deepseekv3 parsers always do and kimi_k2 "
        "does with tool_choice required/named or when streaming; vLLM 0.32.0's parser engine (kimi_k2) does when the "
        "request's tool schema declares the function's properties and a value's type is coerced to it: 5.0 -> 5 for a "
        "number, null -> \"null\" for a string, the whole object re-dumped); or the parser read a call the model wrote in "
        "a form the layout writes otherwise and returned only its arguments (vLLM's llama3_json reads a call's "
        "`arguments` key, the layout writes `parameters`; DeepSeek-V3.2's direct-JSON invoke comes back as DSML "
        "parameters, or empty); the model's exact arguments text is lost: take ids from the engine (return_token_ids)",
    ),
    DivergenceClass(
        TOOL_CALL_ID, severity=130, keeps_text=False,
        meaning="a tool-call id differs",
        remedy="the API rebuilt the id; the model's counter is conversation-wide",
        advice="a tool-call id differs: the API rebuilt the id (e.g. functions.NAME:INDEX with a per-turn "
        "index instead of the conversation-wide counter); reconstruct the id the way the model wrote it",
    ),
    DivergenceClass(
        DROPPED_TEXT, severity=80, keeps_text=False,
        meaning="text between or after tool calls, a call cut at the length limit, or a whole call its parser cannot "
        "read (vLLM's `deepseek_v3` with multi-line arguments), missing from the response; or the content around "
        "the calls of a parser that returns only the calls (vLLM's `llama3_json`); or text after marker text "
        "the model wrote, which a parser took for the marker; or the message a length cut left open (SGLang's "
        "gpt-oss parser drops an unfinished commentary message)",
        remedy="the parser drops it; take ids from the engine",
        advice="text outside the tool-call blocks (between or after calls), a call cut off at the length "
        "limit, or a whole call its parser cannot read is missing from the response: the server's tool-call parser "
        "drops it (sglang's qwen25, deepseekv3 and kimi_k2 detectors keep only the content before the first call and "
        "the complete calls; vLLM's deepseek_v3 regex does not cross lines, so a call with multi-line arguments is "
        "lost; vLLM's llama3_json returns only the calls, the content before and after them dropped; SGLang's gpt-oss "
        "parser drops a commentary message a length cut left open); the text is lost: take ids "
        "from the engine",
    ),
    DivergenceClass(
        SPECIAL_TEXT_DELETED, severity=90, keeps_text=False,
        meaning="the model wrote a special token's text as ordinary text (`<|im_end|>`, `</think>`, `[EOS]`) and "
        "the server deleted it (vLLM's parser engine)",
        remedy="the text is lost; take ids from the engine",
        advice="the model wrote the text of a special token (<|im_end|>, </think>, [EOS], ...) as "
        "ordinary text and the server deleted it: vLLM's parser engine deletes the literal text of every special token "
        "of the tokenizer class that is not one of its markers, and a </think> after the reasoning; the text is lost: "
        "take ids from the engine (return_token_ids)",
    ),
    DivergenceClass(
        STOP_TEXT_KEPT, severity=100, keeps_text=False,
        meaning="the text of the stop token the engine stopped on ends the content: vLLM returns a gpt-oss message "
        "that `<|endoftext|>` left open with that text, SGLang keeps `<|call|>` after a call its parser does not read",
        remedy="the text cannot say it was the stop; take ids from the engine",
        advice="the text of the stop token the engine stopped on is at the end of the content: vLLM's "
        "harmony path returns a message that gpt-oss's <|endoftext|> left open with that token's text, and SGLang keeps "
        "<|call|> in the text of a call its gpt-oss parser does not read; the reconstruction cannot tell it from text "
        "the model wrote and ends the answer with the usual stop: take ids from the engine (return_token_ids)",
    ),
    DivergenceClass(
        THINK_NOT_CLOSED, severity=60, keeps_text=False,
        meaning="the model wrote no `</think>` (straight from reasoning into tool calls, or a literal one parsed "
        "away) and the reconstruction writes one",
        remedy="the response cannot say so; take ids from the engine",
        advice="the model never wrote </think> (it went from its reasoning straight to the tool calls, or "
        "the text after a missing </think> became content) and the response cannot say so: the reconstruction writes the "
        "</think> a reasoning field implies; take ids from the engine",
    ),
    DivergenceClass(
        MESSAGE_STRUCTURE, severity=70, keeps_text=False,
        meaning="the model's messages (gpt-oss's harmony messages) differ from the response's one reasoning and one "
        "content field, their text kept whitespace aside: an empty analysis message sent as null reasoning, several "
        "messages of a kind joined, a preamble without calls sent as the answer, a later message's text moved to its "
        "field; or text the model wrote among or after its tool calls (a call the parser cannot read, one cut at the "
        "length limit) sent in the content, which comes before the calls (SGLang's llama3 detector)",
        remedy="the message structure is lost; take ids from the engine",
        advice="the model's messages are in the response only as one reasoning and one content field: an "
        "empty message is dropped (an empty analysis message becomes reasoning null), several messages of a kind are "
        "joined (vLLM with newlines), a commentary preamble without calls becomes the final answer, and a later "
        "message's text moves to its field; the text is kept, whitespace aside, but not how many messages held it, "
        "on which channel, in which order; SGLang's llama3 detector returns the text it does not read as calls (text "
        "after the calls, a call cut at the length limit) in the content, which the layout writes before the calls: "
        "the text is kept, not where the model wrote it: take ids from the engine (return_token_ids)",
    ),
    DivergenceClass(
        CUT_IN_MARKUP, severity=50, keeps_text=False,
        meaning="cut at the length limit inside tool-call markup, or inside a gpt-oss message header (vLLM returns "
        "it as content text, markers spelled out; SGLang drops it): which markers the model wrote is unknown, the "
        "reconstruction closes the section",
        remedy="drop the cut sample's last call or message, or take ids from the engine",
        advice="the output was cut at the length limit inside tool-call markup and the response cannot say "
        "which closing markers the model had written: the reconstruction closes the section the model left open; or "
        "inside a message header (gpt-oss: <|start|>assistant<|channel|>... before <|message|>), which vLLM returns as "
        "content text, its markers spelled out, and SGLang drops; drop the cut sample's last call or message, or take "
        "ids from the engine",
    ),
    DivergenceClass(
        FINISH_REWRITTEN, severity=40, keeps_text=False,
        meaning="cut at the length limit, but the response's `finish_reason` is `tool_calls` (vLLM, whenever it "
        "parsed a call): the cut is hidden and the reconstruction closes and stops what the model never did",
        remedy="take ids from the engine, or treat responses whose completion_tokens reach max_tokens as cut",
        advice="the engine stopped at the length limit but the response's finish_reason is not `length` "
        "(vLLM sends `tool_calls` whenever it parsed a call, also from a cut output): the cut is hidden, so the "
        "reconstruction closes what the model never closed; take ids from the engine, or treat responses whose "
        "completion_tokens reach max_tokens as cut",
    ),
    DivergenceClass(
        TRUNCATED_UTF8, severity=150, keeps_text=False,
        meaning="cut inside a UTF-8 character at the length limit",
        remedy="the text ends in U+FFFD and cannot give the bytes back",
        advice="the output was cut at the length limit inside a UTF-8 character; the API text ends in U+FFFD "
        "and cannot give back the bytes: drop the partial character's tokens or capture ids from the engine",
    ),
    DivergenceClass(
        INVALID_UTF8, severity=160, keeps_text=False,
        meaning="partial UTF-8 bytes inside the text",
        remedy="the bytes are lost in text; take ids from the engine",
        advice="the model emitted partial UTF-8 bytes inside the text; they decode to U+FFFD and the bytes are "
        "lost: the text cannot give back these ids; capture ids from the engine or accept by policy",
    ),
    DivergenceClass(
        OTHER, severity=110, keeps_text=False,
        meaning="anything else",
        remedy="compare the windows; check the tokenizer fingerprint and the view",
        advice="the text itself changed for no known reason: compare the two windows above, check the tokenizer "
        "(fingerprint) and the API view, and file the case",
    ),
)

BY_NAME: Mapping[str, DivergenceClass] = {record.name: record for record in RECORDS}

# Views of the records for callers that need one field of every class.
CLASSES: tuple[str, ...] = tuple(record.name for record in RECORDS)  # the order reports list them in
SEVERITY: tuple[str, ...] = tuple(r.name for r in sorted(RECORDS, key=lambda r: r.severity))  # most severe first
TEXT_PRESERVING_CLASSES: frozenset[str] = frozenset(record.name for record in RECORDS if record.keeps_text)
ADVICE: Mapping[str, str] = {record.name: record.advice for record in RECORDS}


def by_severity(classes: Iterable[str]) -> list[str]:
    """``classes``, each once, most severe first."""
    return sorted(dict.fromkeys(classes), key=lambda name: BY_NAME[name].severity)
