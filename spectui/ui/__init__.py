"""Everything Textual: the cockpit app, its screens and widgets."""
