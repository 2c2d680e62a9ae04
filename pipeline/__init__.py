"""tokfidelity's data pipeline: tokenizers, model profiles, reconstruction of output ids from
API text, diagnosis of divergences, golden data, and the gated pipeline stages.

Never imports pytest: the pytest plugin lives in ``pytest_tokfidelity`` and builds on this.
"""

__version__ = "0.1.0"
