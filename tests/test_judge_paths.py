"""The judge's per-sample shortcuts answer exactly what the long way answers.

* ``view_turn_and_bytes`` gives ``parse_response(api_view(...))`` without the response between: same turn, or
  the same error, for every profile and view, on real and random ids (partial UTF-8, markers,
  stop tokens trimmed or kept, cut outputs).
* The trimmed decode inside the views (the last token's bytes cut off the whole's) is the decode
  of ``ids[:-1]``.
* ``parse_sample``'s one-pass id check refuses what the culprit loop names (bool, float, an integer
  too large for 64 bits as orjson reads it, strings, nulls, lists, int subclasses), with the same
  field and message, and accepts what it accepted.
* ``reconstruct_output_ids`` hands out a new list each call (its first encoded run is the list).
"""

from __future__ import annotations

import enum
import json
import random
from pathlib import Path

import orjson
import pytest

from pipeline.core.golden import GoldenError, parse_sample
from pipeline.core.profiles import bind_profile
from pipeline.core.reconstruct import reconstruct_output_ids
from pipeline.core.responses import parse_response
from pipeline.core.tokenizer import load_tokenizer
from pipeline.core.views import ViewError, _decode, api_view, view_turn_and_bytes
from family_support import profile_names, tokenizer_for
from pipeline.cases.kimi_outputs import ARGUMENTS, EMOJI, TEXTS, kimi_ids

PATH = Path("golden/X/samples.jsonl")


def _outcome(f, *args):
    try:
        return "ok", f(*args)
    except Exception as e:  # noqa: BLE001 - the same error is part of the answer
        return "error", type(e).__name__, str(e)


def view_turn(ids, finish, profile, tokenizer, view="sglang"):
    """The judge's turn for these ids (view_turn_and_bytes without the bytes)."""
    return view_turn_and_bytes(ids, finish, profile, tokenizer, view)[0]


def _long_way(ids, finish, profile, tokenizer, view):
    return parse_response(api_view(ids, finish, profile, tokenizer, view))


def _random_ids(rng: random.Random, tokenizer, profile, n: int) -> list[int]:
    """Ordinary tokens (partial UTF-8 bytes among them) with marker and stop ids sprinkled in."""
    markers = sorted(set(profile.ids.values()))
    ids = [rng.randrange(tokenizer.n_vocab - 2000) if rng.random() > 0.08 else rng.choice(markers) for _ in range(n)]
    tail = rng.random()
    if tail < 0.5:
        ids.append(rng.choice(profile.stop_ids))
    elif tail < 0.6 and ids:
        ids[-1] = rng.choice(markers)
    return ids


def _check_same(ids, profile, tokenizer, views=None):
    for view in views or profile.spec.views:
        for finish in ("stop", "length", {"type": "stop", "matched": 1}, "tool_calls"):
            assert _outcome(view_turn, ids, finish, profile, tokenizer, view) == _outcome(
                _long_way, ids, finish, profile, tokenizer, view
            ), (view, finish, ids[-8:])
        outcome = _outcome(view_turn_and_bytes, ids, "stop", profile, tokenizer, view)
        if outcome[0] == "ok":  # the bytes handed to a diagnosis: all the ids', where the view decoded them whole
            data = outcome[1][1]
            incremental = profile.spec.views[view].decode.detokenizer == "incremental"  # vLLM's: no whole decode
            assert data == (None if incremental else tokenizer.decode_bytes(ids))


@pytest.fixture(scope="module")
def families():
    """Every registered profile but Kimi K2.5 (the ``kimi`` and ``profile`` fixtures), bound to its test tokenizer."""
    out = {}
    for name in profile_names():
        if name != "kimi-k2.5":
            tok = tokenizer_for(name)
            out[name] = (tok, bind_profile(name, tok))
    return out


