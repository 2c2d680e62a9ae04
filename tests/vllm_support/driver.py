"""What vLLM 0.32.0's chat endpoint returns for given output ids, computed by vLLM's own code, offline.

Runs under .venv-vllm's python (never in the test environment): reads one JSON object on stdin,
``{"groups": [{"setup": {...}, "cases": [{"ids": [...], "finish": "stop"|"length", "tools": ..., "tool_choice": ...}]}]}``
(``tools``: true or absent for the default tool list without parameter schemas, false for none, or the request's
own list; ``tool_choice``: the request's, absent for vLLM's default),
and writes ``{"groups": [[response, ...], ...]}``, each response the flat
``{"reasoning", "content", "tool_calls", "finish_reason"}`` of the message vLLM sends, with ``choice_nulls``: the
choice's fields sent as null (``stop_reason`` left out: the driver gives the engine none).

Per case, as the server does it (no model is loaded):
1. the request (``ChatCompletionRequest``, with the tools declared when ``tools``) through
   ``ParserManager.get_parser(...)`` and the parser's ``adjust_request`` where
   ``vllm/renderers/online_renderer.py`` applies it, then ``request.to_sampling_params(...)``;
2. ``IncrementalDetokenizer.from_new_request`` primed with the prompt ids, fed the output ids one at a
   time, the last with ``stop_terminated`` when it is a stop id and the finish is "stop" (the output
   processor's stop handling: the stop token is not detokenized);
3. ``OpenAIServingChat.chat_completion_full_generator`` itself, on an instance holding only the
   attributes that method reads, with a ``RequestOutput`` of those ids and that text.

Kimi's tokenizer class is the model repository's (``setup["kimi_class"]``), loaded here as a module by
path after its sha256 is checked: never through ``trust_remote_code``.
"""

from __future__ import annotations

import asyncio
import hashlib
import importlib.util
import json
import os
import sys
import types


