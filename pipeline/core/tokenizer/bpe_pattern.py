"""A ``tokenizer.json`` pre-tokenizer as one tiktoken ``pat_str``, or the reason it cannot be one.

What is expressed: ``Split`` (a regex, ``Isolated``, not inverted), ``Digits`` and ``ByteLevel`` (its
GPT-2 regex when ``use_regex``, no prefix space), alone or in a ``Sequence`` whose ByteLevel comes last.

One split is its own pattern. Several are applied one inside another's pieces; every split but the
last must cut out runs of one character class (``\\p{N}{1,3}``, ``[一-龥]+``, ``Digits``), so the
pieces left between their matches are exactly the runs of the other characters. The last split then
runs inside those runs only: each of its atoms (class, escape, literal) is intersected with the
complement of the earlier classes, so no match, and no look-around, sees past a run's end.

``Split`` keeps the text between matches as pieces of their own; tiktoken drops text its pattern does
not match. A final alternative takes such text: characters at which no other alternative matches.
"""

from __future__ import annotations

import re

__all__ = ["pattern_for", "GPT2_PATTERN", "Refused"]

# ByteLevel's own regex (use_regex=True), as in tokenizers' byte_level.rs.
GPT2_PATTERN = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""


class Refused(ValueError):
    """This pre-tokenizer has no pattern here (the message says why)."""


def pattern_for(pre_tokenizer: dict | None) -> str:
    """The ``pat_str`` whose matches are the pre-tokenizer's pieces; raises Refused."""
    splits = _splits(pre_tokenizer)
    if not splits:
        return r"[\s\S]+"  # one piece: the whole text
    *runs, last = splits
    classes = [_run_class(p) for p in runs]
    alternatives = []
    for i, (atom, quantifier) in enumerate(classes):
        alternatives.append(_restricted(atom, [a for a, _ in classes[:i]]) + quantifier)
    alternatives.append(_restrict(last, [a for a, _ in classes]) if classes else last)
    whole = "|".join(f"(?:{a})" for a in alternatives)
    return f"{whole}|(?:(?!{whole})[\\s\\S])+"


def _splits(pre: dict | None) -> list[str]:
    """The regex of each split, in order; the ByteLevel must come last."""
    if pre is None:
        raise Refused("no pre-tokenizer (not a byte-level BPE)")
    steps = pre.get("pretokenizers") if pre.get("type") == "Sequence" else [pre]
    if not steps or steps[-1].get("type") != "ByteLevel":
        raise Refused("the pre-tokenizer does not end with ByteLevel")
    out = []
    for step in steps[:-1]:
        kind = step.get("type")
        if kind == "Split":
            pattern = step.get("pattern") or {}
            if step.get("behavior") != "Isolated" or step.get("invert"):
                raise Refused(f"Split with behavior {step.get('behavior')!r}, invert {step.get('invert')!r}")
            if "Regex" in pattern:
                out.append(pattern["Regex"])
            elif "String" in pattern:
                out.append("".join(_literal(c) for c in pattern["String"]))
            else:
                raise Refused(f"Split pattern {pattern!r}")
        elif kind == "Digits":
            out.append(r"\p{N}" if step.get("individual_digits") else r"\p{N}+")
        else:
            raise Refused(f"pre-tokenizer step {kind!r}")
    byte_level = steps[-1]
    if byte_level.get("add_prefix_space"):
        raise Refused("ByteLevel add_prefix_space")
    if byte_level.get("use_regex", True):
        out.append(GPT2_PATTERN)
    for p in out:
        _check_syntax(p)
    return out


# A split that cuts out runs of one class: the class, then +, {1,n} or nothing.
_RUN = re.compile(r"^(\\[pP]\{[A-Za-z_ =]+\}|\\[dsw]|\[(?:\\.|[^\[\]\\])+\])(\+|\{1(?:,\d*)?\})?$")


def _run_class(pattern: str) -> tuple[str, str]:
    m = _RUN.match(pattern)
    if m is None:
        raise Refused(f"split {pattern!r} comes before another split but is not a run of one character class")
    return m.group(1), m.group(2) or ""


def _literal(c: str) -> str:
    return f"\\x{{{ord(c):x}}}"


def _restricted(atom: str, earlier: list[str]) -> str:
    """``atom`` (a class, an escape or a literal) without the characters of the ``earlier`` classes."""
    if not earlier:
        return atom
    inner = atom if atom.startswith("[") else f"[{atom}]"
    return f"[{inner}&&[^{''.join(earlier)}]]"


