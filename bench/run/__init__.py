"""Orchestration: the runner and its rounds, cell and worker processes, what a run measures and in what order, deadlines
and budgets, the results folder as a run writes it, the preflight (doctor), the machine's ceilings, and beyond one
machine (cluster/).
"""
