"""The golden dataset format: good data loads, bad data is named by file, line and field."""

import json

import pytest

from pipeline.core.golden import GoldenError, GoldenSample, find_datasets, load_manifest, read_samples, write_dataset

MANIFEST = {"name": "T1_demo", "profile": "kimi-k2.5", "tokenizer": "kimi-k2.5", "source": "constructed for a test"}


def make(tmp_path, lines, manifest=MANIFEST, name="T1_demo"):
    d = tmp_path / name
    d.mkdir(parents=True)
    (d / "manifest.json").write_text(json.dumps(manifest))
    (d / "samples.jsonl").write_text("".join(line + "\n" for line in lines))
    return d


def test_round_trip(tmp_path):
    samples = [
        {"id": "a", "output_ids": [1, 2, 163586], "finish_reason": "stop"},
        {"id": "b", "output_ids": [1, 2], "finish_reason": {"type": "length", "length": 2}},
        {"id": "c", "output_ids": [5, 163586], "finish_reason": {"type": "stop", "matched": 163586}, "prompt_ids": [9]},
    ]
    d = write_dataset(tmp_path / "T1_demo", MANIFEST, samples)
    m = load_manifest(d)
    assert m.api_view == "sglang" and m.max_known_divergence_rate == 0.0 and m.profile == "kimi-k2.5"
    got = list(read_samples(d))
    assert all(isinstance(s, GoldenSample) for s in got)
    assert [s.finish_reason for s in got] == ["stop", "length", "stop"]
    assert got[2].prompt_ids == [9] and got[1].line == 2


def test_bad_lines_are_named_and_the_rest_still_reads(tmp_path):
    d = make(
        tmp_path,
        [
            '{"id": "ok1", "output_ids": [1], "finish_reason": "stop"}',
            "{not json",
            '{"id": "x", "output_ids": [1, "2"], "finish_reason": "stop"}',
            '{"id": "y", "output_ids": [1], "finish_reason": "banana"}',
            '{"output_ids": [1], "finish_reason": "stop"}',
            '{"id": "ok1", "output_ids": [1], "finish_reason": "stop"}',
            '{"id": "z", "finish_reason": "stop"}',
            '{"id": "ok2", "output_ids": [3], "finish_reason": "length"}',
        ],
    )
    got = list(read_samples(d))
    errors = [g for g in got if isinstance(g, GoldenError)]
    assert [s.id for s in got if isinstance(s, GoldenSample)] == ["ok1", "ok2"]
    assert [(e.line, e.field) for e in errors] == [
        (2, None),
        (3, "output_ids[1]"),
        (4, "finish_reason"),
        (5, "id"),
        (6, "id"),
        (7, "output_ids"),
    ]
    assert str(errors[1]).startswith(f"{d / 'samples.jsonl'}:3: field 'output_ids[1]'")
    assert "duplicate id 'ok1' (first on line 1)" in str(errors[4])


def test_non_utf8_line_is_named_and_the_rest_still_reads(tmp_path):
    d = make(tmp_path, ['{"id": "ok1", "output_ids": [1], "finish_reason": "stop"}'])
    with open(d / "samples.jsonl", "ab") as f:
        f.write(b'{"id": "caf\xe9", "output_ids": [1], "finish_reason": "stop"}\n')
        f.write(b'{"id": "ok2", "output_ids": [2], "finish_reason": "stop"}\n')
    got = list(read_samples(d))
    assert [s.id for s in got if isinstance(s, GoldenSample)] == ["ok1", "ok2"]
    (error,) = [g for g in got if isinstance(g, GoldenError)]
    assert error.line == 2 and str(error) == f"{d / 'samples.jsonl'}:2: not UTF-8: byte 0xe9 at column 12"


def test_deeply_nested_line_is_named_and_the_rest_still_reads(tmp_path):
    deep = '{"id": "deep", "output_ids": ' + "[" * 100_000 + "]" * 100_000 + ', "finish_reason": "stop"}'
    d = make(tmp_path, [deep, '{"id": "ok", "output_ids": [1], "finish_reason": "stop"}'])
    got = list(read_samples(d))
    assert [s.id for s in got if isinstance(s, GoldenSample)] == ["ok"]
    assert str(got[0]) == f"{d / 'samples.jsonl'}:1: not valid JSON: nested too deeply"


@pytest.mark.parametrize(
    "patch, field",
    [
        ({"profile": "kimi-k9"}, "profile"),
        ({"api_view": "tgi"}, "api_view"),
        ({"max_known_divergence_rate": 2}, "max_known_divergence_rate"),
        ({"tokenizer": None}, "tokenizer"),
        ({"accept": {"non-canonical-split": "lots"}}, "accept"),
    ],
)
def test_bad_manifest_fields(tmp_path, patch, field):
    d = make(tmp_path, [], manifest={**MANIFEST, **patch})
    with pytest.raises(GoldenError) as e:
        load_manifest(d)
    assert e.value.field == field and str(d / "manifest.json") in str(e.value)


