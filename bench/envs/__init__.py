"""The per-backend Python environments: build and stamp (build), lock and check (locks), cross-env rules
(rules), fingerprint (info, probe), and the command line of scripts/envs.py (cli).

Stdlib only (Python 3.11): it runs with the system python3 before any env exists. probe alone runs inside
an env, where it imports the framework under test.
"""