def test_view_turn_is_the_view_read_as_a_response_kimi(kimi, profile):
    cases = [
        kimi_ids(kimi, profile, " Think.\n\n", "\n\nAnswer <|im_end|> "),
        kimi_ids(kimi, profile, "r", "c", [("functions.get:7", ARGUMENTS[1]), ("functions.put:8", "{}")]),
        kimi_ids(kimi, profile, "r", "c", [("bad id", "{}"), ("functions.ok:1", ARGUMENTS[2])], between="x"),
        kimi_ids(kimi, profile, "still thinking", close_think=False, stop=False),
        kimi_ids(kimi, profile, "", ""),
        kimi_ids(kimi, profile, "the literal </think> tag", "a literal <|tool_calls_section_begin|> in prose"),
        [profile.stop_id],
        [profile.stop_id, profile.stop_id],
        [],
    ]
    cases += [kimi_ids(kimi, profile, a, b) for a in TEXTS for b in TEXTS[:3]]
    emoji = kimi.encode_ordinary(EMOJI)
    cases += [emoji[:k] + [profile.stop_id] for k in range(len(emoji))]  # a character cut right before the stop
    for ids in cases:
        _check_same(ids, profile, kimi)


def test_view_turn_is_the_view_read_as_a_response_on_random_ids(kimi, profile, families):
    rng = random.Random(14)
    for tokenizer, prof in [(kimi, profile), *families.values()]:
        for _ in range(60):
            _check_same(_random_ids(rng, tokenizer, prof, rng.randrange(0, 40)), prof, tokenizer)


def test_view_turn_family_texts(families):
    texts = {
        "qwen3": "<think>\nplan\n</think>\n\nanswer<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": 1}}\n</tool_call><|im_end|>",
        "deepseek-v3": "plan</think>answer<｜end▁of▁sentence｜>",
        "chatml": "<|im_start|>not a marker here<|im_end|> answer<|im_end|>",
        "gpt-oss": "<|channel|>analysis<|message|>think<|end|><|start|>assistant<|channel|>final<|message|>done<|return|>",
        "kimi-k2": "answer<|im_end|>",
        "deepseek-v3.1": "plan</think>answer<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>f<｜tool▁sep｜>{\"a\": 1}<｜tool▁call▁end｜><｜tool▁calls▁end｜><｜end▁of▁sentence｜>",
        "deepseek-v3.2": "plan</think>answer\n\n<｜DSML｜function_calls>\n<｜DSML｜invoke name=\"f\">\n<｜DSML｜parameter name=\"a\" string=\"false\">1</｜DSML｜parameter>\n</｜DSML｜invoke>\n</｜DSML｜function_calls><｜end▁of▁sentence｜>",
        "llama3": "answer<|python_tag|>{\"name\": \"f\", \"parameters\": {\"a\": 1}}<|eom_id|>",
        "qwen3-coder": "answer\n<tool_call>\n<function=f>\n<parameter=a>\n1\n</parameter>\n</function>\n</tool_call><|im_end|>",
    }
    assert set(texts) == set(families), "a family's text for this test is missing"
    for name, (tokenizer, prof) in families.items():
        ids = tokenizer.encode(texts[name])
        _check_same(ids, prof, tokenizer)
        _check_same(ids[:-1], prof, tokenizer)
    tokenizer, prof = families["gpt-oss"]  # <|call|> is a stop the server keeps in the text
    _check_same(tokenizer.encode("<|channel|>commentary to=functions.f <|constrain|>json<|message|>{}<|call|>"), prof, tokenizer)


def test_view_turn_refuses_views_as_api_view_does(kimi, profile, families):
    ids = kimi_ids(kimi, profile, "r", "c")
    for view in ("openai", "vllm"):
        assert _outcome(view_turn, ids, "stop", profile, kimi, view) == _outcome(_long_way, ids, "stop", profile, kimi, view)
    tokenizer, qwen = families["qwen3"]
    with pytest.raises(ViewError, match="has no api view 'sglang-legacy'; its views: sglang, vllm"):
        view_turn(tokenizer.encode("a<|im_end|>"), "stop", qwen, tokenizer, "sglang-legacy")
    assert _outcome(view_turn, ids, "nonsense", profile, kimi, "sglang")[:2] == ("error", "ResponseError")


