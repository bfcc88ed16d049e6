"""Tests of monad_cli/daemon/trust/."""
