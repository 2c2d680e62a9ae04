"""`tokfidelity render`: conversations in, prompt ids out, one JSON object a line, bad lines named."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from pipeline.core.prompt_renderers import render_prompt
from tokenizer_roots import SHARED  # TOKFIDELITY_TOKENIZERS, else ../shared/tokenizers

ROOT = Path(__file__).resolve().parent.parent
TOOLS = [{"type": "function", "function": {"name": "get_weather", "description": "Weather.", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer", "default": 1}}, "required": ["city"]}}}]


def _tokfidelity(*args: str, stdin: bytes | str = b"") -> subprocess.CompletedProcess:
    script = Path(sys.executable).parent / "tokfidelity"
    command = [str(script)] if script.exists() else [sys.executable, "-m", "pipeline.cli"]
    data = stdin.encode() if isinstance(stdin, str) else stdin
    return subprocess.run([*command, *args], input=data, capture_output=True, cwd=ROOT, env=os.environ.copy(), timeout=180)


def test_lines_in_order_with_bad_lines_named(kimi, profile):
    good = {"messages": [{"role": "user", "content": "Weather in Zürich?"}], "tools": TOOLS}
    plain = {"messages": [{"role": "system", "content": "Be terse."}, {"role": "user", "content": "2+2?"}], "tools": None}
    lines = [
        json.dumps(good),
        "{not json",
        json.dumps({"tools": TOOLS}),
        "",
        json.dumps({"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}]}),
        json.dumps(plain),
        json.dumps([1, 2]),
        json.dumps({"messages": [{"role": "user", "content": "hi"}], "chat_template_kwargs": {"thinking": False}}),
    ]
    result = _tokfidelity("render", "--profile", "kimi-k2.5", "--tokenizer", "kimi-k2.5", stdin="\n".join(lines) + "\n")
    assert result.returncode == 1, result.stderr
    out = [json.loads(line) for line in result.stdout.decode().splitlines()]
    assert len(out) == 7  # one per non-blank input line, in order
    ids = render_prompt(good["messages"], TOOLS, profile, kimi)
    assert out[0] == {"prompt_ids": ids}
    assert "# Tools" in kimi.decode(ids)  # TypeScript declarations, as Kimi K2.5's tokenizer writes them
    assert out[1]["line"] == 2 and "not valid JSON" in out[1]["error"]
    assert out[2] == {"error": "field 'messages' missing", "line": 3}
    assert out[3]["line"] == 5 and "messages[0].content[0]" in out[3]["error"]
    assert out[4] == {"prompt_ids": render_prompt(plain["messages"], None, profile, kimi)}
    assert out[5]["line"] == 7 and "JSON object" in out[5]["error"]
    assert kimi.decode(out[6]["prompt_ids"]).endswith("<think></think>")
    stderr = result.stderr.decode()
    assert "<stdin>:2:" in stderr and "<stdin>:5:" in stderr and "Traceback" not in stderr


def test_a_file_argument_and_all_good_exits_zero(tmp_path, kimi, profile):
    conversation = {"messages": [{"role": "user", "content": "hi"}]}
    path = tmp_path / "conversations.jsonl"
    path.write_text(json.dumps(conversation) + "\n" + json.dumps({**conversation, "tools": TOOLS}) + "\n", encoding="utf-8")
    result = _tokfidelity("render", "--profile", "kimi-k2.5", "--tokenizer", "kimi-k2.5", str(path))
    assert result.returncode == 0, result.stderr
    out = [json.loads(line) for line in result.stdout.decode().splitlines()]
    assert out == [{"prompt_ids": render_prompt(conversation["messages"], None, profile, kimi)},
                   {"prompt_ids": render_prompt(conversation["messages"], TOOLS, profile, kimi)}]


def test_bytes_that_are_not_utf8_are_named():
    data = b'{"messages": [{"role": "user", "content": "caf\xe9"}]}\n{"messages": [{"role": "user", "content": "b"}]}\n'
    result = _tokfidelity("render", "--profile", "kimi-k2.5", "--tokenizer", "kimi-k2.5", stdin=data)
    assert result.returncode == 1
    out = [json.loads(line) for line in result.stdout.decode().splitlines()]
    assert out[0] == {"error": "not UTF-8: byte 0xe9 at column 47", "line": 1} and "prompt_ids" in out[1]


def test_usage_errors(tmp_path):
    bad = _tokfidelity("render", "--profile", "nope", "--tokenizer", "kimi-k2.5")
    assert bad.returncode == 2 and "unknown profile 'nope'" in bad.stderr.decode()
    missing = _tokfidelity("render", "--profile", "kimi-k2.5", "--tokenizer", "kimi-k2.5", str(tmp_path / "absent.jsonl"))
    assert missing.returncode == 2 and "cannot read" in missing.stderr.decode()
    folder = tmp_path / "kimi-no-template"
    folder.mkdir()
    for name in ("tiktoken.model", "tokenizer_config.json"):
        shutil.copy(SHARED / "kimi-k2.5" / name, folder / name)
    no_template = _tokfidelity("render", "--profile", "kimi-k2.5", "--tokenizer", str(folder), stdin="{}\n")
    assert no_template.returncode == 2 and "chat_template.jinja" in no_template.stderr.decode()
    assert no_template.stdout == b""


def _prompted(dataset: str) -> list[dict]:
    with open(ROOT / "golden" / dataset / "samples.jsonl", encoding="utf-8") as f:
        return [s for s in map(json.loads, f) if s.get("prompt_ids") and s.get("messages")]


def _conversations(samples: list[dict]) -> str:
    return "".join(json.dumps({"messages": s["messages"], "tools": s.get("tools"),
                               "chat_template_kwargs": s.get("chat_template_kwargs")}, ensure_ascii=False) + "\n" for s in samples)


def _plain_env() -> dict[str, str]:
    """A user's shell: the tokenizers' root, nothing else of the tests' set-up."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOKFIDELITY_")}
    env["TOKFIDELITY_TOKENIZERS"] = str(SHARED)
    return env


