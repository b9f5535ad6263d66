"""One server spread over several processes (multi-node TP/PP, PD): `members` (recognising the group from
the launch flags), `relaunch` (the group relaunched whole, as one transaction), `result` (its plan and
outcome, shaped like a single relaunch's). Callers import from the module they need (the package imports
nothing)."""
