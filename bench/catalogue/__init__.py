"""What can be run and what it costs: backends, profiles, specs, variants, the registry of models and cells, each step's
work, cost, each cell's resolved configuration, compile caches, the offline rule and the datasheets of GPUs.
"""
