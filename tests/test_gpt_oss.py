"""gpt-oss: the o200k_harmony tokenizer, openai-harmony loaded offline, the profile's ids, its layout
checked against openai-harmony's own rendering and parsing, and the reconstruct command."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from openai_harmony import Role

from pipeline.core.harmony import harmony_encoding
from pipeline.core.layout import CONTENT, REASONING, STOP, TOOL_ARGUMENTS, TOOL_CALL_ID, split_output
from pipeline.core.profiles import ProfileError, bind_profile
from pipeline.core.reconstruct import reconstruct_output_ids
from pipeline.core.tokenizer import load_tokenizer
from pipeline.cases.gpt_oss_outputs import ARGUMENTS, CJK, CODE, EMOJI, HarmonyOutputs

ROOT = Path(__file__).resolve().parent.parent
from tokenizer_roots import SHARED  # noqa: E402 - TOKFIDELITY_TOKENIZERS, else ../shared/tokenizers


@pytest.fixture(scope="module")
def oss():
    tokenizer = load_tokenizer("o200k_harmony")
    return tokenizer, bind_profile("gpt-oss", tokenizer)


@pytest.fixture(scope="module")
def harmony(oss):
    return harmony_encoding(oss[0])


def test_o200k_harmony_by_name_and_by_path(oss):
    tokenizer, _ = oss
    assert load_tokenizer(SHARED / "o200k" / "o200k_harmony") is tokenizer
    assert tokenizer.name == "o200k_harmony" and tokenizer.files == (SHARED / "o200k" / "o200k_base.tiktoken",)
    assert tokenizer.encode("<|channel|>analysis<|message|>hi<|end|>") == [200005, 35644, 200008, 3686, 200007]
    base = load_tokenizer("o200k")
    text = "naïve <|end|> café 中文 👍"
    assert tokenizer.encode_ordinary(text) == base.encode_ordinary(text)  # same ranks, more specials
    assert tokenizer.fingerprint != base.fingerprint


def test_special_tokens_are_openai_harmonys(oss, harmony):
    tokenizer, _ = oss
    # openai-harmony 0.0.8 reserves one id more (201088), past gpt-oss's 201088-row embedding (ids 0..201087)
    assert set(harmony.special_tokens_set) - set(tokenizer.special_tokens) == {"<|reserved_201088|>"}
    assert set(tokenizer.special_tokens) <= set(harmony.special_tokens_set) and tokenizer.n_vocab == 201088
    for text, token in tokenizer.special_tokens.items():
        assert harmony.encode(text, allowed_special="all") == tokenizer.encode(text) == [token], text
    assert tokenizer.encode("<|endofprompt|>") == harmony.encode("<|endofprompt|>", allowed_special="all")


def test_o200k_base_does_not_bind_gpt_oss():
    with pytest.raises(ProfileError, match="<|start|>"):
        bind_profile("gpt-oss", load_tokenizer("o200k"))


OFFLINE_CHECK = """
import json, os, sys
from pipeline.core.tokenizer import load_tokenizer
from pipeline.core.harmony import harmony_encoding
from openai_harmony import HarmonyEncodingName, load_harmony_encoding
enc = harmony_encoding(load_tokenizer(sys.argv[1]))
direct = "loaded"
try:  # the same load without tokfidelity pointing it at the tokenizer's folder
    load_harmony_encoding(HarmonyEncodingName.HARMONY_GPT_OSS)
except Exception as e:
    direct = type(e).__name__
print(json.dumps({"ids": enc.encode("hello <|end|>", allowed_special="all"), "direct": direct,
                  "env_left": os.environ.get("TIKTOKEN_ENCODINGS_BASE")}))
