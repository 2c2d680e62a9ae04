"""Golden capture: run a real engine on prompts and record its exact prompt and output ids.

``engine`` defines the protocol every engine follows; ``transformers_engine`` runs a local
model on the CPU; ``sglang_engine`` talks to an SGLang server; ``dataset`` writes what an
engine captured as a golden dataset (see ``pipeline.core.golden``).
"""
