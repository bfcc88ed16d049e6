"""`monad mcp serve`: one MCP server exposing every connected server's tools (the gateway)."""
