"""Tests of monad_cli/tools/."""
