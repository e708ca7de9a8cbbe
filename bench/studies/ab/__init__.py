"""`make ab`: one cell (or several) re-measured on two sides, A and B, interleaved in one invocation."""
