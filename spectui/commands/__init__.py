"""One module per CLI subcommand: add_arguments(parser) and run(args) -> exit code. Heavy imports stay inside run()."""
