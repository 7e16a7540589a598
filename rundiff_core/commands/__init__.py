"""One module per CLI command, added by the built-in plugin (`rundiff_core.builtins`).

`add_parser(sub)` receives the `CommandHost` plugins get and calls `sub.add_parser(...)` as on an
argparse subparsers action, then sets `func=run`. Only `run` imports engines and renderers, so
building the command line (`rundiff --help`) imports no pandas or numpy.
"""