"""


def _no_network_prefix() -> list[str]:
    """``unshare -rn`` (a network namespace with no interfaces) where the kernel allows it."""
    unshare = shutil.which("unshare")
    if unshare and subprocess.run([unshare, "-rn", "true"], capture_output=True).returncode == 0:
        return [unshare, "-rn"]
    return []


def test_openai_harmony_loads_its_vocabulary_offline_from_the_tokenizer_folder(tmp_path):
    """No network, no download cache, TIKTOKEN_ENCODINGS_BASE unset: tokfidelity points openai-harmony at
    the tokenizer's own folder for the load, and leaves the variable as it was."""
    env = {k: v for k, v in os.environ.items() if k != "TIKTOKEN_ENCODINGS_BASE"}
    dead = "http://127.0.0.1:9"
    env.update(TIKTOKEN_RS_CACHE_DIR=str(tmp_path / "cache"), HTTPS_PROXY=dead, HTTP_PROXY=dead, ALL_PROXY=dead,
               https_proxy=dead, http_proxy=dead, PYTHONPATH=os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]))
    run = subprocess.run([*_no_network_prefix(), sys.executable, "-c", OFFLINE_CHECK, "o200k_harmony"],
                         capture_output=True, text=True, env=env, timeout=120, cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    result = json.loads(run.stdout)
    assert result["ids"] == [24912, 220, 200007]
    assert result["direct"] == "HarmonyError"  # proves the sandbox offers neither network nor a cached file
    assert result["env_left"] is None
    assert not (tmp_path / "cache").exists() or not any((tmp_path / "cache").iterdir())


def test_marker_ids_agree_with_openai_harmony(oss, harmony):
    tokenizer, profile = oss
    for role, text in profile.texts.items():
        assert harmony.encode(text, allowed_special="all") == [profile.ids[role]], role
    assert set(harmony.stop_tokens_for_assistant_actions()) == {profile.ids["stop"], profile.ids["stop.2"]}
    assert (profile.ids["stop"], profile.ids["call"], profile.ids["stop.3"]) == (200002, 200012, 199999)


TURNS = [
    ("Think.", "Answer.", []),
    (None, "Just an answer.", []),
    ("  spaced\n\n", "\n\n  spaced  ", []),
    ("Need the weather.", None, [("get_weather", '{"city":"Paris"}')]),
    ("Two.", "Let me check.", [("get_weather", '{"city": "Zürich", "days": 3}'), ("read_file", ARGUMENTS[2])]),
    (CODE, CJK + EMOJI, []),
    ("Nested.", None, [("create_event", '{"title":"Réunion 会议","attendees":["a@b.c"],"reminder":{"minutes":[5,10]}}')]),
    ("Literal markers: <|end|> <|call|> <|return|>", "and <|start|>assistant in content", []),
]


@pytest.mark.parametrize("reasoning, content, calls", TURNS)
def test_layout_is_what_openai_harmony_renders_and_parses(oss, harmony, reasoning, content, calls):
    tokenizer, profile = oss
    gen = HarmonyOutputs(harmony, tokenizer, profile)
    expected = gen.turn(reasoning, content, calls)
    response = {"reasoning": reasoning, "content": content or "", "finish_reason": "tool_calls" if calls else "stop",
                "tool_calls": [{"id": f"call_{i}", "type": "function", "function": {"name": n, "arguments": a}}
                               for i, (n, a) in enumerate(calls)] or None}
    ids = reconstruct_output_ids(response, profile, tokenizer)
    assert ids == expected
    parsed = [m.to_dict() for m in harmony.parse_messages_from_completion_tokens(ids, Role.ASSISTANT)]
    want = ([("analysis", None, reasoning)] if reasoning is not None else []) + (
        [("commentary" if calls else "final", None, content)] if content else []) + [
        ("commentary", f"functions.{n}", a) for n, a in calls]
    assert [(m["channel"], m.get("recipient"), m["content"][0]["text"]) for m in parsed] == want


def test_length_cut_leaves_the_last_message_open(oss):
    tokenizer, profile = oss
    cut_in_reasoning = reconstruct_output_ids({"reasoning": "half a tho", "content": "", "finish_reason": "length"}, profile, tokenizer)
    assert tokenizer.decode(cut_in_reasoning) == "<|channel|>analysis<|message|>half a tho"
    cut_in_answer = reconstruct_output_ids({"reasoning": "r", "content": "Half", "finish_reason": "length"}, profile, tokenizer)
    assert tokenizer.decode(cut_in_answer).endswith("<|end|><|start|>assistant<|channel|>final<|message|>Half")


def test_regions(oss, harmony):
    tokenizer, profile = oss
    ids = HarmonyOutputs(harmony, tokenizer, profile).turn("why", "pre", [("get_weather", '{"a":1}')])
    layout = split_output(ids, profile)
    text = {kind: "".join(tokenizer.decode(ids[s.start : s.end]) for s in layout.spans if s.kind == kind)
            for kind in (REASONING, CONTENT, TOOL_CALL_ID, TOOL_ARGUMENTS, STOP)}
    assert text == {REASONING: "why", CONTENT: "pre", TOOL_CALL_ID: "commentary to=functions.get_weather ",
                    TOOL_ARGUMENTS: '{"a":1}', STOP: "<|call|>"}
    assert [s.end - s.start for s in layout.spans] and sum(len(s) for s in layout.spans) == len(ids)
    assert layout.tool_calls[0].complete


def test_reconstruct_command(oss, harmony):
    tokenizer, profile = oss
    lines = [
        {"id": "x1", "reasoning": "r", "content": "A.", "finish_reason": "stop"},
        {"reasoning_content": "r", "content": "", "finish_reason": "tool_calls",
         "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{}"}}]},
    ]
    script = Path(sys.executable).parent / "tokfidelity"
    command = [str(script)] if script.exists() else [sys.executable, "-m", "pipeline.cli"]
    run = subprocess.run([*command, "reconstruct", "--profile", "gpt-oss", "--tokenizer", str(SHARED / "o200k" / "o200k_harmony")],
                         input="\n".join(json.dumps(x) for x in lines) + "\n", capture_output=True, text=True, cwd=ROOT,
                         env=os.environ.copy(), timeout=120)
    assert run.returncode == 0, run.stderr
    out = [json.loads(line)["output_ids"] for line in run.stdout.splitlines()]
    gen = HarmonyOutputs(harmony, tokenizer, profile)
    assert out == [gen.turn("r", "A."), gen.turn("r", None, [("get_weather", "{}")])]


