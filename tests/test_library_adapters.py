"""The private parts of other libraries we rely on, each behind one adapter, checked here against the
versions they were written for. A new release fails these tests loudly (check the adapter, then raise
its CHECKED_VERSION) instead of silently changing ids."""

from __future__ import annotations

import re
from importlib.metadata import version
from pathlib import Path

import pytest

from pipeline.core import template_adapter
from pipeline.core.tokenizer import tiktoken_adapter, tokenizers_adapter

ROOT = Path(__file__).resolve().parent.parent
ADAPTERS = {"tiktoken": tiktoken_adapter, "tokenizers": tokenizers_adapter, "transformers": template_adapter}


@pytest.mark.parametrize("library", sorted(ADAPTERS))
def test_installed_version_is_the_one_the_adapter_was_checked_against(library):
    assert version(library) == ADAPTERS[library].CHECKED_VERSION, (
        f"{library} {version(library)} is installed; {ADAPTERS[library].__name__} was checked against "
        f"{ADAPTERS[library].CHECKED_VERSION}: re-check what it uses, then update CHECKED_VERSION"
    )


def test_tiktoken_core_bpe_answers_as_the_encoding_does(kimi):
    import tiktoken

    enc = tiktoken.Encoding(  # a tiny byte-level encoding
        name="t", pat_str=r"\S+|\s+", mergeable_ranks={bytes([b]): b for b in range(256)}, special_tokens={"<s>": 256})
    core = tiktoken_adapter.core_bpe(enc)
    for text in ["hello world", "<s> stays text", "é 🙂"]:
        assert core.encode_ordinary(text) == enc.encode_ordinary(text)
    assert kimi.encode_ordinary("<|im_end|>") == [27, 91, 348, 11129, 91, 29]


def test_tiktoken_encoding_params_borrow_the_pattern_and_restore_the_module():
    from tiktoken_ext import openai_public

    before = openai_public.load_tiktoken_bpe
    ranks = {b"a": 0}
    params = tiktoken_adapter.encoding_params(openai_public.o200k_base, ranks)
    assert params["mergeable_ranks"] is ranks
    assert params["special_tokens"]["<|endoftext|>"] == 199999 and "\\p{L}" in params["pat_str"]
    assert openai_public.load_tiktoken_bpe is before


def test_tokenizers_byte_level_bpe_is_a_plain_tokenizer(tmp_path):
    import json

    from tokenizers import ByteLevelBPETokenizer, Tokenizer

    from pipeline.core.tokenizer import resolve_tokenizer_dir

    folder, _ = resolve_tokenizer_dir("qwen3")  # vocab.json + merges.txt of the shared Qwen3 tokenizer
    tok = tokenizers_adapter.byte_level_bpe(folder / "vocab.json", folder / "merges.txt")
    assert isinstance(tok, Tokenizer)
    reference = ByteLevelBPETokenizer(str(folder / "vocab.json"), str(folder / "merges.txt"))
    for text in ["Hello world", "  two  spaces\n\nand 12345", "中文 é 🙂"]:
        assert tok.encode(text).ids == reference.encode(text).ids
    assert json.loads(tok.to_str())["model"]["type"] == "BPE"


def test_no_private_library_reach_outside_the_adapters():
    reaches = re.compile(r"\._core_bpe\b|\._tokenizer\b(?!_)|unittest\.mock|mock\.patch"
                         r"|_compile_jinja_template|_plain_template_data|_alias_reasoning_fields")
    adapters = {Path(m.__file__).resolve() for m in ADAPTERS.values()}
    found = []
    for path in sorted((ROOT / "pipeline").rglob("*.py")):
        if path.resolve() in adapters:
            continue
        for n, line in enumerate(path.read_text().splitlines(), 1):
            if reaches.search(line.replace("self._tokenizer", "")):
                found.append(f"{path.relative_to(ROOT)}:{n}: {line.strip()}")
    assert found == []


def test_transformers_template_steps_are_the_ones_render_jinja_template_takes():
    """The steps template_adapter repeats are render_jinja_template's: its source calls each of them."""
    import inspect

    from transformers.utils import chat_template_utils as utils

    source = inspect.getsource(utils.render_jinja_template)
    for step in ("_compile_jinja_template(chat_template)", "_plain_template_data(tool_schemas)", "_plain_template_data(kwargs)",
                 "_plain_template_data(chat)", "_alias_reasoning_fields(chat)", "compiled_template.render("):
        assert step in source, step
    assert template_adapter.checked()


def test_views_never_write_onto_a_frozen_profile():
    assert "object.__setattr__" not in (ROOT / "pipeline" / "core" / "views.py").read_text()


# -- the plugin's reaches into pytest, xdist and syrupy (issue 22) ---------------------------------------
def test_pytest_and_syrupy_are_the_versions_the_plugin_adapters_were_checked_against():
    from pytest_tokfidelity import pytest_adapter, snapshots

    for library, checked, adapter in (("pytest", pytest_adapter.CHECKED_VERSION, "pytest_tokfidelity/pytest_adapter.py"),
                                      ("syrupy", snapshots.CHECKED_SYRUPY_VERSION, "pytest_tokfidelity/snapshots.py")):
        assert version(library) == checked, (
            f"{library} {version(library)} is installed; {adapter} was checked against {checked}: "
            "re-check what it uses, then update its checked version"
        )


def test_no_private_reach_into_pytest_xdist_or_syrupy_outside_the_plugin_adapters():
    reaches = {
        r"\.plugin_name\b|get_hookimpls\(|TestReport\(|\.location\s*=(?!=)|_get_teardown_reports": "pytest_adapter.py",
        r"\._syrupy\b": "snapshots.py",
        r"\.torun\b|nextitem_index|WorkerInteractor": "xdist_adapter.py",
    }
    found = []
    for path in sorted((ROOT / "pytest_tokfidelity").rglob("*.py")):
        for n, line in enumerate(path.read_text().splitlines(), 1):
            for pattern, home in reaches.items():
                if re.search(pattern, line) and path.name != home:
                    found.append(f"{path.relative_to(ROOT)}:{n}: {line.strip()}")
    assert found == []


def test_another_pytest_version_takes_pytests_own_path_with_a_warning(pytester, monkeypatch):
    import importlib

    from test_plugin import exact_samples, make_dataset, run

    adapter = importlib.import_module("pytest_tokfidelity.pytest_adapter")  # as the run will import it
    make_dataset(pytester.path, "A1_exact", exact_samples(4))
    probe = (f"def pytest_sessionfinish(session):\n    s = session.config.pluginmanager.get_plugin('tokfidelity-session')\n"
             f"    open({str(pytester.path / 'reported.txt')!r}, 'w').write(str(s.plain_passes.reported))\n")
    pytester.syspathinsert()
    pytester.makepyfile(reported_probe=probe)
    run(pytester, "-p", "reported_probe", "--tokfidelity-dataset=A1").assert_outcomes(passed=4 + 4)
    assert int((pytester.path / "reported.txt").read_text()) > 0  # the checked version: the fast path
    monkeypatch.setattr(adapter, "CHECKED_VERSION", "0.0.0")
    result = run(pytester, "-p", "reported_probe", "--tokfidelity-dataset=A1")
    result.assert_outcomes(passed=4 + 4, warnings=1)
    assert "is not the version its fast path was checked with (0.0.0)" in result.stdout.str()
    assert int((pytester.path / "reported.txt").read_text()) == 0
