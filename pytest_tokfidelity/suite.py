"""The fidelity suite the plugin collects for ``--tokfidelity-dataset``.

The whole-dataset checks are plain test functions, parametrized per dataset by
``pytest_generate_tests`` below; each sample is a ``SampleItem`` (collection.py) named after
``test_fidelity``. Each test is a lookup and an assertion: the work happens in batches inside
``FidelitySession``. The whole-dataset checks
come after the samples, so that a run that judged every sample has already checked them.
"""

from pytest_tokfidelity.session import session_of


def pytest_generate_tests(metafunc):
    if "dataset" in metafunc.fixturenames:
        keys, ids = session_of(metafunc.config).dataset_cases()
        metafunc.parametrize("dataset", keys, ids=ids)


def test_manifest(dataset, request):
    """The manifest is valid, its accept policy names only text-preserving classes, its tokenizer loads."""
    session_of(request.config).check_dataset("test_manifest", dataset)


def test_fidelity():
    """The ids rebuilt from the API's text equal the golden ids, or differ only as reviewed or accepted.

    Collected as one ``SampleItem`` per sample (collection.py), which runs the check: never called."""


def test_vocabulary(dataset, request):
    """Every golden id is in the tokenizer's vocabulary."""
    session_of(request.config).check_dataset("test_vocabulary", dataset)


def test_special_tokens(dataset, request):
    """The special-token audit of the profile on this tokenizer passes."""
    session_of(request.config).check_dataset("test_special_tokens", dataset)


def test_stop_tokens(dataset, request):
    """Every sample that finished with ``stop`` ends with the profile's stop token."""
    session_of(request.config).check_dataset("test_stop_tokens", dataset)


