"""Tests of monad_cli/daemon/studio/."""
