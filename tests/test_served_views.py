"""Views per provider: generate's --view-for (and run.json's view_for), the views that reproduce each
response's text from the engine's ids, the provider x view summary; build pins each record's view and the
gated stages refuse records rebuilt through a view the gate did not judge. Real HTTP servers on 127.0.0.1."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from pipeline.cli import main
from pipeline.core.golden import write_dataset
from pipeline.stages.export import SEAL_FIELD, export_seal
from servers.engine_ids_chat import SMOLLM2, EngineIdsChat
from servers.gates import open_gate
from servers.http_server import FaultyServer

KEY = "sk-or-served-views-never-written-7"


class CutChat(EngineIdsChat):
    """SmolLM2 answers as a vLLM or an SGLang server sends them. ``[cut]``: a length cut inside "🦜" (ids
    "Sure", ":", " \\xf0\\x9f"), whose text each engine sends its own way: vLLM holds the partial character
    back, SGLang sends U+FFFD (field notes; issue 21, behaviour 8)."""

    TEXT = {"vllm": "Sure:", "sglang": "Sure: \ufffd", "none": "Sure: \ufffd"}

    def output_ids(self, text: str) -> list[int]:
        return self.tok.encode_ordinary("Sure: 🦜")[:3] if "[cut]" in text else super().output_ids(text)

    def __call__(self, path: str, body: dict):
        status, answer = super().__call__(path, body)
        if "[cut]" in body["messages"][-1]["content"]:
            choice = answer["choices"][0]
            choice["finish_reason"] = choice["native_finish_reason"] = "length"
            choice["message"]["content"] = self.TEXT[self.shape]
        return status, answer


class TwoProviders:
    """One endpoint, two providers behind it as OpenRouter routes: a message with ``[vllm]`` is answered by
    VllmHost (a vLLM server), any other by SglangHost (an SGLang server)."""

    def __init__(self, shapes=("vllm", "sglang")):
        self.vllm, self.sglang = CutChat(shapes[0], provider="VllmHost"), CutChat(shapes[1], provider="SglangHost")

    def __call__(self, path: str, body: dict):
        return (self.vllm if "[vllm]" in body["messages"][-1]["content"] else self.sglang)(path, body)


@pytest.fixture
def golden(tmp_path):
    golden_dir = tmp_path / "golden"
    write_dataset(golden_dir / "T9_smollm2", {"name": "T9_smollm2", "profile": "chatml", "tokenizer": SMOLLM2, "source": "test"},
                  [{"id": "g", "output_ids": [2], "finish_reason": "stop"}])
    open_gate(golden_dir / "T9_smollm2", tmp_path / "state")  # a record of a run that judged the manifest's view, sglang
    return golden_dir


def generate(tmp_path, golden, answerer, texts, *more, out="out", dataset="T9"):
    prompts = tmp_path / f"{out}.prompts.jsonl"
    prompts.write_text("".join(json.dumps({"id": f"p{i}", "messages": [{"role": "user", "content": t}]}) + "\n"
                               for i, t in enumerate(texts)))
    with FaultyServer(answerer) as server:
        code = main(["generate", "--dataset", dataset, "--golden-dir", str(golden), "--state-dir", str(tmp_path / "state"),
                     "--prompts", str(prompts), "--out", str(tmp_path / out), "--base-url", server.url, "--model", "m",
                     "--no-progress", "--concurrency", "2", *more])
    return code, server.requests


def records(folder: Path) -> dict[str, dict]:
    return {r["id"]: r for r in map(json.loads, (folder / "generations.jsonl").read_text().splitlines())}


TEXTS = ["plain [vllm]", "[cut] [vllm]", "plain", "[cut]"]


def test_each_record_carries_its_providers_view_and_the_views_that_reproduce_its_text(tmp_path, golden, capsys, monkeypatch):
    monkeypatch.setenv("OPENROUTER_API_KEY", KEY)
    code, sent = generate(tmp_path, golden, TwoProviders(), TEXTS, "--return-token-ids", "--view-for", "VllmHost=vllm")
    err = capsys.readouterr().err
    rows = records(tmp_path / "out")
    assert {k: (r["provider"], r["view"]) for k, r in rows.items()} == {
        "p0": ("VllmHost", "vllm"), "p1": ("VllmHost", "vllm"), "p2": ("SglangHost", "sglang"), "p3": ("SglangHost", "sglang")}
    reproduce = {k: {v: r["views_reproduce"][v] for v in ("sglang", "vllm")} for k, r in rows.items()}
    assert reproduce == {"p0": {"sglang": True, "vllm": True}, "p1": {"sglang": False, "vllm": True},
                         "p2": {"sglang": True, "vllm": True}, "p3": {"sglang": True, "vllm": False}}
    assert set(rows["p0"]["views_reproduce"]) == {"sglang", "sglang-legacy", "vllm", "vllm-0.32"}  # every view of chatml is tried
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    table = {p: (row["served_with"], row["compared"], {v: row["reproduced"][v] for v in ("sglang", "vllm")})
             for p, row in summary["views_by_provider"].items()}
    assert table == {"SglangHost": ({"sglang": 2}, 2, {"sglang": 2, "vllm": 1}),
                     "VllmHost": ({"vllm": 2}, 2, {"sglang": 1, "vllm": 2})}
    assert summary["view"] == "sglang" and summary["view_for"] == {"VllmHost": "vllm"}
    assert json.loads((tmp_path / "out" / "run.json").read_text())["view_for"] == {"VllmHost": "vllm"}
    assert "views, provider VllmHost (records served with: vllm 2): responses each view reproduces: sglang 1/2" in err
    assert "vllm 2/2" in err and "likely runs" not in err  # each provider's view reproduces all of its responses
    # the gate of T9 judged only sglang: said before anything is sent
    assert "view vllm (--view-for VllmHost) was not judged by the gate of T9_smollm2 (judged: sglang)" in err
    assert "add vllm to the manifest's api_views" in err
    for path in (tmp_path / "out").iterdir():
        assert KEY not in path.read_text()
    assert KEY not in err


def test_a_provider_whose_view_does_not_reproduce_its_responses_is_called_out(tmp_path, golden, capsys):
    code, _ = generate(tmp_path, golden, TwoProviders(), TEXTS, "--return-token-ids")  # no --view-for: all sglang
    err = capsys.readouterr().err
    assert {r["view"] for r in records(tmp_path / "out").values()} == {"sglang"}
    assert ("provider VllmHost: its records say view sglang, which reproduces 1 of the 2 responses with engine ids; "
            "its server likely runs vllm: generate with --view-for VllmHost=vllm into a new --out folder") in err
    assert "provider SglangHost: its records say" not in err


def test_no_view_reproducing_says_to_diagnose(tmp_path, golden, capsys):
    class Garbled(CutChat):
        def __call__(self, path, body):
            status, answer = super().__call__(path, body)
            answer["choices"][0]["message"]["content"] += " (edited by a proxy)"
            return status, answer

    generate(tmp_path, golden, Garbled("vllm", provider="Proxy"), ["plain"], "--return-token-ids")
    err = capsys.readouterr().err
    assert "provider Proxy: its records say view sglang, which reproduces 0 of the 1 responses" in err
    assert "no view of the profile does better" in err


def test_a_resumed_run_takes_the_run_configs_view_for_and_refuses_another(tmp_path, golden, capsys):
    generate(tmp_path, golden, TwoProviders(), TEXTS[:1], "--view-for", "VllmHost=vllm")
    generate(tmp_path, golden, TwoProviders(), TEXTS[:2])  # resumed without --view-for: run.json's view_for
    rows = records(tmp_path / "out")
    assert rows["p1"]["view"] == "vllm" and "views_reproduce" not in rows["p1"]  # no engine ids: nothing compared
    capsys.readouterr()
    code, sent = generate(tmp_path, golden, TwoProviders(), TEXTS, "--view-for", "VllmHost=sglang")
    err = capsys.readouterr().err
    assert code == 2 and sent == []
    assert "view_for: {'VllmHost': 'vllm'} now {'VllmHost': 'sglang'}" in err and "use another --out folder" in err


def test_a_folder_written_before_view_for_resumes_with_the_default_view(tmp_path, golden):
    generate(tmp_path, golden, TwoProviders(), TEXTS[:1])
    run = tmp_path / "out" / "run.json"
    old = json.loads(run.read_text())
    del old["view_for"], old["view"]
    run.write_text(json.dumps(old))
    code, sent = generate(tmp_path, golden, TwoProviders(), TEXTS[:2])
    assert len(sent) == 1 and records(tmp_path / "out")["p1"]["view"] == "sglang"


@pytest.mark.parametrize("value, message", [
    ("VllmHost", "--view-for 'VllmHost' (occurrence 1): expected PROVIDER=VIEW"),
    ("=vllm", "--view-for '=vllm' (occurrence 1): expected PROVIDER=VIEW"),
    ("VllmHost=", "expected PROVIDER=VIEW"),
    ("VllmHost=vllm-spaces", "--view-for 'VllmHost=vllm-spaces' (occurrence 1): unknown view 'vllm-spaces'; "
                             "profile chatml's views: sglang, sglang-legacy, vllm"),
])
def test_bad_view_for_is_a_usage_error_naming_the_value_before_anything_is_sent(tmp_path, golden, capsys, value, message):
    code, sent = generate(tmp_path, golden, TwoProviders(), TEXTS, "--view-for", value)
    err = capsys.readouterr().err
    assert code == 2 and sent == [] and not (tmp_path / "out").exists()
    assert message in err and "Traceback" not in err


def test_two_views_for_one_provider_are_refused(tmp_path, golden, capsys):
    code, sent = generate(tmp_path, golden, TwoProviders(), TEXTS, "--view-for", "A=vllm", "--view-for", "A=sglang")
    assert code == 2 and sent == []
    assert "--view-for 'A=sglang' (occurrence 2): provider 'A' is already given view 'vllm'" in capsys.readouterr().err


def test_a_view_the_profile_lacks_names_the_profiles_views(tmp_path, capsys):
    golden = tmp_path / "golden"
    write_dataset(golden / "Q1_qwen3", {"name": "Q1_qwen3", "profile": "qwen3", "tokenizer": "qwen3", "source": "test"},
                  [{"id": "g", "output_ids": [151645], "finish_reason": "stop"}])
    open_gate(golden / "Q1_qwen3", tmp_path / "state")
    code, sent = generate(tmp_path, golden, TwoProviders(), TEXTS, "--view-for", "X=sglang-legacy", dataset="Q1")
    err = capsys.readouterr().err
    assert code == 2 and sent == []
    assert "--view-for 'X=sglang-legacy' (occurrence 1): profile qwen3 has no view 'sglang-legacy'; its views: sglang, vllm" in err


def test_a_bad_view_for_in_run_json_names_the_file_line_and_field(tmp_path, golden, capsys):
    generate(tmp_path, golden, TwoProviders(), TEXTS[:1], "--view-for", "VllmHost=vllm")
    run = tmp_path / "out" / "run.json"
    run.write_text(run.read_text().replace('"VllmHost": "vllm"', '"VllmHost": "vlm"'))
    line = next(i for i, text in enumerate(run.read_text().splitlines(), 1) if '"VllmHost"' in text)
    capsys.readouterr()
    code, sent = generate(tmp_path, golden, TwoProviders(), TEXTS)
    err = capsys.readouterr().err
    assert code == 2 and sent == []
    assert f"{run}:{line}: field 'view_for.VllmHost': unknown view 'vlm'; profile chatml's views" in err


def test_a_view_for_naming_no_provider_seen_is_said(tmp_path, golden, capsys):
    generate(tmp_path, golden, TwoProviders(), TEXTS[:1], "--view-for", "VLLMhost=vllm")
    err = capsys.readouterr().err
    assert "--view-for VLLMhost=vllm: no record names provider 'VLLMhost' (providers seen: VllmHost)" in err


def test_star_is_every_provider_not_named_and_unnamed_responses(tmp_path, golden):
    generate(tmp_path, golden, EngineIdsChat("vllm", provider=None), ["plain"], "--view-for", "*=vllm", "--view-for", "Other=sglang")
    assert records(tmp_path / "out")["p0"]["view"] == "vllm"


# -- build pins each record's view; the gated stages refuse a view the gate did not judge ------------------
def built(tmp_path, golden, *more) -> Path:
    """VllmHost (--view-for vllm) and SglangHost (the manifest's sglang) records, reconstructed from text, built."""
    generate(tmp_path, golden, TwoProviders(("none", "none")), ["plain [vllm]", "plain", "plain again"], "--view-for", "VllmHost=vllm", *more)
    assert main(["build", "--in", str(tmp_path / "out"), "--out", str(tmp_path / "train"), "--no-progress"]) == 0
    return tmp_path / "train"


def stage_args(stage: str, tmp_path: Path, golden: Path, data: Path) -> tuple[list[str], Path]:
    marker = tmp_path / "ran"
    command = f"{sys.executable} -c \"import pathlib; pathlib.Path(r'{marker}').write_text('ran')\" {{data}}"
    return [stage, "--dataset", "T9", "--golden-dir", str(golden), "--state-dir", str(tmp_path / "state"), "--data", str(data),
            "--out", str(tmp_path / f"{stage}-out"), "--command", command], marker


def check_views(data: Path, judged: set[str]) -> str:
    """The gated stages' check of a build folder, for a gate that judged ``judged`` (T9's manifest view: sglang)."""
    from pipeline.core.tokenizer import load_tokenizer
    from pipeline.stages.built_data import check_built_with

    return check_built_with(data, load_tokenizer(SMOLLM2), "T9_smollm2", frozenset(judged), "sglang", "pytest --tokfidelity-dataset=T9_smollm2")


def test_build_carries_each_records_view_and_pins_the_counts(tmp_path, golden, capsys):
    data = built(tmp_path, golden)
    rows = {r["id"]: r for r in map(json.loads, (data / "train.jsonl").read_text().splitlines())}
    assert {k: (r["source"], r["view"]) for k, r in rows.items()} == {
        "p0": ("reconstruction", "vllm"), "p1": ("reconstruction", "sglang"), "p2": ("reconstruction", "sglang")}
    meta = json.loads((data / "export.json").read_text())
    assert meta["views"] == {"rebuilt": {"sglang": 2, "vllm": 1}, "engine": {}}
    assert "views: records rebuilt from text through sglang 2, vllm 1; with the engine's own ids, served through none" in capsys.readouterr().err


def test_build_counts_engine_ids_apart(tmp_path, golden):
    generate(tmp_path, golden, TwoProviders(), ["plain [vllm]", "plain"], "--view-for", "VllmHost=vllm", "--return-token-ids")
    assert main(["build", "--in", str(tmp_path / "out"), "--out", str(tmp_path / "train"), "--no-progress"]) == 0
    assert json.loads((tmp_path / "train" / "export.json").read_text())["views"] == {"rebuilt": {}, "engine": {"sglang": 1, "vllm": 1}}


@pytest.mark.parametrize("stage", ["train", "hidden-states"])
def test_gated_stages_refuse_records_rebuilt_through_a_view_the_gate_did_not_judge(tmp_path, golden, capfd, stage):
    data = built(tmp_path, golden)
    capfd.readouterr()
    args, marker = stage_args(stage, tmp_path, golden, data)
    code = main(args)
    err = capfd.readouterr().err
    assert code == 2 and not marker.exists() and not (tmp_path / f"{stage}-out").exists()
    assert (f"{data / 'export.json'}: records rebuilt from the text of a view the gate of T9_smollm2 did not judge "
            "(1 through view vllm; judged: sglang). Judge the dataset under vllm: add vllm to the manifest's api_views "
            "and run `pytest --tokfidelity-dataset=T9_smollm2") in err
    assert "verified" in check_views(data, {"sglang", "vllm"})  # a gate that judged both views takes the same data


def test_engine_ids_through_an_unjudged_view_are_not_refused(tmp_path, golden, capfd):
    generate(tmp_path, golden, TwoProviders(), ["plain [vllm]"], "--view-for", "VllmHost=vllm", "--return-token-ids")
    assert main(["build", "--in", str(tmp_path / "out"), "--out", str(tmp_path / "train"), "--no-progress"]) == 0
    args, marker = stage_args("train", tmp_path, golden, tmp_path / "train")
    assert main(args) == 0 and marker.exists(), capfd.readouterr().err  # the engine's own ids: no view between


def test_data_from_before_views_were_recorded_is_taken_as_the_manifests_view(tmp_path, golden, capfd):
    """A build from before export.json counted views (and generate records without a view) are taken as rebuilt
    through the manifest's view: the one view a gate judged then, and the one generate assumed."""
    data = built(tmp_path, golden)
    meta = json.loads((data / "export.json").read_text())
    del meta["views"]
    meta[SEAL_FIELD] = export_seal(meta)  # sealed as the build that wrote it would have
    (data / "export.json").write_text(json.dumps(meta))
    capfd.readouterr()
    args, marker = stage_args("train", tmp_path, golden, data)
    assert main(args) == 0 and marker.exists()
    assert "3 records record no view (generated or built before views were recorded): taken as rebuilt through the manifest's view sglang" in capfd.readouterr().err
    # a gate that did not judge the manifest's view: refused, saying what was assumed
    with pytest.raises(ValueError, match=r"\(3 through view sglang; judged: vllm\); 3 records record no view"):
        check_views(data, {"vllm"})


def test_a_damaged_views_field_is_named(tmp_path, golden, capsys):
    data = built(tmp_path, golden)
    meta = json.loads((data / "export.json").read_text())
    meta["views"] = {"rebuilt": ["vllm"]}
    (data / "export.json").write_text(json.dumps({**meta, SEAL_FIELD: export_seal(meta)}))
    capsys.readouterr()
    args, marker = stage_args("train", tmp_path, golden, data)
    assert main(args) == 2 and not marker.exists()
    assert "export.json: field 'views.rebuilt': expected an object" in capsys.readouterr().err


def test_generate_records_without_a_view_are_built_as_not_recorded_and_taken_as_the_manifests_view(tmp_path, golden, capfd):
    generate(tmp_path, golden, TwoProviders(("none", "none")), ["plain [vllm]", "plain"])
    path = tmp_path / "out" / "generations.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    path.write_text("".join(json.dumps({k: v for k, v in r.items() if k != "view"}) + "\n" for r in rows))  # written before
    assert main(["build", "--in", str(tmp_path / "out"), "--out", str(tmp_path / "train"), "--no-progress"]) == 0
    assert json.loads((tmp_path / "train" / "export.json").read_text())["views"]["rebuilt"] == {"(not recorded)": 2}
    capfd.readouterr()
    args, marker = stage_args("hidden-states", tmp_path, golden, tmp_path / "train")
    assert main(args) == 0 and marker.exists()
    assert "2 records record no view" in capfd.readouterr().err
