"""Engine-returned ids: read wherever vLLM or SGLang put them; in generate they are the records' ids,
checked against the reconstruction; build uses them. Servers are real HTTP servers on 127.0.0.1."""

from __future__ import annotations

import json

import pytest

from pipeline.cli import main
from pipeline.core.golden import write_dataset
from pipeline.stages.engine_ids import EngineIdsError, returned_ids
from servers.engine_ids_chat import SMOLLM2, EngineIdsChat
from servers.gates import open_gate
from servers.http_server import FaultyServer


# -- reading ---------------------------------------------------------------------------------------
def test_vllm_placement():
    ids = returned_ids({"prompt_token_ids": [1, 2], "choices": [{"token_ids": [3, 4]}]})
    assert (ids.prompt_ids, ids.output_ids) == ([1, 2], [3, 4])
    assert (ids.prompt_field, ids.output_field) == ("prompt_token_ids", "choices[0].token_ids")


def test_sglang_chat_placement_and_sglext():
    ids = returned_ids({"choices": [{"prompt_token_ids": [1], "response_token_ids": [5, 6]}]})
    assert (ids.prompt_ids, ids.output_ids, ids.output_field) == ([1], [5, 6], "choices[0].response_token_ids")
    ids = returned_ids({"choices": [{"message": {}}], "sglext": {"input_ids": [1, 2], "output_ids": [[7, 8]]}})
    assert (ids.prompt_ids, ids.output_ids, ids.prompt_field) == ([1, 2], [7, 8], "sglext.input_ids")


def test_sglang_generate_placement():
    ids = returned_ids({"text": "x", "output_ids": [9, 2], "meta_info": {"finish_reason": {"type": "stop"}}})
    assert (ids.prompt_ids, ids.output_ids, ids.output_field) == (None, [9, 2], "output_ids")


def test_null_lists_are_absent_not_empty():
    ids = returned_ids({"prompt_token_ids": None, "choices": [{"token_ids": None}]})
    assert ids.output_ids is None and ids.prompt_ids is None and not ids.present
    # a null first place falls through to the next engine's place
    assert returned_ids({"choices": [{"token_ids": None, "response_token_ids": [4]}]}).output_ids == [4]
    # an empty list is present and empty
    assert returned_ids({"choices": [{"token_ids": []}]}).output_ids == []


def test_a_present_list_of_the_wrong_type_names_its_field():
    with pytest.raises(EngineIdsError, match=r"choices\[0\]\.token_ids"):
        returned_ids({"choices": [{"token_ids": ["a"]}]})
    with pytest.raises(EngineIdsError, match="'prompt_token_ids'"):
        returned_ids({"prompt_token_ids": "1 2", "choices": [{}]})


# -- generate ---------------------------------------------------------------------------------------
@pytest.fixture
def golden(tmp_path):
    golden_dir = tmp_path / "golden"
    write_dataset(golden_dir / "T9_smollm2", {"name": "T9_smollm2", "profile": "chatml", "tokenizer": SMOLLM2, "source": "test"},
                  [{"id": "g", "output_ids": [2], "finish_reason": "stop"}])
    open_gate(golden_dir / "T9_smollm2", tmp_path / "state")
    return golden_dir


def _generate(tmp_path, golden, answerer, texts, *more) -> tuple[int, dict, dict, str]:
    prompts = tmp_path / "prompts.jsonl"
    prompts.write_text("".join(json.dumps({"id": f"p{i}", "messages": [{"role": "user", "content": t}]}) + "\n"
                               for i, t in enumerate(texts)))
    out = tmp_path / "out"
    with FaultyServer(answerer) as server:
        code = main(["generate", "--dataset", "T9", "--golden-dir", str(golden), "--state-dir", str(tmp_path / "state"),
                     "--prompts", str(prompts), "--out", str(out), "--base-url", server.url, "--model", "m",
                     "--no-progress", "--concurrency", "2", *more])
    sent = server.requests
    records = {r["id"]: r for r in map(json.loads, (out / "generations.jsonl").read_text().splitlines())}
    summary = json.loads((out / "summary.json").read_text())
    return code, records, summary, sent


