"""A stand-in for a person's browser, used through `$BROWSER` (Python's `webbrowser`).

    headless_browser.py URL

Appends the URL it was given to `$HEADLESS_BROWSER_LOG` (so tests can tell whether a
browser was started, and what its command line held), then GETs it and follows redirects,
as a browser would after the person approved: the authorization server redirects to
monad's loopback listener. A `file://` URL is a redirect page (core/redirect_file.py): its
`<meta http-equiv="refresh">` URL is appended to `$HEADLESS_BROWSER_LOG.followed` and opened.
`$HEADLESS_BROWSER_MODE=log-only` only records the URL.
"""

from __future__ import annotations

import os
import sys

import httpx2


def main() -> int:
    url = sys.argv[-1]
    log = os.environ.get("HEADLESS_BROWSER_LOG")
    if log:
        with open(log, "a") as f:
            f.write(url + "\n")
    if os.environ.get("HEADLESS_BROWSER_MODE") == "log-only":
        return 0
    if url.startswith("file://"):
        import html
        import re
        from urllib.parse import unquote, urlsplit

        with open(unquote(urlsplit(url).path), encoding="utf-8") as f:
            page = f.read()
        found = re.search(r'http-equiv="refresh" content="0;url=([^"]*)"', page)
        if found is None:
            return 1
        url = html.unescape(found.group(1))
        if log:
            with open(log + ".followed", "a") as f:
                f.write(url + "\n")
    with httpx2.Client(follow_redirects=True, timeout=30) as client:
        client.get(url)
    return 0


if __name__ == "__main__":
    sys.exit(main())
