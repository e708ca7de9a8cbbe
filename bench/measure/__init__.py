"""What runs inside a cell's process: the cell, its drivers, each framework's device, the drift reference, what every
process in an environment does first, and the machine's ceiling probe and the frameworks' own FLOP counters.
"""
