"""gpt-oss output ids rendered by openai-harmony itself (independently of tokfidelity's layout), in
the form the model writes: the first message without ``<|start|>assistant`` (the prompt ends with
it), a tool call's recipient in the channel header (``<|channel|>commentary to=functions.NAME
<|constrain|>json<|message|>``) closed by ``<|call|>``, an answer closed by ``<|return|>``.
Shared by the sglang differential test, the gpt-oss tests and scripts/make_gpt_oss_golden.py."""

from __future__ import annotations

import random
from collections.abc import Sequence

from openai_harmony import Message, Role

from . import CaseGenerator

CODE = 'def f(x):\n\tif x  >  1:\n\t\treturn  x\t# tab\n    pass\n'
CJK = "中文测试，汉字与标点。日本語のテキストと한국어"
EMOJI = "family 👩\u200d👩\u200d👧\u200d👦, thumbs 👍🏽!"
SPACES = "  two leading, then\ttab,   three,\n\n\nand trailing   "
WORDS = "We should analyse the commentary and the final answer carefully."
TEXTS = (CODE, CJK, EMOJI, SPACES, WORDS, "Plain answer.", " ", "\n")
LITERAL_MARKERS = ("quote <|end|> literally", "a <|return|> in prose", "text <|call|> here", "<|start|>assistant typed")
ARGUMENTS = (
    '{"city":"Paris"}',
    '{"q": 1}',
    '{ "path" :"/tmp/a b" ,\n  "n":[1, 2 ,3] }',
    '{"s": "中文 👍\\u00e9", "t": "tab\\there"}',
    "{}",
    "",
    '{"nested": {"a": {"b": "}"}}, "c": null}',
    '{"cut": ',
    "[1, 2]",
)
NAMES = ("get_weather", "search.web", "read_file", "run-cmd")


class HarmonyOutputs:
    """Renders assistant messages with openai-harmony and joins them as one model output."""

    def __init__(self, harmony, tokenizer, profile):
        self.h = harmony
        self.tok = tokenizer
        self.ids = profile.ids
        self.start = list(harmony.render(Message.from_role_and_content(Role.ASSISTANT, "").with_channel("final")))
        self.start = self.start[: self.start.index(self.ids["channel"])]  # <|start|>assistant

    def message(self, channel: str, text: str, recipient: str | None = None, *, role_header: bool = False) -> list[int]:
        m = Message.from_role_and_content(Role.ASSISTANT, text)
        if recipient is None:
            m = m.with_channel(channel)
        elif role_header:  # how openai-harmony renders history: recipient in the role header
            m = m.with_channel(channel).with_recipient(recipient).with_content_type("<|constrain|>json")
        else:  # how the model writes a call: recipient in the channel header
            m = m.with_channel(f"{channel} to={recipient}").with_content_type("<|constrain|>json")
        ids = list(self.h.render(m))
        if recipient is not None:
            ids[-1] = self.ids["call"]
        elif channel == "final":
            ids[-1] = self.ids["stop"]  # <|return|>, as render_conversation_for_training ends an answer
        return ids

    def output(self, messages: Sequence[list[int]]) -> list[int]:
        out: list[int] = []
        for ids in messages:
            out += ids
        return out[len(self.start) :] if out[: len(self.start)] == self.start else out

    def turn(self, reasoning: str | None, content: str | None = None, calls: Sequence[tuple[str, str]] = (), *,
             preamble: bool | None = None) -> list[int]:
        """reasoning (None: no analysis message), then content as a preamble (with calls) or the final
        answer, then each call (name, arguments) to functions.NAME."""
        messages = []
        if reasoning is not None:
            messages.append(self.message("analysis", reasoning))
        if content is not None and (calls or preamble):
            messages.append(self.message("commentary", content))
        elif content is not None:
            messages.append(self.message("final", content))
        for name, arguments in calls:
            messages.append(self.message("commentary", arguments, f"functions.{name}"))
        return self.output(messages)


def random_output(gen: HarmonyOutputs, rng: random.Random) -> tuple[list[int], str]:
    """One varied output and its finish reason ("stop" or "length")."""
    pool = TEXTS + LITERAL_MARKERS

    def text() -> str:
        return "".join(rng.choice(pool) for _ in range(rng.randint(0, 3)))

    messages = []
    if rng.random() < 0.85:
        messages.append(gen.message("analysis", text()))
    calls = rng.choice([0, 0, 1, 1, 2, 3])
    if rng.random() < 0.15:  # a second analysis after a preamble, or a stray one
        messages.append(gen.message("commentary", text()))
        messages.append(gen.message("analysis", text()))
    if calls:
        if rng.random() < 0.5:
            messages.append(gen.message("commentary", text()))
        for _ in range(calls):
            role_header = rng.random() < 0.1
            messages.append(gen.message("commentary", rng.choice(ARGUMENTS), f"functions.{rng.choice(NAMES)}",
                                        role_header=role_header))
    else:
        messages.append(gen.message("final", text()))
    ids = gen.output(messages)
    if rng.random() < 0.3 and len(ids) > 2:
        return ids[: rng.randrange(1, len(ids))], "length"
    if rng.random() < 0.05:
        ids[-1] = gen.tok.encode("<|endoftext|>")[0]  # stopped on the other eos id
    return ids, "stop"


def _generator(tokenizer, profile) -> HarmonyOutputs:
    from ..core.harmony import harmony_encoding

    return HarmonyOutputs(harmony_encoding(tokenizer), tokenizer, profile)


def write(tokenizer, profile, turn, *, stop: bool = True) -> list[int]:
    """A turn (``reasoning``, ``content``, ``calls``: (name, arguments) pairs) as harmony messages; without
    ``stop`` the last message's end is left off (a length cut)."""
    ids = _generator(tokenizer, profile).turn(turn.get("reasoning"), turn.get("content"), turn.get("calls", ()))
    return ids if stop else ids[:-1]


CASES = CaseGenerator(write=write, random_output=lambda tokenizer, profile, rng: random_output(_generator(tokenizer, profile), rng))
