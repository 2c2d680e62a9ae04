"""pytest entry point (being written: issue 3)."""


def pytest_addoption(parser):
    group = parser.getgroup("tokfidelity")
    group.addoption("--tokfidelity-dataset", action="append", default=[], help="golden dataset(s) to verify")
