"""Several servers in one cockpit: one tab per server (or per multi-node group), a summary strip, switching keys.

`connect` with one target keeps the plain SpectuiApp; several targets (or a fleet) open a TabbedApp.
"""
