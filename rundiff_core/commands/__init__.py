"""One module per CLI command: `add_parser(subparsers)` registers it and sets `func`."""
