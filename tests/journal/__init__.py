"""Tests of monad_cli/journal/."""
