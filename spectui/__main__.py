"""`python -m spectui` runs the CLI."""

from spectui.cli import main

raise SystemExit(main())
