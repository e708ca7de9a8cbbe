"""`make ab`: one cell (or several) re-measured on two sides, A and B, interleaved in one invocation."""


def ab_command(argv: list[str]) -> int:
    """is B slower than A? one cell (or several) re-measured on both sides, interleaved in one invocation"""
    from bench.studies.ab.cli import main

    return main(argv)


def ab_tally_command(argv: list[str]) -> int:
    """make ab's comparisons counted by kind: each rate with its binomial bound, the process spread, the power"""
    from bench.studies.ab.tally import main

    return main(argv)


COMMANDS = {"ab": ab_command, "ab-tally": ab_tally_command}
