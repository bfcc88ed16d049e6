"""Tests of monad_cli/daemon/sandbox/."""
