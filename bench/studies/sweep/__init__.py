"""Performance across releases: `make sweep` (one package at several versions, each in an environment derived from a
backend's lock), `make bisect` (the first release where a cell got slower) and their page, results/SWEEP.md."""
