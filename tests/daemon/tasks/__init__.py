"""Tests of monad_cli/daemon/tasks/."""
