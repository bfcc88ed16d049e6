"""monad: manage the MCP servers a person's agents use (CLI + supervisor)."""

__version__ = "0.1.0"
