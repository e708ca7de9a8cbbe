"""The tuning study: each tuning variant (bench/catalogue/variants.py) beside its backend's reference cell, and the
published findings beside ours. Its cells run in the matrix; `page.py` is its section.
"""

COMMANDS: dict = {}  # its cells run in the matrix: `python -m bench run --variant ...` (make tuning)


def sections() -> list:
    from bench.studies.tuning.page import SECTIONS

    return SECTIONS
