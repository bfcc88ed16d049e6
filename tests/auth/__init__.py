"""Tests of monad_cli/auth/."""
