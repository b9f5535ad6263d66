"""spectui: a terminal cockpit for SGLang speculative decoding."""

__version__ = "0.1.0"
