"""The result file: what a measurement writes and everything else reads (Result, Run), its schema and the schema's doc,
its checks, its text forms, its upkeep, and result files loaded as tables.
"""
