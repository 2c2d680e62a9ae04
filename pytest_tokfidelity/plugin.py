"""pytest entry point of tokfidelity: ``pytest --tokfidelity-dataset=NAME``.

Only options live here. Without ``--tokfidelity-dataset``, or a path to a dataset's ``samples.jsonl``
or folder (which names it: selection.py), nothing else of tokfidelity runs; with it, one
``FidelitySession`` (session.py) per process judges the datasets, collected as their own
``samples.jsonl`` files (collection.py; alone when no test paths were given), and the controlling
process's ``RunReport`` (report.py) prints the summary and writes the gate records.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    from . import hookspecs

    pluginmanager.add_hookspecs(hookspecs)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("tokfidelity", "token fidelity of golden datasets")
    group.addoption(
        "--tokfidelity-dataset", action="append", default=[], metavar="NAME",
        help="verify golden dataset NAME (a folder NAME or NAME_*); repeatable, comma-separated; 'all' for every one",
    )
    group.addoption("--tokfidelity-golden-dir", default=None, metavar="DIR",
                    help="folder of golden datasets (default: ini tokfidelity_golden_dir, else golden/ in pytest's rootdir)")
    group.addoption("--tokfidelity-tokenizer", default=None, metavar="PATH", help="tokenizer to use instead of the manifest's")
    group.addoption("--tokfidelity-view", default=None, metavar="VIEW",
                    help="API view(s) to judge under instead of the manifest's api_view / api_views (comma-separated for several)")
    group.addoption("--tokfidelity-sample", type=int, default=None, metavar="N",
                    help="verify a deterministic subset of N samples per dataset (a quick run: no gate record)")
    group.addoption("--tokfidelity-state-dir", default=None, metavar="DIR",
                    help="where gate records go (default: $TOKFIDELITY_STATE_DIR, else .tokfidelity)")
    group.addoption("--tokfidelity-shard", default=None, metavar="I/N",
                    help="run shard I of N of every dataset (split by a hash of the sample id) and write a shard record; "
                    "`tokfidelity gate merge` opens the gate from all N")
    group.addoption("--tokfidelity-report", default=None, metavar="DIR",
                    help="write DIR/results.json and DIR/report.html (a self-contained divergence report)")
    group.addoption("--tokfidelity-prompts", choices=("on", "off"), default="on",
                    help="off: skip the prompt verdicts (a quick run; a gate it opens says so, and `tokfidelity build` refuses it)")
    group.addoption("--tokfidelity-sample-timeout", type=float, default=None, metavar="SECONDS",
                    help="a judging process on one sample longer than this is stuck: it is killed and the samples it held "
                    "fail (default 120; 0: no limit; a stopped judging process is found within seconds either way)")
    group.addoption("--tokfidelity-reconstruct", default=None, metavar="MODULE:FUNCTION",
                    help="judge this function's reconstruction (response, tokenizer) -> output ids instead of tokfidelity's "
                    "(default: a conftest's pytest_tokfidelity_reconstruct hook, else tokfidelity's)")
    group.addoption("--tokfidelity-render", default=None, metavar="MODULE:FUNCTION",
                    help="judge this function's prompt rendering (messages, tools, chat_template_kwargs, tokenizer) -> prompt ids "
                    "instead of the model's template (default: a conftest's pytest_tokfidelity_render hook, else the template)")
    group.addoption("--tokfidelity-trainer", default=None, metavar="specforge:TEMPLATE|speculators:URL",
                    help="judge a drafter trainer's preprocessing instead of tokfidelity's code: SpecForge's "
                    "preprocess_conversations with TEMPLATE from its registry, or speculators' data preparation "
                    "rendering through the vLLM server at URL (loss-masked span against the output ids, "
                    "the ids before it against the prompt ids)")
    parser.addini("tokfidelity_golden_dir", "folder of golden datasets, relative to the rootdir", default=None)


def _dataset_names(config: pytest.Config) -> list[str]:
    return [n.strip() for value in config.option.tokfidelity_dataset for n in value.split(",") if n.strip()]


def _golden_dir_default(config: pytest.Config) -> tuple[Path, str | None]:
    """The option, else the ini value (relative to the rootdir), else ``golden/`` in the rootdir; and the
    ini value (None: not from the ini)."""
    if config.option.tokfidelity_golden_dir:
        return Path(config.option.tokfidelity_golden_dir), None
    ini = config.getini("tokfidelity_golden_dir")
    return config.rootpath / (ini or "golden"), ini


def _golden_dir(config: pytest.Config) -> Path:
    """The golden dir (``_golden_dir_default``); a usage error naming where it looked and how to point
    elsewhere when that folder is missing."""
    golden_dir, ini = _golden_dir_default(config)
    if config.option.tokfidelity_golden_dir:
        return golden_dir
    if not golden_dir.is_dir():
        source = f"ini option tokfidelity_golden_dir = {ini!r}" if ini else "the default: golden/ in pytest's rootdir"
        raise pytest.UsageError(
            f"golden dir {golden_dir} does not exist ({source}, rootdir {config.rootpath}); "
            "make it with one folder per dataset, or pass --tokfidelity-golden-dir=DIR"
        )
    if golden_dir.is_relative_to(config.invocation_params.dir):  # shown as the user typed paths: golden/B3/...
        golden_dir = golden_dir.relative_to(config.invocation_params.dir)
    return golden_dir


def _implied_names(config: pytest.Config) -> list[str]:
    """Datasets named by the paths given (``pytest golden/B3/samples.jsonl::b3-0005``: B3), selection.py."""
    from .selection import arg_paths, implied_datasets

    paths = arg_paths(config)
    if not paths:
        return []
    golden_dir = Path(os.path.abspath(config.invocation_params.dir / _golden_dir_default(config)[0]))
    return implied_datasets(paths, golden_dir) if golden_dir.is_dir() else []


def _pipeline_package_problem() -> str | None:
    """tokfidelity installs a top-level package named ``pipeline``; a project's own ``pipeline`` earlier on
    sys.path (pytest puts the rootdir there) shadows it. Found without running the other package's code."""
    import importlib.util

    ours = Path(__file__).resolve().parent.parent / "pipeline"
    spec = importlib.util.find_spec("pipeline")
    found = [Path(p).resolve() for p in (spec.submodule_search_locations or [])] if spec else []
    if ours in found:
        return None
    where = ", ".join(str(p) for p in found) or "nowhere"
    return (
        f"the package 'pipeline' that Python finds first is {where}, not tokfidelity's ({ours}): a module or package "
        "named 'pipeline' in your project shadows the one tokfidelity installs. Rename yours, or run pytest with "
        "--import-mode=importlib (and without `python -m`, which puts the current folder first)"
    )


