"""Widgets of the cockpit: one widget per module, no I/O."""
