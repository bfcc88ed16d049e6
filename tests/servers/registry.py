"""A small MCP Registry for tests: the v0.1 read API over a folder of server.json files.

    python registry.py PORT FOLDER [--page N]

    GET /v0.1/servers?search=&version=latest&cursor=&limit=   (pages of at most N, default 2)
    GET /v0.1/servers/{name}/versions
    GET /v0.1/servers/{name}/versions/{version|latest}
    GET /files/NAME                                           (FOLDER/files/NAME: bundles)

Every `*.json` in FOLDER is one version of one server (its `name` and `version`; a
hostile registry's entry can be served under another name, `_testServeAs`); the folder is
read on each request, so a test can publish a new version while it runs. Cursors
are opaque tokens, as the API says they are; `latest` is the highest version (numeric
parts compared as numbers). Answers follow the API's shapes:
`{"servers": [{"server": ..., "_meta": {"io.modelcontextprotocol.registry/official": ...}}],
"metadata": {"nextCursor", "count"}}`.
"""

from __future__ import annotations

import base64
import json
import re
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

FOLDER = Path(sys.argv[2])
PAGE = int(sys.argv[sys.argv.index("--page") + 1]) if "--page" in sys.argv else 2
OFFICIAL = "io.modelcontextprotocol.registry/official"


def _version_key(v: str) -> tuple[Any, ...]:
    return tuple((0, int(p)) if p.isdigit() else (1, p) for p in re.split(r"[.+-]", v))


def _all() -> dict[str, list[dict[str, Any]]]:
    by_name: dict[str, list[dict[str, Any]]] = {}
    for f in sorted(FOLDER.glob("*.json")):
        doc = json.loads(f.read_text())
        by_name.setdefault(doc.get("_testServeAs", doc["name"]), []).append(doc)
    for docs in by_name.values():
        docs.sort(key=lambda d: _version_key(d["version"]))
    return by_name


def _wrap(doc: dict[str, Any], latest: bool) -> dict[str, Any]:
    return {"server": doc, "_meta": {OFFICIAL: {"status": doc.get("_testStatus", "active"), "isLatest": latest,
                                                "publishedAt": "2026-01-01T00:00:00Z"}}}


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args: Any) -> None:
        pass

    def _send(self, status: int, body: Any, ctype: str = "application/json") -> None:
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        url = urlsplit(self.path)
        query = {k: v[0] for k, v in parse_qs(url.query).items()}
        if url.path.startswith("/files/"):
            f = FOLDER / "files" / unquote(url.path[len("/files/"):])
            if f.is_file():
                return self._send(200, f.read_bytes(), "application/octet-stream")
            return self._send(404, {"error": "not found"})
        if url.path == "/v0.1/servers":
            return self._list(query)
        m = re.fullmatch(r"/v0\.1/servers/([^/]+)/versions(?:/([^/]+))?", url.path)
        if m is None:
            return self._send(404, {"error": "not found"})
        docs = _all().get(unquote(m.group(1)))
        if not docs:
            return self._send(404, {"error": "server not found"})
        if m.group(2) is None:
            return self._send(200, {"servers": [_wrap(d, d is docs[-1]) for d in docs],
                                    "metadata": {"count": len(docs)}})
        version = unquote(m.group(2))
        doc = docs[-1] if version == "latest" else next((d for d in docs if d["version"] == version), None)
        if doc is None:
            return self._send(404, {"error": "version not found"})
        return self._send(200, _wrap(doc, doc is docs[-1]))

    def _list(self, query: dict[str, str]) -> None:
        text = query.get("search", "").lower()
        rows = []
        for name, docs in sorted(_all().items()):
            for d in docs if query.get("version") != "latest" else docs[-1:]:
                if text in name.lower() or text in str(d.get("description", "")).lower():
                    rows.append(_wrap(d, d is docs[-1]))
        start = int(base64.urlsafe_b64decode(query["cursor"]).decode()) if query.get("cursor") else 0
        size = min(PAGE, int(query.get("limit", PAGE)))
        page = rows[start:start + size]
        more = start + size < len(rows)
        cursor = base64.urlsafe_b64encode(str(start + size).encode()).decode() if more else None
        self._send(200, {"servers": page, "metadata": {"nextCursor": cursor, "count": len(page)}})


if __name__ == "__main__":
    ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
