"""Tests of monad_cli/daemon/gateway/."""
