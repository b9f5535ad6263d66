"""Bench against a running server: `run` (run_bench: warm-up, the load, the server's own figures, the
recorded result), `baseline` (the same load without speculation, the command put back), `history` (the one
reader of the bench results file). Callers import from the module they need (the package imports nothing)."""
