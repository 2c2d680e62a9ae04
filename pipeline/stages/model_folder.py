"""A GGUF model as a safetensors model folder that a serving engine (vLLM) loads.

transformers dequantizes the GGUF to float32 but refuses ``save_pretrained`` on a GGUF-loaded model,
so the folder is written by hand: the state dict with ``safetensors`` (the tied ``lm_head`` dropped:
the engine ties it to the embeddings again), ``config.json`` with ``architectures`` set and no
``quantization_config``, ``generation_config.json``, and the tokenizer. The tokenizer is
``pipeline.core.tokenizer``'s GGUF tokenizer, the one with llama.cpp's digit pre-split restored (for
SmolLM2 ``"\\n\\n1"`` is ``ĊĊ 1``, not ``Ċ Ċ 1``), so the server's prompt ids are the model's; its
``tokenizer_config.json`` names ``TokenizersBackend`` so transformers loads that tokenizer.json as it
is instead of rebuilding a pre-tokenizer. No code from the model is run (``trust_remote_code`` stays
off).

``model_folder(spec)`` converts once and caches the folder under
``$TOKFIDELITY_CACHE_DIR/models/<file stem>-<sha256 prefix>`` (default ``~/.cache/tokfidelity``),
under a file lock so parallel processes convert it once.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
from pathlib import Path

from ..core.files import cache_root, open_input
from ..core.model_files import gguf_alone
from ..core.tokenizer import PACKAGE_FILE_PREFIX, load_tokenizer, resolve_package_file

__all__ = ["model_folder", "convert_gguf", "cache_root", "DONE_FILE"]

DONE_FILE = ".tokfidelity-converted.json"  # written last: a folder without it is incomplete


def _gguf_path(spec: str | os.PathLike) -> Path:
    spec = os.fspath(spec)
    path = resolve_package_file(spec) if spec.startswith(PACKAGE_FILE_PREFIX) else Path(spec).expanduser()
    if not path.is_file() or path.suffix != ".gguf":
        raise FileNotFoundError(f"{spec}: not a *.gguf file (give a path or pkg:PACKAGE/FILE.gguf)")
    return path


def _sha256(path: Path) -> str:
    with open_input(path) as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def model_folder(spec: str | os.PathLike, cache: Path | None = None) -> Path:
    """The converted folder for a GGUF (path or ``pkg:`` spec), converting it on first use."""
    gguf = _gguf_path(spec)
    digest = _sha256(gguf)
    target = (cache or cache_root()) / "models" / f"{gguf.stem}-{digest[:16]}"
    if (target / DONE_FILE).is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.parent / f"{target.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (target / DONE_FILE).is_file():
            tmp = target.with_name(f"{target.name}.tmp{os.getpid()}")
            shutil.rmtree(tmp, ignore_errors=True)
            convert_gguf(gguf, tmp, digest)
            shutil.rmtree(target, ignore_errors=True)
            os.replace(tmp, target)
    return target


def convert_gguf(gguf: Path, out: Path, digest: str | None = None) -> Path:
    """Write ``gguf`` as a float32 safetensors model folder at ``out``."""
    import torch
    from safetensors.torch import save_file
    from transformers import AutoModelForCausalLM, AutoTokenizer

    out.mkdir(parents=True, exist_ok=True)
    with gguf_alone(gguf) as (folder, name):  # transformers sees the GGUF alone: no file beside it is read
        model = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, dtype=torch.float32, trust_remote_code=False)
        # chat template and special-token names from transformers' reading of the GGUF
        hf_tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name, trust_remote_code=False)
    state = {k: v.detach().contiguous() for k, v in model.state_dict().items()}
    tied = bool(getattr(model.config, "tie_word_embeddings", False))
    if tied:
        state.pop("lm_head.weight", None)
    save_file(state, str(out / "model.safetensors"), metadata={"format": "pt"})
    config = model.config.to_dict()
    config.pop("quantization_config", None)
    config["architectures"] = [type(model).__name__]
    config["dtype"] = "float32"
    config["tie_word_embeddings"] = tied
    (out / "config.json").write_text(json.dumps(config, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    model.generation_config.to_json_file(str(out / "generation_config.json"))
    hf_tokenizer.save_pretrained(str(out))  # its tokenizer.json is replaced by ours (digit pre-split restored)
    load_tokenizer(gguf).backend.save(str(out / "tokenizer.json"))
    config_path = out / "tokenizer_config.json"
    tokenizer_config = json.loads(config_path.read_text(encoding="utf-8"))
    tokenizer_config["tokenizer_class"] = "TokenizersBackend"
    config_path.write_text(json.dumps(tokenizer_config, indent=2) + "\n", encoding="utf-8")
    done = {"from": gguf.name, "sha256": digest or _sha256(gguf), "dtype": "float32",
            "note": "weights dequantized from the GGUF by transformers; tokenizer: pipeline.core.tokenizer (GGUF + digit pre-split)"}
    (out / DONE_FILE).write_text(json.dumps(done, indent=2) + "\n", encoding="utf-8")
    return out