@pytest.mark.parametrize("shape", ["vllm", "sglang"])
def test_engine_ids_are_the_records_ids_and_the_reconstruction_is_compared(tmp_path, golden, capsys, shape):
    chat = EngineIdsChat(shape)
    code, records, summary, sent = _generate(tmp_path, golden, chat, ["plain", "[split] please", "[template-differs]"],
                                             "--return-token-ids")
    assert all(body["return_token_ids"] is True for _, body in sent)
    err = capsys.readouterr().err
    assert code == 0, err
    plain, split, differs = records["p0"], records["p1"], records["p2"]
    assert plain["ids_source"] == "engine" and plain["check"] == "ok" and plain["prompt_render"] == "same"
    assert plain["output_ids"] == chat.output_ids("plain")
    # the engine's ids are kept although the text gives others back; the record says how they differ
    assert split["check"] == "reconstruction_differs" and split["output_ids"] == chat.output_ids("[split]")
    assert split["divergence"]["classes"] == ["non-canonical-split"]
    assert split["divergence"]["signature"]["first_index"] == 1 and split["divergence"]["signature"]["texts_identical"]
    assert "non-canonical-split" in split["check_detail"]
    assert differs["prompt_render"]["first_difference"] == 1 and differs["prompt_ids"][1] == 198
    engine = summary["engine_ids"]
    assert engine == {"compared": 3, "exact": 2, "reconstruction_differs": 1, "samples_by_class": {"non-canonical-split": 1},
                      "rate_by_class": {"non-canonical-split": round(1 / 3, 6)}, "hunks_by_class": {"non-canonical-split": 1}}
    assert summary["prompt_render"] == {"same": 2, "differs": 1} and summary["ids_sources"] == {"engine": 3}
    assert "engine ids: 3 records compared with their reconstruction: 2 exact, 1 differ (non-canonical-split 1 (33.3%))" in err


def test_without_returned_ids_nothing_changes(tmp_path, golden):
    code, records, summary, sent = _generate(tmp_path, golden, EngineIdsChat("none"), ["plain", "[split]"])
    assert "return_token_ids" not in sent[0][1]
    assert {r["ids_source"] for r in records.values()} == {"reconstruction"}
    assert records["p0"]["check"] == "ok"
    assert records["p1"]["check"] == "usage_mismatch"  # only the count shows the split, as before
    assert "divergence" not in records["p1"] and "prompt_ids" not in records["p1"] and "engine_ids" not in summary


def test_null_id_lists_are_treated_as_absent(tmp_path, golden):
    code, records, summary, _ = _generate(tmp_path, golden, EngineIdsChat("vllm"), ["[null-ids]"], "--return-token-ids")
    assert records["p0"]["ids_source"] == "reconstruction" and records["p0"]["check"] == "ok"
    assert records["p0"]["output_ids"] and "prompt_render" not in records["p0"]


def test_hidden_reasoning_is_its_own_check_and_providers_are_counted(tmp_path, golden, capsys):
    code, records, summary, _ = _generate(tmp_path, golden, EngineIdsChat("none", provider="Moonshot"), ["[hidden-reasoning]", "plain"])
    assert code == 1
    hidden = records["p0"]
    assert hidden["check"] == "hidden_reasoning" and "7 reasoning tokens" in hidden["check_detail"]
    assert hidden["provider"] == "Moonshot" and hidden["native_finish_reason"] == "eos"
    assert summary["checks"]["hidden_reasoning"] == 1 and summary["checks"]["usage_mismatch"] == 0
    assert summary["by_provider"]["Moonshot"]["samples"] == 2
    assert summary["by_provider"]["Moonshot"]["checks"]["hidden_reasoning"] == 1
    assert "provider Moonshot: 2 records, ok 1, hidden_reasoning 1" in capsys.readouterr().err


def test_build_uses_engine_ids_even_where_the_text_differs(tmp_path, golden):
    chat = EngineIdsChat("vllm")
    code, records, _, _ = _generate(tmp_path, golden, chat, ["plain", "[split]", "[hidden-reasoning]"], "--return-token-ids")
    assert records["p1"]["check"] == "reconstruction_differs" and records["p2"]["check"] == "usage_mismatch"
    assert main(["build", "--in", str(tmp_path / "out"), "--out", str(tmp_path / "train"), "--no-progress"]) == 1  # p2 left out
    rows = {r["id"]: r for r in map(json.loads, (tmp_path / "train" / "train.jsonl").read_text().splitlines())}
    assert sorted(rows) == ["p0", "p1"]  # p2: the server's usage disagrees with its ids: left out
    split = rows["p1"]
    assert split["source"] == "engine"
    assert split["input_ids"][split["prompt_len"]:] == chat.output_ids("[split]")
    assert split["input_ids"][:split["prompt_len"]] == records["p1"]["prompt_ids"]


