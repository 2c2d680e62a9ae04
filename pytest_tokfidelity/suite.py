"""What each test of the fidelity suite checks: the docstrings of its tests.

A dataset's tests are collected from its own ``samples.jsonl`` (collection.py): ``test_manifest``,
one test per sample named by the sample id (what ``test_fidelity`` says), then ``test_vocabulary``,
``test_special_tokens`` and ``test_stop_tokens``. Each test is a lookup and an assertion: the work
happens in batches inside ``FidelitySession``. These functions are never called; syrupy and pytest
read them as each test's ``obj``.
"""


def test_manifest():
    """The manifest is valid, its accept policy names only text-preserving classes, its tokenizer loads."""


def test_fidelity():
    """The ids rebuilt from the API's text equal the golden ids, or differ only as reviewed or accepted."""


def test_vocabulary():
    """Every golden id is in the tokenizer's vocabulary."""


def test_special_tokens():
    """The special-token audit of the profile on this tokenizer passes."""


def test_stop_tokens():
    """Every sample that finished with ``stop`` ends with the profile's stop token."""


def test_gate_policy():
    """The dataset's gate is open. Failed by a full run for what keeps the gate closed that no other test shows;
    collected only when named (``golden/DS/samples.jsonl::test_gate_policy``): then it checks the gate record
    as ``tokfidelity gate check`` does, since a run of that test alone cannot decide the gate."""
