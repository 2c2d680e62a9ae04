"""The manifest's format version, and reading a manifest leniently (strict=False) for the plugin."""

from __future__ import annotations

import json

import pytest

from pipeline.core.golden import FORMAT_VERSION, GoldenError, load_manifest

BASE = {"name": "D1", "profile": "kimi-k2.5", "tokenizer": "kimi-k2.5", "source": "test"}


def manifest_dir(tmp_path, **fields):
    folder = tmp_path / "D1"
    folder.mkdir(exist_ok=True)
    (folder / "manifest.json").write_text(json.dumps({**BASE, **fields}))
    return folder


def test_a_manifest_without_format_is_format_1(tmp_path):
    assert load_manifest(manifest_dir(tmp_path)).format == 1
    assert load_manifest(manifest_dir(tmp_path, format=1)).format == 1


@pytest.mark.parametrize("version", range(1, FORMAT_VERSION + 1))
def test_every_older_format_is_read(tmp_path, version):
    assert load_manifest(manifest_dir(tmp_path, format=version)).format == version


@pytest.mark.parametrize("version, message", [
    (FORMAT_VERSION + 1, "newer than this tokfidelity reads"),
    (0, "expected a format version"),
    ("1", "expected a format version"),
    (True, "expected a format version"),
])
def test_a_format_this_code_cannot_read_is_named(tmp_path, version, message):
    with pytest.raises(GoldenError) as caught:
        load_manifest(manifest_dir(tmp_path, format=version))
    assert caught.value.field == "format" and message in caught.value.message


def test_lenient_reading_keeps_what_is_usable_and_lists_the_rest(tmp_path):
    folder = manifest_dir(tmp_path, api_view="nope", max_known_divergence_rate=7, name=3)
    with pytest.raises(GoldenError) as caught:
        load_manifest(folder)
    assert caught.value.field == "api_view"  # strict: the first bad field, as before
    manifest = load_manifest(folder, strict=False)
    assert (manifest.profile, manifest.tokenizer, manifest.api_view, manifest.name) == ("kimi-k2.5", "kimi-k2.5", "sglang", "D1")
    assert manifest.max_known_divergence_rate == 0.0
    assert [p.field for p in manifest.problems] == ["api_view", "max_known_divergence_rate", "name"]
    assert load_manifest(manifest_dir(tmp_path)).problems == ()


@pytest.mark.parametrize("fields", [{"profile": "nope"}, {"tokenizer": ""}, {"tokenizer": None}])
def test_lenient_reading_still_raises_without_a_profile_and_tokenizer(tmp_path, fields):
    with pytest.raises(GoldenError) as caught:
        load_manifest(manifest_dir(tmp_path, **fields), strict=False)
    assert caught.value.field in ("profile", "tokenizer")


def test_golden_reads_names_without_loading_profiles_or_views():
    import subprocess
    import sys
    from pathlib import Path

    code = "import sys, pipeline.core.golden\nprint(sorted(m for m in sys.modules if m.endswith(('.profiles', '.views', '.tokenizer'))))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                          cwd=Path(__file__).resolve().parent.parent)
    assert done.stdout.strip() == "[]", done.stderr
