"""Tests of the `monad` program's own modules (monad_cli/cli/)."""
