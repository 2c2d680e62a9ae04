"""The fidelity suite the plugin collects for ``--tokfidelity-dataset``.

Plain test functions, parametrized per dataset and per sample by ``pytest_generate_tests``
below, so that fixtures such as syrupy's ``snapshot`` work. Each test is a lookup and an
assertion: the work happens in batches inside ``FidelitySession``. The whole-dataset checks
come after the samples, so that a run that judged every sample has already checked them.
"""

from pytest_tokfidelity.session import session_of


def pytest_generate_tests(metafunc):
    session = session_of(metafunc.config)
    if "case" in metafunc.fixturenames:
        keys, ids = session.sample_cases()
        metafunc.parametrize("case", keys, ids=ids)
    elif "dataset" in metafunc.fixturenames:
        keys, ids = session.dataset_cases()
        metafunc.parametrize("dataset", keys, ids=ids)


def test_manifest(dataset, request):
    """The manifest is valid, its accept policy names only text-preserving classes, its tokenizer loads."""
    session_of(request.config).check_dataset("test_manifest", dataset)


def test_fidelity(case, request):
    """The ids rebuilt from the API's text equal the golden ids, or differ only as reviewed or accepted."""
    session_of(request.config).check_sample(case, request)


def test_vocabulary(dataset, request):
    """Every golden id is in the tokenizer's vocabulary."""
    session_of(request.config).check_dataset("test_vocabulary", dataset)


def test_special_tokens(dataset, request):
    """The special-token audit of the profile on this tokenizer passes."""
    session_of(request.config).check_dataset("test_special_tokens", dataset)


def test_stop_tokens(dataset, request):
    """Every sample that finished with ``stop`` ends with the profile's stop token."""
    session_of(request.config).check_dataset("test_stop_tokens", dataset)


