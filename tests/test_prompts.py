"""One prompts format for capture and generate."""

import json

import pytest

from pipeline.stages.prompts import Prompt, PromptError, parse_prompt, read_prompts


def test_request_fields():
    p = parse_prompt(
        {"id": 3, "messages": [{"role": "user", "content": "hi"}], "max_new_tokens": 9, "temperature": 0.2,
         "params": {"top_k": 5, "temperature": 1.0}},
        "p.jsonl", 4,
    )
    assert p == Prompt("3", [{"role": "user", "content": "hi"}], None, 9, {"top_k": 5, "temperature": 0.2})
    assert parse_prompt({"id": "a", "messages": [{"role": "user"}], "max_tokens": 7}).max_tokens == 7


@pytest.mark.parametrize(
    "obj, field",
    [
        ({"id": "a", "messages": []}, "messages"),
        ({"id": "a", "messages": [{"content": "x"}]}, "messages[0]"),
        ({"id": "a", "messages": [{"role": "user", "content": 5}]}, "messages[0].content"),
        ({"id": "a", "messages": [{"role": "user"}], "tools": {}}, "tools"),
        ({"id": "a", "messages": [{"role": "user"}], "max_tokens": "9"}, "max_tokens"),
        ({"id": "a", "messages": [{"role": "user"}], "params": []}, "params"),
        ({"messages": [{"role": "user"}]}, "id"),
    ],
)
def test_bad_fields_are_named(obj, field):
    with pytest.raises(PromptError) as e:
        parse_prompt(obj, "p.jsonl", 12)
    assert e.value.field == field and str(e.value).startswith(f"p.jsonl:12: field {field!r}:")


def test_missing_file_says_what_a_prompts_file_is(tmp_path):
    with pytest.raises(PromptError, match="no such file; a prompts file is JSONL"):
        list(read_prompts(tmp_path / "nope.jsonl"))


def test_reading_goes_on_after_a_bad_line(tmp_path):
    path = tmp_path / "p.jsonl"
    path.write_text("\n".join([json.dumps({"id": "a", "messages": [{"role": "user"}]}), "{oops", json.dumps({"id": "b", "messages": [{"role": "user"}]})]))
    items = list(read_prompts(path))
    assert [type(i).__name__ for i in items] == ["Prompt", "PromptError", "Prompt"]
    assert items[1].line == 2