def test_gate_fingerprints_openai_harmony():
    from importlib.metadata import version

    from pipeline.core.fingerprints import library_versions

    assert library_versions()["openai-harmony"] == version("openai-harmony")


def test_audit(oss):
    from pipeline.core.audit import audit

    tokenizer, profile = oss
    report = audit(profile, tokenizer)
    assert report.ok, report.failures
    stops = {m.text: m.configured_id for m in report.markers if any(r == "stop" or r.startswith("stop.") for r in m.roles)}
    assert stops == {"<|return|>": 200002, "<|call|>": 200012, "<|endoftext|>": 199999}
    assert len(report.special_tokens) == len(tokenizer.special_tokens) and all(s.ok for s in report.special_tokens)
    assert report.first_special_id == 199998
    # look-alikes: ordinary tokens spelling marker text ('call' in '<|call|>') are named
    assert any("5236 'start' in '<|start|>'" in w for w in report.warnings)
    assert "9925 'call'" in report.render()
    # with the base encoding, harmony's markers are not one id: failures, not a crash
    base = audit("gpt-oss", load_tokenizer("o200k"))
    assert not base.ok and any("'<|channel|>'" in f and "not one id" in f for f in base.failures)


# -- o200k_harmony on a machine without TOKFIDELITY_TOKENIZERS: tokfidelity's download cache --------
class _Files:
    """A real HTTP server on 127.0.0.1 serving one folder (GET only)."""

    def __init__(self, folder: Path):
        import functools
        import threading
        from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer

        class Quiet(SimpleHTTPRequestHandler):
            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(folder)))
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/encodings"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def _resolve_in_subprocess(spec: str, env: dict) -> subprocess.CompletedProcess:
    code = ("import sys; from pipeline.core.tokenizer import load_tokenizer; from pipeline.core.profiles import "
            "bind_profile; t = load_tokenizer(sys.argv[1]); bind_profile('gpt-oss', t); print(t.files[0])")
    return subprocess.run([sys.executable, "-c", code, spec], capture_output=True, text=True, env=env, timeout=120, cwd=ROOT)


def test_o200k_harmony_downloaded_once_into_the_cache_then_offline(tmp_path):
    served = tmp_path / "served" / "encodings"
    served.mkdir(parents=True)
    shutil.copyfile(SHARED / "o200k" / "o200k_base.tiktoken", served / "o200k_base.tiktoken")
    files = _Files(tmp_path / "served")
    env = {k: v for k, v in os.environ.items() if k not in ("TOKFIDELITY_TOKENIZERS", "HF_HUB_OFFLINE")}
    env.update(TOKFIDELITY_CACHE_DIR=str(tmp_path / "cache"), TOKFIDELITY_ENCODINGS_URL=files.url,
               PYTHONPATH=os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]))
    try:
        first = _resolve_in_subprocess("o200k_harmony", env)
    finally:
        files.close()
    cached = tmp_path / "cache" / "openai-encodings" / "o200k_base.tiktoken"
    assert first.returncode == 0, first.stderr
    assert first.stdout.strip() == str(cached) and cached.read_bytes() == (served / "o200k_base.tiktoken").read_bytes()
    offline = _resolve_in_subprocess("o200k_harmony", {**env, "HF_HUB_OFFLINE": "1"})  # the server is gone
    assert offline.returncode == 0 and offline.stdout.strip() == str(cached), offline.stderr


def test_a_download_with_the_wrong_sha256_is_not_kept(tmp_path):
    served = tmp_path / "served" / "encodings"
    served.mkdir(parents=True)
    (served / "o200k_base.tiktoken").write_bytes(b"YQ== 0\n")
    files = _Files(tmp_path / "served")
    env = {k: v for k, v in os.environ.items() if k not in ("TOKFIDELITY_TOKENIZERS", "HF_HUB_OFFLINE")}
    env.update(TOKFIDELITY_CACHE_DIR=str(tmp_path / "cache"), TOKFIDELITY_ENCODINGS_URL=files.url,
               PYTHONPATH=os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]))
    try:
        run = _resolve_in_subprocess("o200k_harmony", env)
    finally:
        files.close()
    assert run.returncode != 0 and "not kept" in run.stderr and "TokenizerNotFound" in run.stderr
    assert not (tmp_path / "cache" / "openai-encodings" / "o200k_base.tiktoken").exists()
    offline = _resolve_in_subprocess("o200k_harmony", {**env, "HF_HUB_OFFLINE": "1"})
    assert offline.returncode != 0 and "HF_HUB_OFFLINE is set" in offline.stderr
