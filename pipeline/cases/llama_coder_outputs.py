"""Llama 3.x and Qwen3-Coder output ids, written as each model writes them: the families' case generators
(``LLAMA3``, ``QWEN3_CODER``), used by the golden scripts (``scripts/make_llama_golden.py``,
``make_coder_golden.py``) and the differential tests.

Text runs are encoded as ordinary tokens and markers inserted as the profiles' ids, so the tests can
put marker text where a model would write it as plain text (the parsers read the decoded text). The
random outputs mix what the parsers must tell apart: answers holding braces, JSON calls with
``parameters`` or ``arguments``, several calls joined ``;``, Python-dict calls, builtin-tool calls,
``<|python_tag|>`` as a marker or as text, non-ASCII and multi-line values, calls cut by the length
limit; for Qwen3-Coder, parameters whose values are typed text (``5.0``, ``1e3``, ``True``, JSON),
missing closing tags, text between and after calls, unclosed calls.
"""

from __future__ import annotations

import json
import random

from . import CaseGenerator
from .family_outputs import ARGUMENTS, CJK, CODE, EMOJI, _ids

__all__ = ["LLAMA3", "QWEN3_CODER", "llama3_ids", "llama_call", "random_llama3", "write_llama3",
           "coder_ids", "coder_call", "random_qwen3_coder", "write_qwen3_coder", "NAMES", "TEXTS", "VALUES"]

NAMES = ("get", "read_file", "search_web", "查询", "run-cmd", "get_weather")
TEXTS = ("", "Sure.", "Let me check.", "I'll call the tool.\n", " ", "\n", CJK, EMOJI, "Use {braces} here.",
         "x = {'a': 1}", CODE[:80], 'literal <|python_tag|> text', "a <tool_call> tag", "see </parameter> there")


enc_pieces = _ids  # marker ids (ints) and text runs (str, encoded as ordinary tokens), in order


def llama_call(name: str, arguments, key: str = "parameters") -> str:
    args = arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)
    return f'{{"name": "{name}", "{key}": {args}}}'


def llama3_ids(tokenizer, profile, content: str = "", calls=(), *, tag: bool | None = None, sep: str = "; ",
               stop: str | None = "stop") -> list[int]:
    """``{content}[<|python_tag|>]{call}; {call}`` then the stop token (``stop``: a role, or None)."""
    m = profile.ids
    pieces: list = [content]
    if calls:
        if tag if tag is not None else bool(content):
            pieces.append(m["tool_call_begin"])
        pieces.append(sep.join(calls))
    if stop:
        pieces.append(m[stop])
    return enc_pieces(tokenizer, pieces)


def _llama_random_call(rng: random.Random) -> str:
    name = rng.choice(NAMES + ("undeclared",))
    args = rng.choice(ARGUMENTS + ('{"q": "a\\nb"}', '{"n": [1, {"x": null}]}', '{}', '"text"', '[1, 2]'))
    kind = rng.random()
    if kind < 0.6:
        return llama_call(name, args, rng.choice(("parameters", "parameters", "arguments")))
    if kind < 0.75:  # a Python dict, as Llama 3.2 sometimes writes
        return "{'name': '%s', 'arguments': {'q': %s}}" % (name, rng.choice(("1", "'x'", "True", "None", "(1, 2)")))
    if kind < 0.85:
        return '{"name": %s, "parameters": {}}' % rng.choice(('1', '["a"]', '{"n": 1}', 'null', '"%s"' % name))
    if kind < 0.92:
        return '{"parameters": {"q": 1}}'
    return '{"name": "%s", "parameters": {"q": 1}' % name  # unclosed


def random_llama3(tokenizer, profile, rng: random.Random) -> tuple[list[int], str]:
    """One random Llama output and its finish reason."""
    content = rng.choice(TEXTS) if rng.random() < 0.5 else ""
    roll = rng.random()
    if roll < 0.3:
        ids = llama3_ids(tokenizer, profile, rng.choice(TEXTS[1:]) + rng.choice(("", " {x}", "\n{\"a\": 1}")))
    elif roll < 0.4:
        call = rng.choice(('brave_search.call(query="Oslo weather")', 'wolfram_alpha.call(query="2+2")', "print(1)"))
        ids = llama3_ids(tokenizer, profile, "", [call], tag=True, stop="stop.2")
    else:
        calls = [_llama_random_call(rng) for _ in range(rng.choice((1, 1, 1, 2, 3)))]
        sep = rng.choice(("; ", ";", "; ", "\n", ""))
        ids = llama3_ids(tokenizer, profile, content, calls, tag=rng.choice((None, True, False)), sep=sep,
                         stop=rng.choice(("stop", "stop", "stop.2", "stop.3")))
        if rng.random() < 0.15:  # trailing text after the calls
            ids = ids[:-1] + tokenizer.encode_ordinary(rng.choice((" done", "\nThanks", " {"))) + ids[-1:]
    if rng.random() < 0.25 and len(ids) > 1:
        return ids[: rng.randint(1, len(ids) - 1)], "length"
    return ids, "stop"


def coder_value(value) -> str:
    """A parameter value as the chat template writes it: a string as it is, an object or array as ``tojson``,
    anything else as Jinja's ``string`` (``True``, ``5.0``, ``None``)."""
    if isinstance(value, str):
        return value
    if isinstance(value, (dict, list)):
        return json.dumps(value, ensure_ascii=False)
    return str(value)


