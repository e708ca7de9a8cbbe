"""The tuning study: each tuning variant (bench/catalogue/variants.py) beside its backend's reference cell, and the
published findings beside ours. Its cells run in the matrix; `page.py` is its section.
"""
