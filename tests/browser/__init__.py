"""The Studio in Chromium, driven by Playwright (with axe-core)."""
