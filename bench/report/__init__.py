"""RESULTS.md's own sections and the results page's core, from the result files alone: the main table, its findings,
figures, provenance, the machine's limits, costs, the README splice, `make compare` and `make export`. They import no
study; RESULTS.md with every study's section is bench/studies/table.py.
"""
