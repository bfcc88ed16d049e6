"""Tests of monad_cli/daemon/sessions/."""
