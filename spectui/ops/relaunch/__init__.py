"""Relaunch: a running (or gone) server started again with edited flags, as one transaction. `run` (prepare,
execute, start_known: the orchestration), `plan` (Edits, RelaunchPlan: the diff and verdict), `runner` (the
steps: stop the group, wait for the port and GPUs, start, watch health, roll back), `health` (the new
launch's log and /health judged), `known` (a command known from history or a log, for a gone server),
`owner` (acting as the process's owner or not at all), `hostjudge` (a source build judged by the host's own
SGLang), `outcome` (RelaunchResult). Callers import from the module they need (the package imports nothing)."""