def test_trimmed_decode_is_the_decode_of_all_but_the_last(kimi, profile, families):
    rng = random.Random(7)
    for tokenizer, prof in [(kimi, profile), *families.values()]:
        for _ in range(200):
            ids = _random_ids(rng, tokenizer, prof, rng.randrange(1, 30))
            data = tokenizer.decode_bytes(ids)
            assert _decode(ids, True, tokenizer) == (tokenizer.decode(ids[:-1]), data)
            assert _decode(ids, False, tokenizer) == (tokenizer.decode(ids), data)
            assert _decode(tuple(ids), True, tokenizer) == (tokenizer.decode(ids[:-1]), data)


class _Color(enum.IntEnum):
    RED = 5


class _Plain(enum.Enum):
    ONE = 1


@pytest.mark.parametrize("key", ["output_ids", "prompt_ids"])
@pytest.mark.parametrize(
    "bad, where, message",
    [
        ([1, True], 1, "expected an integer token id, got True"),
        ([False, 1], 0, "expected an integer token id, got False"),
        ([1, 2, 2.0], 2, "expected an integer token id, got 2.0"),
        ([1, float("nan")], 1, "expected an integer token id, got nan"),
        ([1, "2"], 1, "expected an integer token id, got '2'"),
        ([1, None], 1, "expected an integer token id, got None"),
        ([1, [2]], 1, "expected an integer token id, got [2]"),
        ([1, {}], 1, "expected an integer token id, got {}"),
        ([_Color.RED], 0, "expected an integer token id, got <_Color.RED: 5>"),
        ([_Plain.ONE], 0, "expected an integer token id, got <_Plain.ONE: 1>"),
    ],
)
def test_id_check_refuses_what_is_not_a_token_id(key, bad, where, message):
    obj = {"id": "a", "output_ids": [1], "finish_reason": "stop", key: bad}
    with pytest.raises(GoldenError) as e:
        parse_sample(obj, PATH, 3)
    assert (e.value.field, e.value.message, e.value.line) == (f"{key}[{where}]", message, 3)


def test_id_check_reads_huge_integers_as_orjson_gives_them():
    line = b'{"id": "h", "output_ids": [1, 100000000000000000000000000000, true], "finish_reason": "stop"}'
    with pytest.raises(GoldenError) as e:
        parse_sample(orjson.loads(line), PATH, 2)
    assert e.value.field == "output_ids[1]" and "an integer too large for one (about 1e+29)" in e.value.message
    # The stdlib reads it as an int (a line orjson refuses falls back to it): an int, as before, for
    # the vocabulary check to name.
    sample = parse_sample(json.loads(line.replace(b", true", b"")), PATH, 2)
    assert sample.output_ids == [1, 10**29]


def test_id_check_accepts_plain_integers():
    for ids in ([], [0], [1, 2, 3], [2**64 - 1, -(2**63)], list(range(5000))):
        sample = parse_sample({"id": "a", "output_ids": ids, "finish_reason": "stop", "prompt_ids": ids}, PATH, 1)
        assert sample.output_ids is ids and sample.prompt_ids is ids


def test_reconstruction_is_a_new_list_each_time(kimi, profile):
    ids = kimi_ids(kimi, profile, "some reasoning", "the answer")
    turn = view_turn(ids, "stop", profile, kimi)
    first = reconstruct_output_ids(turn, profile, kimi)
    second = reconstruct_output_ids(turn, profile, kimi)
    assert first == second == ids and first is not second
    first.append(0)
    assert reconstruct_output_ids(turn, profile, kimi) == ids


