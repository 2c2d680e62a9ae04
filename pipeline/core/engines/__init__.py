"""Serving engines as data and code: what each engine returns for given output ids.

``view``: a view is a small declared object (the engine, its reasoning and tool-call parsers named as
the server names them, the decode options it applies, its response-assembly rules). ``registry``: the
engines' parsers keyed by their own names, imported only when a view uses them (as vLLM's
``ReasoningParserManager`` and SGLang's function-call parser map register theirs). One module per
engine and parser family restates that engine's code; the differential tests run the engine's own.
"""