def test_build_refuses_engine_prompt_ids_that_differ_from_the_rendering(tmp_path, golden, capsys):
    _generate(tmp_path, golden, EngineIdsChat("sglang"), ["[template-differs]"], "--return-token-ids")
    code = main(["build", "--in", str(tmp_path / "out"), "--out", str(tmp_path / "train"), "--no-progress"])
    assert code != 0
    assert "differs from the golden prompt_ids" in capsys.readouterr().err


def test_golden_from_generations_gives_the_suite_the_same_responses(tmp_path, golden, capsys):
    from pipeline.core.fidelity import EXACT, Judge
    from pipeline.core.golden import read_samples

    chat = EngineIdsChat("vllm")
    _, records, _, _ = _generate(tmp_path, golden, chat, ["plain", "[split]", "[hidden-reasoning]"], "--return-token-ids")
    assert main(["golden-from", "--generations", str(tmp_path / "out"), "--dataset", "E1_engine", "--out", str(golden)]) == 0
    assert "2 samples with the engine's ids; 1 records left out" in capsys.readouterr().out
    samples = list(read_samples(golden / "E1_engine"))
    assert [s.id for s in samples] == ["p0", "p1"]
    judge = Judge(chat.profile, chat.tok, "sglang")
    for s in samples:
        record = records[s.id]
        assert s.output_ids == record["output_ids"] and s.prompt_ids == record["prompt_ids"]
        verdict = judge(s)
        if record["check"] == "ok":
            assert verdict.kind == EXACT
        else:  # the suite sees exactly the divergence generate recorded
            assert verdict.signature == record["divergence"]["signature"] and list(verdict.classes) == record["divergence"]["classes"]


@pytest.mark.parametrize("view_for", [None, "vllm"])
def test_golden_from_names_the_view_its_records_were_generated_under(tmp_path, golden, view_for):
    """golden-from's manifest says the view the records were served under (generate --view-for), SGLang's when
    none was named, and every view when they differ (api_views)."""
    from pipeline.core.golden import load_manifest

    more = ("--view-for", f"*={view_for}") if view_for else ()
    _generate(tmp_path, golden, EngineIdsChat("vllm"), ["plain", "[split]"], "--return-token-ids", *more)
    assert main(["golden-from", "--generations", str(tmp_path / "out"), "--dataset", "E2", "--out", str(golden)]) == 0
    manifest = load_manifest(golden / "E2")
    assert manifest.views == (view_for or "sglang",) and "api_views" not in manifest.raw
    records = (tmp_path / "out" / "generations.jsonl").read_text().splitlines()
    first = json.loads(records[0])
    first["view"] = "sglang" if view_for else "vllm"  # two records served under two views
    (tmp_path / "out" / "generations.jsonl").write_text("\n".join([json.dumps(first), *records[1:]]) + "\n")
    assert main(["golden-from", "--generations", str(tmp_path / "out"), "--dataset", "E3", "--out", str(golden)]) == 0
    assert load_manifest(golden / "E3").views == ("sglang", "vllm")


def test_golden_from_refuses_a_folder_that_is_not_a_generate_run(tmp_path, capsys):
    assert main(["golden-from", "--generations", str(tmp_path), "--dataset", "X", "--out", str(tmp_path / "g")]) == 2
    assert "not a `tokfidelity generate` output folder" in capsys.readouterr().err


def test_golden_from_writes_samples_in_the_natural_order_of_their_ids():
    """generate writes records as responses arrive; golden-from's files must not depend on that."""
    from pipeline.stages.engine_golden import _natural

    ids = ["p10", "p2", "q", "p1", "p0²", "p01", "p"]
    assert sorted(ids, key=_natural) == ["p", "p0²", "p01", "p1", "p2", "p10", "q"]
