"""`make gpu-check`: on one GPU, within a budget, the checks only a GPU can answer (`run.py`), and its report beside the
results (`page.py`); then a lent GPU's session (scripts/gpu-session.sh): the cells that decide the published findings
still open, in order (`session.py`).
"""
