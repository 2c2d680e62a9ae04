"""The names the plugin's parts share across processes and plugin registries (a leaf module: it imports nothing).

The plugin objects are registered with pytest's plugin manager under the ``*_PLUGIN`` names (a
conftest or a test finds the session as ``config.pluginmanager.get_plugin(SESSION_PLUGIN)``). An
xdist worker sends what the controlling process needs under the ``WORKER_*`` keys of its
``workeroutput``: its counts, its tokenizers and pins, its sample records.
"""

from __future__ import annotations

SESSION_PLUGIN = "tokfidelity-session"  # the FidelitySession (session.py)
RESULTS_PLUGIN = "tokfidelity-results"  # the ResultsRecorder (results.py), with --tokfidelity-report
REPORT_PLUGIN = "tokfidelity-report"  # the RunReport (report.py): the controlling process's summary and gate records

WORKER_OUTPUT_KEY = "tokfidelity_counts"  # a worker's counts
WORKER_TOKENIZERS_KEY = "tokfidelity_tokenizers"  # per dataset: the tokenizer fingerprint and profile a worker judged with
WORKER_PINS_KEY = "tokfidelity_pins"  # per dataset: the hashes of what a worker read
WORKER_RESULTS_KEY = "tokfidelity_results"  # a worker's sample records (results.py)
WORKER_RAN_KEY = "tokfidelity_ran"  # which samples a worker ran: dataset -> ranges of positions (results.py)