def test_diagnosis_offsets_answer_as_the_full_list(kimi, profile):
    """ByteOffsets computes byte offsets a block at a time from the nearest known one: every answer,
    in any order, is the full list's (negative indices and the end included); past the end it
    raises IndexError as the list did."""
    from itertools import accumulate

    from pipeline.core.sequence_bytes import SequenceBytes

    rng = random.Random(3)
    cases = [[], [profile.stop_id], list(range(32)), list(range(64)), kimi.encode_ordinary(EMOJI * 3)]
    cases += [_random_ids(rng, kimi, profile, rng.randrange(1, 300)) for _ in range(40)]
    for ids in cases:
        full = list(accumulate(map(len, kimi.token_bytes_list(ids)), initial=0))
        data = SequenceBytes(ids, kimi)
        assert data.data == b"".join(kimi.token_bytes_list(ids))
        order = list(range(-len(full), len(full)))
        rng.shuffle(order)
        assert [data.offsets[i] for i in order] == [full[i] for i in order]
        for i in (len(full), -len(full) - 1):
            with pytest.raises(IndexError):
                data.offsets[i]


def test_verdicts_pickle_to_equal_verdicts():
    """Verdicts travel from judging processes pickled (Verdict.__reduce__): every kind comes back equal,
    with the same field types; an exact one as its id, line and length."""
    import pickle

    from pipeline.core.fidelity import BAD_INPUT, DIVERGENT, EXACT, POLICY, Verdict

    verdicts = [
        Verdict("a", 1, EXACT, 3371),
        Verdict("b", 2, EXACT, 5, report="odd but exact"),
        Verdict("c", 3, EXACT, 5, hunks_by_class={"x": 1}),
        Verdict("d", 4, POLICY, 10, ("non-canonical-split",), 1, {"non-canonical-split": 1}),
        Verdict("e", 5, DIVERGENT, 10, ("whitespace", "other"), 2, {"whitespace": 1, "other": 1}, ("sig", (1, 2)), "report", {"d": [1]}),
        Verdict("", 6, BAD_INPUT, report="line 6: bad"),
    ]
    for v in verdicts:
        back = pickle.loads(pickle.dumps(v))
        assert back == v and type(back) is Verdict
        assert [type(getattr(back, f)) for f in Verdict.__slots__] == [type(getattr(v, f)) for f in Verdict.__slots__]
    assert verdicts[0].__reduce__()[1] == ("a", 1, 3371, "")  # an exact verdict: its id, line, length and prompt side
    assert all(len(v.__reduce__()[1]) == len(Verdict.__slots__) for v in verdicts[1:])


def _texts():
    from pipeline.cases.kimi_outputs import LITERAL_MARKERS

    return [*TEXTS, *LITERAL_MARKERS, "", " ", "<|im_end|><|im_end|>", "<think></think>", "a\ud800b", "x" * 30_000, " " * 26_000 + "y"]


def test_packed_encoder_gives_encode_ordinarys_ids(kimi, families):
    """encode_ordinary_packed: the same ids as encode_ordinary, as native unsigned 32-bit ints, or None
    (lone surrogates, Kimi's cut of long inputs), or, on the fast path of a tokenizer.json, tokenizers' own error."""
    from array import array

    texts = _texts()
    # qwen3 and deepseek-v3 (tokenizer.json) have one when their fast encoder (tiktoken's core) was proven equal.
    fast = [families[f][0] for f in ("qwen3", "deepseek-v3") if families[f][0].encoder != "tokenizers"]
    assert fast, "the shipped Qwen3 and DeepSeek-V3 tokenizers load the fast encoder (docs/tokenizers.md)"
    for tokenizer in (kimi, families["gpt-oss"][0], families["kimi-k2"][0], *fast):
        assert tokenizer.encode_ordinary_packed is not None
        for text in texts:
            try:
                packed = tokenizer.encode_ordinary_packed(text)
            except (TypeError, ValueError):  # tokenizers' way with a lone surrogate, which the fast path keeps
                assert "\ud800" in text and tokenizer in fast
                continue
            if packed is None:
                assert "\ud800" in text or len(text) > 25_000
            else:
                assert array("I", bytes(packed)).tolist() == tokenizer.encode_ordinary(text), text[:40]