# Tokens of a pattern outside classes: an escape, a group opening, a counted quantifier, or one character.
_TOKEN = re.compile(r"\\[pP]\{[^}]*\}|\\x\{[0-9a-fA-F]+\}|\\x[0-9a-fA-F]{2}|\\u[0-9a-fA-F]{4}|\\.|\(\?(?:[a-z]*:|<?[=!])|\(\?|\{\d+(?:,\d*)?\}|.", re.S)
# Escapes both engines read alike: Unicode classes, \s \d \w (and negations), control characters, code points,
# escaped punctuation.
_ESCAPE = re.compile(r"\\[pP]\{[A-Za-z_ =]+\}|\\[dDsSwW]|\\[rntfv0]|\\x\{[0-9a-fA-F]+\}|\\x[0-9a-fA-F]{2}|\\u[0-9a-fA-F]{4}|\\[^A-Za-z0-9]")
_GROUPS = {"(", "(?:", "(?i:", "(?=", "(?!", "(?<=", "(?<!"}


def _scan(pattern: str):
    """(kind, text) for each token: "class", "escape", "literal", "dot", "group", "syntax" (| ) * + ? and
    counted quantifiers); raises Refused on what the two regex engines may read differently (anchors,
    back-references, possessive quantifiers, inline flags other than case)."""
    i, previous = 0, ""
    while i < len(pattern):
        if pattern[i] == "[":
            end = _class_end(pattern, i)
            yield "class", pattern[i:end]
            i, previous = end, "class"
            continue
        token = _TOKEN.match(pattern, i).group(0)
        i += len(token)
        if token.startswith("\\"):
            if not _ESCAPE.fullmatch(token):
                raise Refused(f"escape {token!r} in {pattern!r}")
            kind = "escape"
        elif token.startswith("("):
            if token not in _GROUPS:
                raise Refused(f"group {token!r} in {pattern!r}")
            kind = "group"
        elif token in ("|", ")", "*", "?") or token.startswith("{") or token == "+":
            if token == "+" and previous == "quantifier":
                raise Refused(f"possessive quantifier in {pattern!r}")
            kind = "quantifier" if token in ("*", "+", "?") or token.startswith("{") else "syntax"
        elif token in ("^", "$"):
            raise Refused(f"anchor {token!r} in {pattern!r}")
        else:
            kind = "dot" if token == "." else "literal"
        previous = kind
        yield kind, token


def _restrict(pattern: str, earlier: list[str]) -> str:
    """``pattern`` with every atom intersected with the complement of the ``earlier`` classes."""
    out = []
    for kind, token in _scan(pattern):
        if kind == "class" or (kind == "escape" and not _LITERAL_ESCAPE.fullmatch(token)):
            out.append(_restricted(token, earlier))
        elif kind == "escape":
            out.append(_restricted(_literal(_escape_char(token)), earlier))
        elif kind == "dot":
            out.append(_restricted(r"[^\n]", earlier))
        elif kind == "literal":
            out.append(_restricted(_literal(token), earlier))
        else:
            out.append(token)
    return "".join(out)


_LITERAL_ESCAPE = re.compile(r"\\[rntfv0]|\\x.*|\\u.*|\\[^A-Za-z0-9]")
_CONTROL = {"r": "\r", "n": "\n", "t": "\t", "f": "\f", "v": "\v", "0": "\0"}


def _escape_char(token: str) -> str:
    body = token[1:]
    if body in _CONTROL:
        return _CONTROL[body]
    if body.startswith(("x{", "u")) or (body.startswith("x") and len(body) == 3):
        return chr(int(body.strip("xu{}"), 16))
    return body


def _class_end(pattern: str, start: int) -> int:
    """The index just past the character class opening at ``start`` (nested classes, escapes); escapes
    inside are checked as outside."""
    depth, i = 0, start
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            escape = _ESCAPE.match(pattern, i)
            if escape is None:
                raise Refused(f"escape {pattern[i:i + 2]!r} in a class of {pattern!r}")
            i = escape.end()
            continue
        if c == "[":
            depth += 1
            i += 1
            if pattern.startswith("^", i):
                i += 1
            if pattern.startswith("]", i):  # a leading ] is a literal
                i += 1
            continue
        if c == "]":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    raise Refused(f"unbalanced character class in {pattern!r}")


def _check_syntax(pattern: str) -> None:
    for _ in _scan(pattern):
        pass
