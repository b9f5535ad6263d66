"""Pure core: log parsing, metrics, launch commands, flag resolution, rules. Stdlib + pydantic only."""
