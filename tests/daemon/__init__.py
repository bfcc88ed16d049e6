"""Tests of the supervisor's modules, in-process (monad_cli/daemon/)."""
