"""Tests of monad_cli/daemon/telemetry/."""