def test_reconstruct_unless_answers_as_the_comparison(kimi, profile, families):
    """reconstruct_unless(golden, ...) is None exactly when reconstruct_output_ids(...) == golden, and
    that reconstruction otherwise: packed or not, on golden ids that match, differ by one id, by
    length, or hold ids no encoder gives."""
    from pipeline.core.reconstruct import reconstruct_unless
    from pipeline.core.responses import ApiTurn, ToolCall

    texts = _texts()
    turns = [ApiTurn(r, c, (), "stop") for r in texts[:8] for c in texts[:3]]
    turns += [ApiTurn(texts[-1], texts[-2], (), "stop"), ApiTurn("a\ud800b", "c", (), "length"), ApiTurn(None, "", (), "stop")]
    turns += [ApiTurn("r", "c", (ToolCall("get", '{"a": 1}', "functions.get:0"),), "tool_calls")]
    cases = [(kimi, profile, turns)]
    for name in ("qwen3", "gpt-oss", "kimi-k2"):
        tokenizer, prof = families[name]
        cases.append((tokenizer, prof, [ApiTurn("r" if prof.spec.thinking else None, t, (), "stop") for t in texts[:6]]))
    for tokenizer, prof, cases_turns in cases:
        for turn in cases_turns:
            rebuilt = reconstruct_output_ids(turn, prof, tokenizer)
            goldens = [list(rebuilt), tuple(rebuilt), rebuilt[:-1], rebuilt + [1]]
            if rebuilt:
                goldens += [rebuilt[:-1] + [rebuilt[-1] + 1], [-1] + rebuilt[1:], [2**32 + rebuilt[0]] + rebuilt[1:]]
                goldens += [[True if x == 1 else x for x in rebuilt], [float(rebuilt[0])] + rebuilt[1:]]
            for golden in goldens:
                for packed in (True, False):
                    got = reconstruct_unless(golden, turn, prof, tokenizer, packed=packed)
                    assert got == (None if rebuilt == golden else rebuilt), (prof.name, turn, golden[:5], packed)
                    assert got is None or type(got) is list


def test_judge_leaves_the_packed_comparison_when_most_samples_differ(kimi, profile):
    """The judge compares packed while at most 60% of its samples so far have differed, else the
    lists; the verdicts are the same either way."""
    from pipeline.core import fidelity
    from pipeline.core.fidelity import Judge
    from pipeline.core.golden import GoldenSample

    calls = []
    real = fidelity.reconstruct_unless
    fidelity.reconstruct_unless = lambda *a, **k: calls.append(k["packed"]) or real(*a, **k)
    try:
        judge = Judge(profile, kimi, "sglang", {"non-canonical-split": 1.0})
        exact = kimi_ids(kimi, profile, "reasoning", "content")
        split = list(exact)
        at = exact.index(profile.ids["think_end"]) + 1  # "content", written as "c" + "ontent": a non-canonical split
        split[at : at + 1] = kimi.encode_ordinary("c") + kimi.encode_ordinary("ontent")
        samples = [GoldenSample("s", ids, "stop", 1) for ids in [split] * 4 + [exact] * 4]
        kinds = [judge(s).kind for s in samples]
    finally:
        fidelity.reconstruct_unless = real
    assert kinds == ["policy"] * 4 + ["exact"] * 4
    assert calls == [True, False, False, False, False, False, False, True]  # 4 of 7 differed: packed again
    assert [Judge(profile, kimi, "sglang", {"non-canonical-split": 1.0})(s).kind for s in samples] == kinds


def test_diagnosis_with_the_views_bytes_is_the_same(kimi, profile):
    """diagnose(golden_bytes=...) (the judge hands over the bytes its view decoded) answers as diagnose
    decoding them itself."""
    from pipeline.core.diagnose import diagnose

    rng = random.Random(5)
    for _ in range(30):
        golden = _random_ids(rng, kimi, profile, rng.randrange(2, 80))
        rebuilt = list(golden)
        for _ in range(rng.randrange(1, 4)):
            rebuilt[rng.randrange(len(rebuilt))] = rng.randrange(kimi.n_vocab - 2000)
        a = diagnose(golden, rebuilt, kimi, profile=profile, finish_reason="stop")
        b = diagnose(golden, rebuilt, kimi, profile=profile, finish_reason="stop", golden_bytes=kimi.decode_bytes(golden))
        assert (a.render(), a.signature(), a.hunks, a.texts_identical) == (b.render(), b.signature(), b.hunks, b.texts_identical)


