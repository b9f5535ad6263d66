"""Behaviour the cockpit's dashboard screen is assembled from (not screens themselves): `logkeys` (the log
pane's keys: search, filter, errors, follow), `stalewatch` (figures greyed "as of" when the log goes
quiet), `serverwatch` (liveness probes and a successor server, built on stalewatch)."""
