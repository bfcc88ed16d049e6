"""Tests of monad_cli/core/."""
