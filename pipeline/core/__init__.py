"""The verdict core: everything a fidelity verdict depends on.

Tokenizers, model profiles, API views, reconstruction, diagnosis, golden data, the gate.
Its sources are the code fingerprint a gate record pins: editing any file here closes
every gate. It imports nothing from ``pipeline.stages`` or ``pipeline.commands``.
"""
