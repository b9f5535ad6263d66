"""The sweep: a grid of speculative configurations, each relaunched, warmed up and benched, kept in a
journal. `run` (Sweep, SweepOptions: the orchestration), `plan` (the grid, the planned configs, the time
estimate), `baseline` (the no-speculation measure), `journal` (the resumable JSONL), `results` (the
summary, the best config). Callers import from the module they need (the package imports nothing)."""
