"""The supervisor: one long-lived process per MONAD_HOME that owns every MCP session."""