def _judges(value: str | None) -> int | None:
    """TOKFIDELITY_JUDGES: judging processes (or threads) per pytest process; None: the default."""
    if value is None or not value.strip():
        return None
    try:
        n = int(value)
    except ValueError:
        n = 0
    if n < 1:
        raise pytest.UsageError(f"TOKFIDELITY_JUDGES: expected a whole number of judges from 1, got {value!r} (unset it for the default)")
    return n


def _folder_problem(target: Path, needs: str) -> str | None:
    """Why files cannot be written under ``target`` (checked now, not after the whole run): a link to
    nothing, a file where a folder must be, or a nearest existing folder that is read-only."""
    for folder in (target, *target.parents):
        if folder.is_symlink() and not folder.exists():
            return f"{folder} is a link to {os.readlink(folder)}, which does not exist"
        if folder.exists():
            if not folder.is_dir():
                return f"{folder} is a file; {needs} a folder there"
            if not os.access(folder, os.W_OK | os.X_OK):
                how = "on a read-only file system" if os.statvfs(folder).f_flag & os.ST_RDONLY else "not writable by this user"
                return f"{folder} is {how}; {needs} a writable folder there: make it writable, or give another folder"
            return None
    return None


def pytest_configure(config: pytest.Config) -> None:
    names = _dataset_names(config)
    if not names and config.option.tokfidelity_dataset:  # given, but empty (an unset variable in a CI line): not a silent no-op
        raise pytest.UsageError("--tokfidelity-dataset: no dataset name given (NAME, NAME_*, comma-separated, or 'all')")
    names += [n for n in _implied_names(config) if n not in names]
    if not names:
        return
    if (problem := _pipeline_package_problem()) is not None:
        raise pytest.UsageError(problem)
    from .keys import REPORT_PLUGIN, RESULTS_PLUGIN, SESSION_PLUGIN
    from .session import FidelitySession

    opt = config.option
    if opt.tokfidelity_sample is not None and opt.tokfidelity_sample < 1:
        raise pytest.UsageError(f"--tokfidelity-sample: expected a positive number of samples, got {opt.tokfidelity_sample}")
    from pipeline.core.gate import default_state_dir

    state_dir = Path(opt.tokfidelity_state_dir) if opt.tokfidelity_state_dir else default_state_dir()
    if (problem := _folder_problem(state_dir.absolute() / "gates", "gate records need")) is not None:
        raise pytest.UsageError(f"--tokfidelity-state-dir: {problem}")
    timeout = opt.tokfidelity_sample_timeout
    if timeout is not None and not timeout >= 0:  # also NaN
        raise pytest.UsageError(f"--tokfidelity-sample-timeout: expected seconds from 0 (0: no limit), got {timeout:g}")
    judges = _judges(os.environ.get("TOKFIDELITY_JUDGES"))
    from .sharding import shard_option

    shard_option(config)  # a usage error now, not after the run
    if opt.tokfidelity_view is not None:
        from pipeline.core.views import VIEWS

        views = [v.strip() for v in opt.tokfidelity_view.split(",")]
        for view in views:
            if view not in VIEWS:
                raise pytest.UsageError(f"--tokfidelity-view: unknown view {view!r}; known: {', '.join(VIEWS)}")
        if len(set(views)) != len(views):
            raise pytest.UsageError(f"--tokfidelity-view: a view is named twice in {opt.tokfidelity_view!r}: name each once")
    from .own_code import own_functions

    own = own_functions(config)  # the project's own functions, or (None, None): tokfidelity's
    try:
        session = FidelitySession(config, names, _golden_dir(config), judges, own)
    except ValueError as e:  # no such dataset / golden dir: a usage error, said plainly
        raise pytest.UsageError(f"--tokfidelity-dataset: {e}") from None
    from pipeline.core.pins import state_dir_problem

    for ds in session.datasets:
        if (problem := state_dir_problem(ds.dir, state_dir)) is not None:
            raise pytest.UsageError(f"--tokfidelity-state-dir: {problem}")
    config.pluginmanager.register(session, SESSION_PLUGIN)
    if opt.tokfidelity_report:
        from .results import ResultsRecorder

        session.results = ResultsRecorder(session, Path(opt.tokfidelity_report))
        config.pluginmanager.register(session.results, RESULTS_PLUGIN)
    if not hasattr(config, "workerinput"):  # the controlling process: summary and gate records
        from .report import RunReport

        config.pluginmanager.register(RunReport(session), REPORT_PLUGIN)
    from .selection import collected_paths

    paths = collected_paths(config, session.datasets)
    if config.args_source != pytest.Config.ArgsSource.ARGS:
        config.args[:] = paths  # no paths given: run the fidelity suite alone, not testpaths
    else:
        config.args[:0] = paths  # the datasets no given path leads to, first (as without paths)
