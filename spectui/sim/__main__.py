"""`python -m spectui.sim`: run the simulated SGLang server in the foreground, like `python -m sglang.launch_server`."""

from spectui.sim.cli import main

raise SystemExit(main())
