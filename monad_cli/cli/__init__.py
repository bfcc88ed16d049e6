"""The `monad` program: the CLI people and scripts run. It never imports `daemon/`
(but the launcher of `monad daemon run`), and stays light: no MCP SDK, no HTTP stack."""
