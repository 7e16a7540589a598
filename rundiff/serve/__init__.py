"""`rundiff serve`: a local page for comparing runs from any tracker (docs/serve.md).

One engine, a thin page: every number the page shows comes from JSON endpoints that answer what
`--format json` answers (the same schema as the MCP tools), built by the same engines; the page's
script only filters, sorts, groups and draws. `command` (the subcommand's arguments), `security`
(loopback, Host header, per-launch token, roots), `catalog` (the listed runs, their table and
their growth), `thin` (curves thinned for drawing only), `app` (the Starlette routes), `assets/`
(the page: one HTML file, one script, one stylesheet; plotly.js comes from the installed plotly).

`rundiff.agents` registers the command (the hook `rundiff mcp` uses); nothing here is imported
until `rundiff serve` runs.
"""
