"""The studies' wing: one folder a study, each with the same entry names (`spec.py`, what it measures; `worker.py`, what
runs inside an environment's process; `run.py`, how it runs; `page.py`, its section and page), and `table.py`,
RESULTS.md with every study's section. The folder imports any folder below it; only the front door imports it.
"""
