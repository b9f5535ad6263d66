"""Screens of the cockpit."""
