"""The machine's noise study (`make noise`): how small a difference this machine can show, and its spreads. The file
it writes is found and read by bench/judge/noise_file.py, beside the judge that borrows from it; this package measures.
"""


def interleaved_sides(per_side: int) -> list[str]:
    """The order of an A/B comparison's processes: A-B-B-A-A-B-B-A..., `per_side` of each, so that neither side runs
    all first and a drift of the machine over the comparison moves both sides alike."""
    if per_side < 1:
        raise ValueError(f"need at least one process per side, got {per_side}")
    return ["A" if i % 4 in (0, 3) else "B" for i in range(2 * per_side)]


def noise_command(argv: list[str]) -> int:
    """how small a difference this machine can show (A/A, spread, power) -> NOISE.md"""
    from bench.studies.noise.run import main

    return main(argv)


def noise_page_command(argv: list[str]) -> int:
    """render NOISE.md again from the noise study files, measuring nothing"""
    from bench.studies.noise.page import main

    return main(argv)


COMMANDS = {"noise": noise_command, "noise-page": noise_page_command}


def sections() -> list:
    from bench.studies.noise.page import SECTIONS

    return SECTIONS
