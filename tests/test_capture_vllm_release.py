"""``capture --engine vllm`` judges a capture under the view of the vLLM release the server runs, read from
the server's ``GET /version``: a 0.32.x server gets ``vllm-0.32``, a 0.33.x server ``vllm``; any other
release, or a server that does not say, stops the capture with a message naming the releases that have a
view. The gate record of such a dataset names the release its view stands for. A real HTTP server on
127.0.0.1 answering as vLLM does (``/version``, ``/v1/models``, chat completions with ``return_token_ids``)."""

from __future__ import annotations

import json

import pytest

from pipeline.cli import main
from pipeline.core.engines.view import VLLM_VERSION, view_for_release
from pipeline.core.golden import load_manifest, read_samples
from pipeline.core.profiles import get_profile_spec
from servers.engine_ids_chat import SMOLLM2, EngineIdsChat
from servers.gates import open_gate
from servers.http_server import FaultyServer


class VllmServer(FaultyServer):
    """vLLM's routes: chat completions under ``/v1`` with the ids at the root and on the choice."""

    def __init__(self, version):
        chat = EngineIdsChat("vllm")
        super().__init__(lambda path, body: chat(path.removeprefix("/v1"), body))
        self.gets.update({"/v1/models": {"object": "list", "data": [{"id": "smollm2", "root": "/models/smollm2"}]}})
        if version is not None:
            self.gets["/version"] = {"version": version}


def _capture(url, tmp_path, dataset="cap"):
    prompts = tmp_path / "prompts.jsonl"
    prompts.write_text(json.dumps({"id": "p1", "messages": [{"role": "user", "content": "Hi"}]}) + "\n")
    return main(["capture", "--engine", "vllm", "--url", url, "--dataset", dataset, "--prompts", str(prompts),
                 "--out", str(tmp_path / "golden"), "--profile", "chatml", "--tokenizer", SMOLLM2])


@pytest.mark.parametrize(("version", "view"), [("0.32.0", "vllm-0.32"), ("0.32.4", "vllm-0.32"),
                                               (VLLM_VERSION, "vllm"), ("0.33.2", "vllm")])
def test_capture_takes_the_view_of_the_servers_release(tmp_path, capsys, version, view):
    with VllmServer(version) as server:
        assert _capture(server.url, tmp_path) == 0, capsys.readouterr().err
    manifest = load_manifest(tmp_path / "golden" / "cap")
    assert manifest.views == (view,)
    assert manifest.raw["engine"]["vllm_version"] == version
    assert [s.id for s in read_samples(tmp_path / "golden" / "cap")] == ["p1"]
    record = json.loads(open_gate(tmp_path / "golden" / "cap", tmp_path / "state").read_text())
    release = "0.32.0" if view == "vllm-0.32" else VLLM_VERSION  # the release the view stands for
    assert record["views"] == [view] and record["view_releases"] == {view: f"vllm {release}"}


@pytest.mark.parametrize("version", ["0.31.2", "0.34.0", "1.0.0", "dev", None])
def test_a_release_without_a_view_stops_the_capture(tmp_path, capsys, version):
    with VllmServer(version) as server:
        code = _capture(server.url, tmp_path)
    err = capsys.readouterr().err
    assert code == 1, err
    said = f"runs vLLM {version}" if version else "did not say its vLLM release"
    assert said in err and "0.33.x (vllm), 0.32.x (vllm-0.32)" in err, err
    assert not (tmp_path / "golden" / "cap").exists()  # nothing captured, nothing written
    assert not [p for p, _ in server.requests if p.endswith("/chat/completions")]


def test_view_for_release_matches_the_release_line():
    views = get_profile_spec("kimi-k2.5").views
    assert view_for_release(views, "vllm", "0.32.0") == "vllm-0.32"
    assert view_for_release(views, "vllm", VLLM_VERSION) == "vllm"
    assert view_for_release(views, "sglang", "0.5.23") == "sglang"
    assert view_for_release(views, "vllm", "0.5.23") is None and view_for_release(views, "vllm", "0") is None
    assert view_for_release(views, "vllm", None) is None
