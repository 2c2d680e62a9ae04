"""A team's own data pipeline, written the way the one that started tokfidelity was.

It rebuilds Kimi K2.5 output ids from the text an OpenAI-compatible server returned: reasoning,
``</think>``, content, the tool-call section, ``<|im_end|>``. The marker ids are hard-coded, and one
is wrong: 163533 is an ordinary token (``chas``), not ``<|im_end|>`` (163586). Every sample the model
ended with ``<|im_end|>`` comes out with ``chas`` in its place, and a drafter trained on them learns
to end its turns with a word. ``pytest --tokfidelity-dataset=B1`` here catches it (README.md).
"""

THINK_END_TOKEN_ID = 163607  # </think>
TOOL_CALLS_SECTION_BEGIN_TOKEN_ID = 163595  # <|tool_calls_section_begin|>
TOOL_CALLS_SECTION_END_TOKEN_ID = 163596  # <|tool_calls_section_end|>
TOOL_CALL_BEGIN_TOKEN_ID = 163597  # <|tool_call_begin|>
TOOL_CALL_ARGUMENT_BEGIN_TOKEN_ID = 163598  # <|tool_call_argument_begin|>
TOOL_CALL_END_TOKEN_ID = 163599  # <|tool_call_end|>
IM_END_TOKEN_ID = 163533  # <|im_end|>


def reconstruct_output_ids(message, tokenizer):
    """The output ids of one assistant message (``reasoning_content``, ``content``, ``tool_calls``,
    ``finish_reason``), as the pipeline built its training records."""
    ids = []
    reasoning = message.get("reasoning_content") or ""
    ids += tokenizer.encode(reasoning, add_special_tokens=False)
    ids.append(THINK_END_TOKEN_ID)
    ids += tokenizer.encode(message.get("content") or "", add_special_tokens=False)
    calls = message.get("tool_calls") or []
    if calls:
        ids.append(TOOL_CALLS_SECTION_BEGIN_TOKEN_ID)
        for call in calls:
            ids.append(TOOL_CALL_BEGIN_TOKEN_ID)
            ids += tokenizer.encode(call["id"], add_special_tokens=False)
            ids.append(TOOL_CALL_ARGUMENT_BEGIN_TOKEN_ID)
            ids += tokenizer.encode(call["function"]["arguments"], add_special_tokens=False)
            ids.append(TOOL_CALL_END_TOKEN_ID)
        ids.append(TOOL_CALLS_SECTION_END_TOKEN_ID)
    if message.get("finish_reason") != "length":
        ids.append(IM_END_TOKEN_ID)
    return ids
