"""spectui's built-in rule library: one TOML file per rule (shipped as spectui.builtin_rules)."""