def test_the_judge_answers_the_samples_request(kimi, profile):
    """The judge reads each sample's request: the same Kimi call, 5.0 for a parameter the sample's tool
    schema types ``number``, is rebuilt exactly under vLLM's view when the schema does not declare it, and is
    the ``tool-args-json`` loss when it does (vLLM sends ``{"a": 5}``)."""
    from pipeline.core.fidelity import DIVERGENT, EXACT, Judge
    from pipeline.core.golden import GoldenSample

    ids = kimi_ids(kimi, profile, "r", "", [("functions.get:0", '{"a":5.0}')])

    def tools(schema):
        return [{"type": "function", "function": {"name": "get", "parameters": {"type": "object", "properties": schema}}}]

    judge = Judge(profile, kimi, "vllm", prompts=False)
    plain = judge(GoldenSample("s1", ids, "stop", 1, tools=tools({"b": {"type": "number"}})))
    # a property the schema declares without a type counts as a string: vLLM sends {"a": "5.0"}
    untyped = judge(GoldenSample("s3", ids, "stop", 3, tools=tools({"a": {"description": "untyped"}})))
    assert untyped.kind == DIVERGENT and untyped.classes == ("tool-args-json",)
    typed = judge(GoldenSample("s2", ids, "stop", 2, tools=tools({"a": {"type": "number"}})))
    assert plain.kind == EXACT, plain.report
    assert typed.kind == DIVERGENT and typed.classes == ("tool-args-json",)


@pytest.mark.parametrize("view", ["sglang", "vllm"])
def test_a_chunk_judged_in_two_passes_gets_the_verdicts_of_one_sample_at_a_time(kimi, profile, view):
    """``Judge.output_side_chunk`` (every sample's view, then every reconstruction: the suite's judges) gives
    ``output_side``'s verdict on each sample, or raises its error, on B1's and B3's samples (tool calls,
    recorded responses, quirks that diverge) and on samples that are bad input or break the view; and it
    reports its progress before each pass over each sample."""
    from pipeline.core.fidelity import Judge
    from pipeline.core.golden import GoldenSample, read_samples

    root = Path(__file__).resolve().parent.parent / "golden"
    samples = [*read_samples(root / "B1_glaive"), *read_samples(root / "B3_magicoder")]
    exact = kimi_ids(kimi, profile, "reasoning", "content")
    split = list(exact)
    at = exact.index(profile.ids["think_end"]) + 1
    split[at : at + 1] = kimi.encode_ordinary("c") + kimi.encode_ordinary("ontent")
    samples += [
        GoldenError(PATH, 3, "output_ids", "missing"),
        GoldenSample("neg", [-1, *exact], "stop", 4),
        GoldenSample("past", [*exact[:-1], kimi.n_vocab + 5, exact[-1]], "stop", 5),
        GoldenSample("text", ["a", 1], "stop", 6),
        GoldenSample("empty", [], "length", 7),
        GoldenSample("split", split, "stop", 8),
        GoldenSample("response", exact, "stop", 9, response={"choices": "not a list"}),
        GoldenSample("cut", exact[:-1], "length", 10),
    ]
    progress: list[int] = []
    chunk = Judge(profile, kimi, view, {"non-canonical-split": 0.5}).output_side_chunk(samples, progress.append)
    judge = Judge(profile, kimi, view, {"non-canonical-split": 0.5})
    one = [_outcome(judge.output_side, s) for s in samples]
    assert [("ok", v) if not isinstance(v, Exception) else ("error", type(v).__name__, str(v)) for v in chunk] == one
    assert {o[1].kind for o in one if o[0] == "ok"} >= {"exact", "bad-input", "policy"}
    assert progress == [*range(len(samples)), *range(len(samples))]
