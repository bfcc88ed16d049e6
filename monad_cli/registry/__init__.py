"""Installing servers by name: the MCP Registry API, `server.json`, and MCP bundles (docs/registry.md).

`api` speaks the registry's HTTP API (v0.1) to the registries of `settings.toml` (httpx2,
imported only here: `monad mcp add NAME -- COMMAND` never loads it); `serverjson` turns a
`server.json` into a monad definition and the variables it needs; `variables` gathers
their values (a terminal asks, else `--env`/`--header`/`--arg`); `bundles` checks, unpacks
and reads `.mcpb` files; `install` puts it together for `add`, `outdated` and `upgrade`.
Nothing here imports the MCP SDK, typer or either program: `monad mcp add NAME` (the CLI,
which asks a terminal) and the Studio's Install (the supervisor, which gets the values from
its form) both call `install.install_by_name`.
"""