def test_deepseek_v32_renders_with_its_encoder():
    """The command renders through the profile's own prompt renderer: DeepSeek-V3.2's encoder, which has no template."""
    samples = _prompted("D32_glaive")
    assert len(samples) >= 20
    result = _tokfidelity("render", "--profile", "deepseek-v3.2", "--tokenizer", "deepseek-ai/DeepSeek-V3.1", stdin=_conversations(samples))
    assert result.returncode == 0, result.stderr
    out = [json.loads(line) for line in result.stdout.decode().splitlines()]
    assert out == [{"prompt_ids": s["prompt_ids"]} for s in samples]


def test_a_dataset_renders_with_the_template_its_manifest_names_in_a_plain_shell():
    samples = _prompted("D31_glaive")
    assert len(samples) >= 20
    command = [sys.executable, "-m", "pipeline.cli", "render", "--dataset", str(ROOT / "golden" / "D31_glaive")]
    result = subprocess.run(command, input=_conversations(samples).encode(), capture_output=True, cwd=ROOT, env=_plain_env(), timeout=180)
    assert result.returncode == 0, result.stderr
    assert [json.loads(line) for line in result.stdout.decode().splitlines()] == [{"prompt_ids": s["prompt_ids"]} for s in samples]
    # without the manifest, the tokenizer folder has no template: said before any line, with what to do
    bare = subprocess.run([sys.executable, "-m", "pipeline.cli", "render", "--profile", "deepseek-v3.1", "--tokenizer",
                           "deepseek-ai/DeepSeek-V3.1"], input=b"", capture_output=True, cwd=ROOT, env=_plain_env(), timeout=180)
    assert bare.returncode == 2 and "manifest (chat_template)" in bare.stderr.decode(), bare.stderr


def test_a_changed_template_is_an_error_naming_the_manifest_and_field(tmp_path):
    folder = tmp_path / "deepseek-v3.1"
    folder.mkdir()
    (folder / "tokenizer.json").symlink_to(SHARED / "deepseek-v3.1" / "tokenizer.json")
    template = (SHARED / "deepseek-v3.1" / "chat_template.xinference.jinja").read_text(encoding="utf-8")
    (folder / "chat_template.xinference.jinja").write_text(template.replace("## Tools", "## Functions"), encoding="utf-8")
    dataset = tmp_path / "D31_copy"
    dataset.mkdir()
    manifest = json.loads((ROOT / "golden" / "D31_glaive" / "manifest.json").read_text(encoding="utf-8"))
    (dataset / "manifest.json").write_text(json.dumps({**manifest, "tokenizer": str(folder)}), encoding="utf-8")
    (dataset / "samples.jsonl").write_text("", encoding="utf-8")
    result = _tokfidelity("render", "--dataset", str(dataset), stdin="")
    err = result.stderr.decode()
    assert result.returncode == 2, err
    assert f"{dataset / 'manifest.json'}: field 'chat_template.sha256'" in err and str(folder / "chat_template.xinference.jinja") in err, err

    from pipeline.core.errors import TokfidelityError
    from pipeline.core.golden import load_manifest
    from pipeline.core.profiles import bind_profile
    from pipeline.core.prompt_renderers import use_manifest_template
    from pipeline.core.tokenizer import load_tokenizer

    tok = load_tokenizer(folder)
    try:
        use_manifest_template(load_manifest(dataset), bind_profile("deepseek-v3.1", tok), tok)
    except TokfidelityError as e:
        assert (e.path, e.field) == (dataset / "manifest.json", "chat_template.sha256")
        assert "chat_template.xinference.jinja" in e.message
    else:
        raise AssertionError("a template whose sha256 differs from the manifest's was used")
