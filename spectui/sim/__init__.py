"""A simulated SGLang server: same CLI, log formats and HTTP endpoints, no GPU."""
