"""`make gpu-check`: on one GPU, within a budget, the checks only a GPU can answer (`run.py`), and its report beside the
results (`page.py`); then a lent GPU's session (scripts/gpu-session.sh): the cells that decide the published findings
still open, in order (`session.py`).
"""


def gpu_check_command(argv: list[str]) -> int:
    """on one GPU, <= 15 min: sync vs CUDA events, CUDA graph replays, peak memory vs plan, short paper cells"""
    from bench.studies.gpucheck.run import main

    return main(argv)


def gpu_session_command(argv: list[str]) -> int:
    """a lent GPU's session: the cells that decide the published findings still open, in order (--plan lists them)"""
    from bench.studies.gpucheck.session import main

    return main(argv)


COMMANDS = {"gpu-check": gpu_check_command, "gpu-session": gpu_session_command}
