"""The foundation: what every other folder may use, importing nothing of the project: errors, atomic writes, statistics,
the clock (timing), provenance, progress, run locks, failures, lifetime, packed archives, the published reference
table, Markdown tables, argument types, exit statuses and what may be a results folder.
"""
