"""A toy study, the worked example of docs/ADDING_A_STUDY.md (tests/test_new_study.py adds it to a copy of the
package): `python -m bench toy` counts the result files of a results folder, and its section says, once a machine,
how many cells that machine's table holds. Its package exports what the registry reads, importing nothing heavy."""


def toy_command(argv: list[str]) -> int:
    """the toy study: count a results folder's result files"""
    from bench.studies.toy.run import main

    return main(argv)


COMMANDS = {"toy": toy_command}


def sections() -> list:
    from bench.studies.toy.page import SECTIONS

    return SECTIONS
