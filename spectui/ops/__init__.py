"""Actions that change a host: relaunch (stop by process group, start detached, health, rollback)."""
