"""Serving engines as data and code: what each engine returns for given output ids.

``view``: a view is a small declared object (the engine, its reasoning and tool-call parsers named as
the server names them, the decode options it applies, its response-assembly rules). ``registry``: the
engines' parsers, each class registered under the server's own name with ``@register`` (as vLLM's
``ToolParserManager.register_module`` registers theirs), its module imported when a view of the family
that names it is first bound. One module per
engine and parser family restates that engine's code; the differential tests run the engine's own.
"""