def test_manifest_not_json(tmp_path):
    d = tmp_path / "T2"
    d.mkdir()
    (d / "manifest.json").write_text('{"name": "T2",\n "profile": }')
    with pytest.raises(GoldenError, match=r"manifest.json:2: not valid JSON"):
        load_manifest(d)


def test_manifest_not_utf8(tmp_path):
    d = tmp_path / "T3"
    d.mkdir()
    (d / "manifest.json").write_bytes(b'{"name": "T3\xff"}')
    with pytest.raises(GoldenError, match=r"manifest.json: not UTF-8: byte 0xff at byte offset 12"):
        load_manifest(d)


def test_find_datasets_names_a_folder_without_manifest(tmp_path):
    make(tmp_path, [], name="B1_glaive")
    (tmp_path / "B2").mkdir()
    (tmp_path / "B2" / "samples.jsonl").write_text("")
    with pytest.raises(ValueError, match=r"no dataset named 'B2' \(or B2_\*\) in .* \(.*B2 has no manifest.json: .*\); available: B1_glaive"):
        find_datasets(tmp_path, ["B2"])


def test_find_datasets_by_prefix(tmp_path):
    for name in ("B1_glaive", "B3_magicoder", "B30_other", "smollm2-chat"):
        make(tmp_path, [], manifest={**MANIFEST, "name": name}, name=name)
    names = lambda sel: [p.name for p in find_datasets(tmp_path, sel)]
    assert names(["B3"]) == ["B3_magicoder"]
    assert names(["B1", "B3_magicoder"]) == ["B1_glaive", "B3_magicoder"]
    assert names(["all"]) == ["B1_glaive", "B30_other", "B3_magicoder", "smollm2-chat"]
    with pytest.raises(ValueError, match="no dataset named 'B9'.*available: B1_glaive"):
        find_datasets(tmp_path, ["B9"])


def test_byte_order_mark_is_not_part_of_the_first_line(tmp_path):
    d = tmp_path / "T1_demo"
    d.mkdir()
    bom = "\ufeff".encode()
    (d / "manifest.json").write_bytes(bom + json.dumps(MANIFEST).encode())
    (d / "samples.jsonl").write_bytes(bom + b'{"id": "a", "output_ids": [1, 163586], "finish_reason": "stop"}\n')
    assert load_manifest(d).name == "T1_demo"
    (sample,) = read_samples(d)
    assert isinstance(sample, GoldenSample) and sample.id == "a" and sample.line == 1


def test_samples_path_that_is_a_folder_is_named(tmp_path):
    d = make(tmp_path, [])
    (d / "samples.jsonl").unlink()
    (d / "samples.jsonl").mkdir()
    (error,) = read_samples(d)
    assert isinstance(error, GoldenError) and "not a file" in str(error)


def test_golden_dir_that_is_a_file_is_named(tmp_path):
    (tmp_path / "golden").write_text("")
    with pytest.raises(ValueError, match="golden dir .* is not a folder"):
        find_datasets(tmp_path / "golden", ["all"])
    with pytest.raises(ValueError, match="golden dir .* does not exist"):
        find_datasets(tmp_path / "nope", ["all"])


def test_tool_choice_is_read_and_a_bad_one_named(tmp_path):
    """A sample's tool_choice (the request's) is read for the views; a value no API accepts is that line's error."""
    d = make(
        tmp_path,
        [
            '{"id": "a", "output_ids": [1], "finish_reason": "stop", "tool_choice": "required"}',
            '{"id": "b", "output_ids": [1], "finish_reason": "stop", "tool_choice": {"type": "function", "function": {"name": "f"}}}',
            '{"id": "c", "output_ids": [1], "finish_reason": "stop", "tool_choice": "sometimes"}',
            '{"id": "d", "output_ids": [1], "finish_reason": "stop", "tool_choice": {"type": "function"}}',
            '{"id": "e", "output_ids": [1], "finish_reason": "stop"}',
        ],
    )
    got = list(read_samples(d))
    assert [s.tool_choice for s in got if isinstance(s, GoldenSample)] == ["required", {"type": "function", "function": {"name": "f"}}, None]
    errors = [g for g in got if isinstance(g, GoldenError)]
    assert [(e.line, e.field) for e in errors] == [(3, "tool_choice"), (4, "tool_choice")]
    assert "expected \"auto\", \"none\", \"required\"" in str(errors[0])