def coder_params(arguments: str):
    """A call's arguments text as the model writes its parameters: {key: value text} for a JSON object,
    else the text itself (a raw body)."""
    try:
        parsed = json.loads(arguments)
    except ValueError:
        return arguments
    return {k: coder_value(v) for k, v in parsed.items()} if isinstance(parsed, dict) else arguments


def coder_call(name: str, params) -> str:
    """The text between ``<tool_call>`` and ``</tool_call>``: ``params`` is {key: value text} (or a raw body)."""
    if isinstance(params, str):
        return f"\n<function={name}>\n{params}</function>\n"
    body = "".join(f"<parameter={k}>\n{v}\n</parameter>\n" for k, v in params.items())
    return f"\n<function={name}>\n{body}</function>\n"


def coder_ids(tokenizer, profile, content: str = "", calls=(), *, between: str = "\n", after: str = "",
              stop: bool = True, close_last: bool = True) -> list[int]:
    """``{content}<tool_call>{call}</tool_call>{between}<tool_call>...`` then ``<|im_end|>``."""
    m = profile.ids
    pieces: list = [content]
    for i, call in enumerate(calls):
        if i:
            pieces.append(between)
        pieces += [m["tool_call_begin"], call]
        if close_last or i < len(calls) - 1:
            pieces.append(m["tool_call_end"])
    pieces.append(after)
    if stop:
        pieces.append(m["stop"])
    return enc_pieces(tokenizer, pieces)


VALUES = ("5", "5.0", "1e3", "-0.0", "true", "True", "false", "null", "None", "Oslo", "München 中文", "a\nb\n",
          '{"a": [1, 2]}', "[1, 2]", "{'a': 1}", "", " 7 ", "9007199254740993", "x</parameter>", "nan")


def _coder_random_call(rng: random.Random) -> str:
    name = rng.choice(NAMES)
    params = {f"p{n}": rng.choice(VALUES) for n in range(rng.randint(0, 3))}
    roll = rng.random()
    if roll < 0.75:
        return coder_call(name, params)
    if roll < 0.85:  # a parameter left unclosed
        return f"\n<function={name}>\n<parameter=q>\n{rng.choice(VALUES)}\n</function>\n"
    if roll < 0.92:
        return f"\n<function={name}\n</function>\n"  # no '>' after the name
    return f"\n{json.dumps({'name': name, 'arguments': {'q': 1}})}\n"  # the JSON form


def random_qwen3_coder(tokenizer, profile, rng: random.Random) -> tuple[list[int], str]:
    """One random Qwen3-Coder output and its finish reason."""
    content = rng.choice(TEXTS) + rng.choice(("", "\n\n", "\n"))
    calls = [_coder_random_call(rng) for _ in range(rng.choice((0, 1, 1, 2, 3)))]
    ids = coder_ids(tokenizer, profile, content if rng.random() < 0.7 else "", calls,
                    between=rng.choice(("\n", "", "\nnext:\n")), after=rng.choice(("", "", "\nDone.")),
                    close_last=rng.random() < 0.9)
    if not calls and rng.random() < 0.1:
        ids = tokenizer.encode_ordinary(coder_call("get", {"q": "1"})) + [profile.ids["stop"]]  # <function= alone
    if rng.random() < 0.25 and len(ids) > 1:
        return ids[: rng.randint(1, len(ids) - 1)], "length"
    return ids, "stop"


def write_llama3(tokenizer, profile, turn, *, stop: bool = True) -> list[int]:
    """A turn (``content``, ``calls``: (name, arguments text) pairs; no reasoning) as Llama 3.1 writes it: the
    calls as JSON ``{"name": ..., "parameters": ...}`` joined ``between`` (default ``; ``), after
    ``{content}<|python_tag|>`` when there is content, then ``<|eot_id|>``; with ``builtin`` true the content is a
    builtin tool's call, written ``<|python_tag|>{content}<|eom_id|>``."""
    if turn.get("builtin"):  # the content is a builtin tool's call: <|python_tag|>NAME.call(...)<|eom_id|>
        return llama3_ids(tokenizer, profile, "", [turn["content"]], tag=True, stop="stop.2" if stop else None)
    calls = [llama_call(name, args) for name, args in turn.get("calls", ())]
    return llama3_ids(tokenizer, profile, turn.get("content") or "", calls, sep=turn.get("between", "; "),
                      stop="stop" if stop else None)


def write_qwen3_coder(tokenizer, profile, turn, *, stop: bool = True) -> list[int]:
    """A turn (``content``, ``calls``: (name, arguments text) pairs; no reasoning) as Qwen3-Coder writes it:
    each call a ``<tool_call>`` block of ``<function=NAME>`` with one ``<parameter=KEY>`` per argument (arguments
    that are no JSON object written as the body's text), ``between`` (default a newline) between calls."""
    calls = [coder_call(name, coder_params(args)) for name, args in turn.get("calls", ())]
    return coder_ids(tokenizer, profile, turn.get("content") or "", calls, between=turn.get("between", "\n"), stop=stop)


LLAMA3 = CaseGenerator(write=write_llama3, random_output=random_llama3)
QWEN3_CODER = CaseGenerator(write=write_qwen3_coder, random_output=random_qwen3_coder)
