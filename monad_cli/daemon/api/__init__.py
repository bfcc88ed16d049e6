"""The control API: HTTP over the unix socket `run/monad.sock`, versioned under /v1/."""
