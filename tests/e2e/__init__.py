"""End-to-end tests: the real supervisor as a subprocess, the real CLI, real servers."""
