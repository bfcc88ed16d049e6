"""Tests of monad_cli/config/."""