def _kimi_tokenizer(setup):
    path, want = setup["kimi_class"], setup["kimi_class_sha256"]
    data = open(path, "rb").read()
    got = hashlib.sha256(data).hexdigest()
    if got != want:
        raise SystemExit(f"{path}: sha256 {got}, expected {want}: refusing to load it")
    import transformers.tokenization_python as slow  # transformers 5 moved transformers.tokenization_utils: the file (unedited, its sha256 is the check) imports the old names

    sys.modules.setdefault("transformers.tokenization_utils", slow)
    import transformers.models.gpt2.tokenization_gpt2 as gpt2  # transformers 5 moved bytes_to_unicode too
    from transformers.convert_slow_tokenizer import bytes_to_unicode

    if not hasattr(gpt2, "bytes_to_unicode"):
        gpt2.bytes_to_unicode = bytes_to_unicode
    spec = importlib.util.spec_from_file_location("tokfidelity_kimi_tokenization", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    config = json.load(open(setup["tokenizer_dir"] + "/tokenizer_config.json"))
    kwargs = {k: config[k] for k in ("bos_token", "eos_token", "unk_token", "pad_token", "additional_special_tokens",
                                     "added_tokens_decoder") if k in config}
    if "added_tokens_decoder" in kwargs:  # as from_pretrained hands them over: int ids, AddedToken values
        from tokenizers import AddedToken

        fields = ("content", "single_word", "lstrip", "rstrip", "normalized", "special")
        kwargs["added_tokens_decoder"] = {int(i): AddedToken(**{k: v for k, v in t.items() if k in fields})
                                          for i, t in kwargs["added_tokens_decoder"].items()}
    tokenizer = module.TikTokenTokenizer(vocab_file=setup["tokenizer_dir"] + "/tiktoken.model", **kwargs)
    from vllm.tokenizers.hf import get_cached_tokenizer

    return get_cached_tokenizer(tokenizer)


class _HarmonyTokenizer:
    """For gpt-oss: vLLM's HarmonyParser parses the output ids with openai-harmony and uses the model's
    tokenizer only to decode a message left unfinished (``decode(ids)``, specials as text). The model's
    Hugging Face tokenizer files are not here; openai-harmony's own encoding decodes the same vocabulary."""

    def __init__(self):
        from vllm.entrypoints.openai.parser.harmony_utils import get_encoding

        self.encoding = get_encoding()

    def decode(self, ids, **_):
        return self.encoding.decode(list(ids))

    def get_vocab(self):
        return {}


def _tokenizer(setup):
    if setup.get("harmony"):
        os.environ["TIKTOKEN_ENCODINGS_BASE"] = setup["tokenizer_dir"]
        return _HarmonyTokenizer()
    if setup.get("kimi_class"):
        return _kimi_tokenizer(setup)
    from vllm.tokenizers import get_tokenizer

    folder = setup["tokenizer_dir"]
    if setup.get("model_type"):  # as in a model folder: its config.json's model_type picks the tokenizer class
        import tempfile

        model = tempfile.mkdtemp(prefix="tokfidelity-model-")
        for name in os.listdir(folder):
            os.symlink(os.path.join(folder, name), os.path.join(model, name))
        with open(os.path.join(model, "config.json"), "w") as f:
            json.dump({"model_type": setup["model_type"]}, f)
        folder = model
    return get_tokenizer(folder, trust_remote_code=False)


TOOLS = [{"type": "function", "function": {"name": n, "parameters": {"type": "object", "properties": {}}}}
         for n in ("get", "put", "search.web", "search_web", "read_file", "run-cmd", "查询", "a", "b", "get_weather")]


class _Setup:
    def __init__(self, setup):
        from vllm.parser.parser_manager import ParserManager

        self.setup = setup
        self.tokenizer = _tokenizer(setup)
        self.parser_cls = ParserManager.get_parser(
            tool_parser_name=setup.get("tool_parser"), reasoning_parser_name=setup.get("reasoning_parser"),
            enable_auto_tools=True, model_name="m", is_harmony=setup.get("harmony", False), tokenizer=self.tokenizer,
        )
        self.kwargs = setup.get("chat_template_kwargs") or {}
        self.serving = self._serving()

    def _serving(self):
        from vllm.entrypoints.openai.chat_completion.serving import OpenAIServingChat

        serving = object.__new__(OpenAIServingChat)  # only what chat_completion_full_generator reads
        serving.parser_cls = self.parser_cls
        serving.enable_auto_tools = True
        serving.response_role = "assistant"
        serving.enable_prompt_tokens_details = False
        serving._include_reasoning_tokens_details = False
        serving.enable_per_request_metrics = False
        serving.enable_log_outputs = False
        serving.request_logger = None
        serving.system_fingerprint = None
        serving.default_chat_template_kwargs = {}
        return serving

    def request(self, tools, tool_choice=None):
        from vllm.entrypoints.openai.chat_completion.protocol import ChatCompletionRequest

        body = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 4096,
                "chat_template_kwargs": self.kwargs}
        if tools:
            body.update(tools=TOOLS if tools is True else tools, tool_choice="auto")
        if tool_choice is not None:
            body["tool_choice"] = tool_choice
        request = ChatCompletionRequest(**body)
        if self.parser_cls is not None:  # online_renderer: when to apply the parser's adjust_request
            tool_choice = getattr(request, "tool_choice", "none")
            if (self.parser_cls.always_adjust_request or self.parser_cls.reasoning_parser_cls is not None
                    or tool_choice != "none"):
                request = self.parser_cls(self.tokenizer, request.tools, model_config=None,
                                          chat_template_kwargs=self.kwargs).adjust_request(request=request)
        return request

    def text(self, request, ids, finish):
        from vllm.v1.engine.detokenizer import IncrementalDetokenizer

        if self.setup.get("harmony"):  # HarmonyParser.parse reads the ids, never the text
            return ""
        params = request.to_sampling_params(4096, {})
        core = types.SimpleNamespace(request_id="r", sampling_params=params, prompt_token_ids=list(self.setup["prompt_ids"]),
                                     prompt_embeds=None)
        detok = IncrementalDetokenizer.from_new_request(self.tokenizer, core)
        stops = set(self.setup["stop_ids"])
        for n, token in enumerate(ids):
            last = n == len(ids) - 1
            detok.update([token], stop_terminated=last and finish == "stop" and token in stops)
        return detok.get_next_output_text(finished=True, delta=False)

    def respond(self, case):
        from vllm.outputs import CompletionOutput, RequestOutput

        request = self.request(case.get("tools", True), case.get("tool_choice"))
        ids, finish = case["ids"], case["finish"]
        text = self.text(request, ids, finish)
        output = CompletionOutput(index=0, text=text, token_ids=list(ids), cumulative_logprob=None, logprobs=None,
                                  finish_reason=finish, stop_reason=None)
        final = RequestOutput(request_id="r", prompt=None, prompt_token_ids=list(self.setup["prompt_ids"]),
                              prompt_logprobs=None, outputs=[output], finished=True)
        parser = None
        if self.parser_cls is not None:
            parser = self.parser_cls(self.tokenizer, request.tools, chat_template_kwargs=self.kwargs, model_config=None)

        async def results():
            yield final

        metadata = types.SimpleNamespace(final_usage_info=None)
        response = asyncio.run(self.serving.chat_completion_full_generator(
            request, results(), "r", "m", [], self.tokenizer, metadata, parser=parser))
        choice = response.choices[0]
        message = choice.message
        calls = [{"id": c.id, "type": c.type, "function": {"name": c.function.name, "arguments": c.function.arguments}}
                 for c in (message.tool_calls or [])]
        nulls = sorted(k for k, v in choice.model_dump().items() if v is None and k not in ("message", "stop_reason"))
        return {"reasoning": getattr(message, "reasoning", None), "content": message.content,
                "tool_calls": calls or None, "finish_reason": choice.finish_reason, "text": text, "choice_nulls": nulls}


def main() -> None:
    job = json.load(sys.stdin)
    out = []
    for group in job["groups"]:
        setup = _Setup(group["setup"])
        responses = []
        for case in group["cases"]:
            try:
                responses.append(setup.respond(case))
            except Exception as e:  # reported per case: the test shows which and why
                responses.append({"error": f"{type(e).__name__}: {e}"})
        out.append(responses)
    json.dump({"groups": out}, sys.stdout, ensure_ascii=False)


if __name__ == "__main__":
    main()
