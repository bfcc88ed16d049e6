"""Other MCP clients' config files: `monad mcp import`, `connect` and `export` (docs/clients.md).

One module per format, each reading and writing it: `mcp_json` (the `mcpServers` object of
Claude Desktop, Claude Code, Cursor, Gemini CLI and plain `.mcp.json`), `vscode`, `codex`,
`aura`. `registry` names the clients and their usual files; `importer`, `connector` and
`exporter` do the three jobs over those modules. Nothing here imports the MCP SDK.
"""
