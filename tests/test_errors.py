"""The error root: every located error carries path, line and field; nothing parses messages."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest

from pipeline.core.errors import TokfidelityError, located
from pipeline.core.golden import GoldenError, parse_sample
from pipeline.core.profiles import ProfileError
from pipeline.core.reconstruct import ReconstructionError
from pipeline.core.render import RenderError
from pipeline.core.responses import ResponseError
from pipeline.core.tokenizer import TokenizerNotFound
from pipeline.core.views import ViewError
from pipeline.stages.client import ApiError
from pipeline.stages.prompts import PromptError


@pytest.mark.parametrize("cls", [GoldenError, PromptError, ResponseError, ReconstructionError, RenderError, ProfileError,
                                 ViewError, TokenizerNotFound, ApiError])
def test_every_error_kind_derives_from_the_root(cls):
    assert issubclass(cls, TokfidelityError)


@pytest.mark.parametrize("error, text", [
    (GoldenError("d/samples.jsonl", 3, "id", "missing"), "d/samples.jsonl:3: field 'id': missing"),
    (GoldenError("d/manifest.json", 0, None, "not UTF-8"), "d/manifest.json: not UTF-8"),
    (PromptError("p.jsonl", 2, None, "not JSON"), "p.jsonl:2: not JSON"),
    (ResponseError("choices[0].message", "expected an object"), "field 'choices[0].message': expected an object"),
    (ProfileError("unknown profile 'x'"), "unknown profile 'x'"),
])
def test_messages_render_from_the_parts(error, text):
    assert str(error) == text
    copy = pickle.loads(pickle.dumps(error))
    assert type(copy) is type(error) and str(copy) == text
    assert (copy.path, copy.line, copy.field, copy.message) == (error.path, error.line, error.field, error.message)


def test_parts_are_read_not_parsed():
    with pytest.raises(GoldenError) as caught:
        parse_sample({"id": "a", "output_ids": [1], "finish_reason": {"type": "nonsense"}}, Path("s.jsonl"), 7)
    error = caught.value
    assert (error.path, error.line, error.field) == (Path("s.jsonl"), 7, "finish_reason")
    assert not error.message.startswith("field")  # the bare message, without the response error's location


def test_located_adds_a_location_to_a_bare_error():
    bare = ResponseError("content", "expected a string")
    placed = located(bare, GoldenError, path="g/samples.jsonl", line=4, field="response.content")
    assert isinstance(placed, GoldenError) and str(placed) == "g/samples.jsonl:4: field 'response.content': expected a string"
    assert str(bare) == "field 'content': expected a string"


def test_tokenizer_not_found_is_still_a_file_not_found_error():
    assert issubclass(TokenizerNotFound, FileNotFoundError)
    assert issubclass(GoldenError, ValueError) and issubclass(ApiError, RuntimeError)


def test_atomic_write_leaves_the_old_file_on_failure_and_no_temporary(tmp_path):
    from pipeline.core.files import atomic_path, atomic_write

    target = tmp_path / "run.json"
    atomic_write(target, '{"old": 1}\n')
    with pytest.raises(RuntimeError):
        with atomic_path(target) as tmp:
            tmp.write_text("half")
            raise RuntimeError("killed mid-write")
    assert target.read_text() == '{"old": 1}\n'
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.json"]
    with atomic_path(target) as first, atomic_path(target) as second:  # two writers never share a temporary
        assert first != second
        first.write_text("1")
        second.write_text("2")
    assert target.read_text() == "1"  # the outer block renames last
