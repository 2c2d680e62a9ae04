"""Facts the whole project rests on, checked against the real Kimi tokenizer files."""

from pipeline.core.profiles import bind_profile
from pipeline.core.reconstruct import reconstruct_output_ids
from pipeline.core.tokenizer import load_tokenizer


def test_kimi_facts():
    k = load_tokenizer("moonshotai/Kimi-K2.5")
    assert k.n_vocab == 163842
    assert k.encode("<|im_end|>") == [163586]
    assert k.encode_ordinary("<|im_end|>") == [27, 91, 348, 11129, 91, 29]
    assert k.token_text(163533) == "chas"
    assert k.encode(" wish to average.") == [9176, 308, 8217, 13]
    assert k.encode("</think>") == [163607]
    assert k.special_tokens["<|reserved_token_163600|>"] == 163600


def test_reconstruct_tool_turn():
    k = load_tokenizer("kimi-k2.5")
    p = bind_profile("kimi-k2.5", k)
    response = {
        "reasoning": "Look it up.",
        "content": "",
        "tool_calls": [{"id": "call_9", "type": "function", "function": {"name": "get", "arguments": '{"q": 1}'}}],
        "finish_reason": "tool_calls",
    }
    ids = reconstruct_output_ids(response, p, k)
    assert k.decode(ids) == (
        "Look it up.</think><|tool_calls_section_begin|><|tool_call_begin|>functions.get:0"
        '<|tool_call_argument_begin|>{"q": 1}<|tool_call_end|><|tool_calls_section_end|><|im_end|>'
    )
    assert ids[-1] == 163586
