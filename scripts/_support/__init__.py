"""What the scripts, the bench and the tests share: the vLLM server launcher (``vllm_server``), a free local port
(``net``) and a pytest run of the plugin as a user runs it (``pytest_runs``). Nothing here imports the tests: a
script or a bench imports these with ``scripts/`` on its path; the tests re-export them under their own names."""
