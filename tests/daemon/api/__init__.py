"""Tests of monad_cli/daemon/api/."""
