"""The private parts of other libraries we rely on, each behind one adapter that states the releases it
was checked against (``CHECKED``) and a self-test. Here: every self-test holds on the installed
release, the lock installs releases inside every range, and a release outside a range is said in one
line and decided by the self-test, never by the version alone."""

from __future__ import annotations

import re
from importlib.metadata import version
from pathlib import Path

import pytest

from pipeline.core import checked_versions, speculators_adapter, template_adapter
from pipeline.core.tokenizer import tiktoken_adapter, tokenizers_adapter
from pytest_tokfidelity import pytest_adapter, snapshots, xdist_adapter

ROOT = Path(__file__).resolve().parent.parent
ADAPTERS = {"tiktoken": tiktoken_adapter, "tokenizers": tokenizers_adapter, "transformers": template_adapter}
EVERY_ADAPTER = [pytest_adapter, snapshots, xdist_adapter, template_adapter, tiktoken_adapter, tokenizers_adapter,
                 speculators_adapter]


@pytest.mark.parametrize("adapter", EVERY_ADAPTER, ids=lambda m: m.CHECKED.library)
def test_each_adapter_self_test_holds_on_the_installed_release(adapter):
    adapter.self_test()
    assert adapter.CHECKED.library == adapter.CHECKED.library.lower() and version(adapter.CHECKED.library)
    assert (ROOT / adapter.CHECKED.adapter).is_file()


def _locked(lock: Path) -> dict[str, str]:
    pins = re.findall(r"^([A-Za-z0-9_.-]+)==([^ \\]+)", lock.read_text(), re.M)
    return {name.lower().replace("_", "-"): pinned for name, pinned in pins}


@pytest.mark.parametrize("lock", ["core.txt", "test.txt"])
def test_the_lock_installs_releases_inside_every_checked_range(lock):
    pins = _locked(ROOT / "requirements" / lock)
    outside = [f"{a.CHECKED.library} {pins[a.CHECKED.library]} (checked: {a.CHECKED.span()})"
               for a in EVERY_ADAPTER if a.CHECKED.library in pins and not a.CHECKED.covers(pins[a.CHECKED.library])]
    assert outside == [], "re-check these adapters, widen their CHECKED range, or move the lock back"
    assert "torch" not in pins or lock == "test.txt", "the main job's environment has no torch"


def test_outside_the_range_the_self_test_decides_and_says_so_in_one_line(monkeypatch):
    monkeypatch.setattr(checked_versions, "_notes", {})
    rng = checked_versions.CheckedRange("somelib", "pkg/adapter.py", "1.2.0", "1.4.1")
    assert rng.covers("1.2.0") and rng.covers("1.4.1") and rng.covers("1.3.0+cpu") and not rng.covers("1.4.2")
    assert checked_versions.usable(rng, lambda: 1 / 0, installed="1.3.0")  # inside: no self-test, no note
    assert checked_versions.notes() == []
    assert checked_versions.usable(rng, lambda: None, installed="2.0.0")
    assert checked_versions.notes() == ["tokfidelity: somelib 2.0.0 is outside the releases pkg/adapter.py was checked "
                                        "against (1.2.0 to 1.4.1); its self-test passed, so it is used (docs/dependencies.md)"]
    assert not checked_versions.usable(rng, lambda: 1 / 0, installed="2.0.0")
    assert "self-test failed (ZeroDivisionError: division by zero), so the public path is taken" in checked_versions.notes()[0]


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
    for step in template_adapter.STEPS:
        assert step in source, step
    assert template_adapter.checked()


def test_views_never_write_onto_a_frozen_profile():
    assert "object.__setattr__" not in (ROOT / "pipeline" / "core" / "views.py").read_text()


# -- the plugin's reaches into pytest, xdist and syrupy ---------------------------------------------------
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


def test_a_pytest_outside_the_checked_range_is_said_in_one_line_and_its_self_test_decides(pytester, monkeypatch):
    import importlib

    from test_plugin import exact_samples, make_dataset, run

    adapter = importlib.import_module("pytest_tokfidelity.pytest_adapter")  # as the run will import it
    make_dataset(pytester.path, "A1_exact", exact_samples(4))
    probe = (f"def pytest_sessionfinish(session):\n    s = session.config.pluginmanager.get_plugin('tokfidelity-session')\n"
             f"    open({str(pytester.path / 'reported.txt')!r}, 'w').write(str(s.plain_passes.reported))\n")
    pytester.syspathinsert()
    pytester.makepyfile(reported_probe=probe)
    result = run(pytester, "-p", "reported_probe", "--tokfidelity-dataset=A1")
    result.assert_outcomes(passed=4 + 4)
    assert "outside the releases pytest_tokfidelity/pytest_adapter.py" not in result.stdout.str()
    assert int((pytester.path / "reported.txt").read_text()) > 0  # inside the range: the fast path
    outside = checked_versions.CheckedRange("pytest", adapter.CHECKED.adapter, "0.0.1", "0.0.2")
    for self_test, fast in ((lambda: None, True), (lambda: 1 / 0, False)):
        monkeypatch.setattr(checked_versions, "_decided", {})
        monkeypatch.setattr(checked_versions, "_notes", {})
        monkeypatch.setattr(adapter, "CHECKED", outside)
        monkeypatch.setattr(adapter, "self_test", self_test)
        result = run(pytester, "-p", "reported_probe", "--tokfidelity-dataset=A1")
        result.assert_outcomes(passed=4 + 4)  # no warning among the outcomes
        lines = [line for line in result.outlines if "outside the releases pytest_tokfidelity/pytest_adapter.py" in line]
        assert len(lines) == 1 and f"pytest {pytest.__version__} is outside" in lines[0]
        assert ("self-test passed" in lines[0]) is fast
        assert (int((pytester.path / "reported.txt").read_text()) > 0) is fast


def test_the_installed_releases_are_what_importlib_metadata_says():
    """checked_versions reads each release from its .dist-info folder's name: the same as importlib.metadata's
    answer for every distribution installed here, and a name not installed is None."""
    from importlib.metadata import distributions

    seen = 0
    for dist in distributions():
        name = dist.metadata["Name"]
        if name and checked_versions._normalized(name) in checked_versions._dist_info_versions():
            assert checked_versions.installed_release(name) == dist.version, name
            seen += 1
    assert seen >= 50
    assert checked_versions.installed_release("no-such-distribution-here") is None
    for checked in ("pytest", "pytest-xdist", "syrupy", "tiktoken", "tokenizers", "transformers"):
        assert checked_versions.installed_release(checked) is not None, checked
