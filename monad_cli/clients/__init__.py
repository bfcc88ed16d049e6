"""Other MCP clients' config files: `monad mcp import`, `connect` and `export` (docs/clients.md),
and the Studio's Agents page, which connects a client through the same code.

`format` says what a client's file format is to monad (`ClientFormat`); one module per
format implements it: `mcp_json` (the `mcpServers` object of Claude Desktop, Claude Code,
Cursor, Gemini CLI, Antigravity CLI, Copilot CLI and plain `.mcp.json`), `vscode`, `codex`,
`opencode`, `zed`, `goose`, `aura`. `registry` names the clients and their usual files;
`importer`, `connector` and `exporter` do the three jobs over any format. Shared by the CLI
and the supervisor; nothing here imports the MCP SDK.
"""
