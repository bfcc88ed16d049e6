"""Dump real MCP servers' published `tools/list` into `bench/search/catalog/*.json`, the
evaluation set's tools (issue 40). Not run by `make bench`: its output is committed.

    python bench/search/dump_tools.py --npm DIR --py VENV [NAME...]

`--npm DIR`: a directory where the npm packages below are installed (`npm install` there);
`--py VENV`: a virtualenv where the PyPI ones are. Each file records the package, its
registry and its installed version, the command that listed it, and the tools exactly as
the server listed them (the SDK's `Tool` dumped by alias, `None`s left out). Tokens are
dummies: a server that needs one only to call, not to list, lists with it. Nothing here
reaches the network beyond what a server does at its start. Left out: servers that could
not list here (@modelcontextprotocol/server-redis connects at start; @azure-devops/mcp
needs a native keyring module built; @supabase/mcp-server-supabase, @heroku/mcp-server and
@stripe/mcp reach their service before or while listing).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import anyio
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

OUT = Path(__file__).parent / "catalog"
DUMMY = "dummy-token-for-listing-0000000000"


@dataclass
class Spec:
    name: str  # the server's name in the catalog (the gateway's prefix)
    package: str
    registry: str  # npm | pypi
    args: list[str] = field(default_factory=list)  # after the entry point
    env: dict[str, str] = field(default_factory=dict)
    bin: str | None = None  # the entry point, when it is not the package's only bin


SPECS = [
    Spec("filesystem", "@modelcontextprotocol/server-filesystem", "npm", ["{tmp}"]),
    Spec("memory", "@modelcontextprotocol/server-memory", "npm"),
    Spec("everything", "@modelcontextprotocol/server-everything", "npm"),
    Spec("thinking", "@modelcontextprotocol/server-sequential-thinking", "npm"),
    Spec("github", "@modelcontextprotocol/server-github", "npm", env={"GITHUB_PERSONAL_ACCESS_TOKEN": DUMMY}),
    Spec("gitlab", "@modelcontextprotocol/server-gitlab", "npm", env={"GITLAB_PERSONAL_ACCESS_TOKEN": DUMMY}),
    Spec("slack", "@modelcontextprotocol/server-slack", "npm",
         env={"SLACK_BOT_TOKEN": "xoxb-" + DUMMY, "SLACK_TEAM_ID": "T00000000"}),
    Spec("puppeteer", "@modelcontextprotocol/server-puppeteer", "npm"),
    Spec("postgres", "@modelcontextprotocol/server-postgres", "npm", ["postgresql://localhost/none"]),
    Spec("maps", "@modelcontextprotocol/server-google-maps", "npm", env={"GOOGLE_MAPS_API_KEY": DUMMY}),
    Spec("brave", "@modelcontextprotocol/server-brave-search", "npm", env={"BRAVE_API_KEY": DUMMY}),
    Spec("awskb", "@modelcontextprotocol/server-aws-kb-retrieval", "npm",
         env={"AWS_ACCESS_KEY_ID": DUMMY, "AWS_SECRET_ACCESS_KEY": DUMMY, "AWS_REGION": "us-east-1"}),
    Spec("playwright", "@playwright/mcp", "npm", ["--caps=vision,pdf,testing,tracing"]),
    Spec("devtools", "chrome-devtools-mcp", "npm"),
    Spec("notion", "@notionhq/notion-mcp-server", "npm", env={"NOTION_TOKEN": DUMMY}),
    Spec("mongodb", "mongodb-mcp-server", "npm", env={"MDB_MCP_CONNECTION_STRING": "mongodb://localhost:27099"}),
    Spec("circleci", "@circleci/mcp-server-circleci", "npm", env={"CIRCLECI_TOKEN": DUMMY}),
    Spec("firecrawl", "firecrawl-mcp", "npm", env={"FIRECRAWL_API_KEY": "fc-" + DUMMY}),
    Spec("tavily", "tavily-mcp", "npm", env={"TAVILY_API_KEY": "tvly-" + DUMMY}),
    Spec("datadog", "@winor30/mcp-server-datadog", "npm", env={"DATADOG_API_KEY": DUMMY, "DATADOG_APP_KEY": DUMMY}),
    Spec("chart", "@antv/mcp-server-chart", "npm"),
    Spec("gitlabx", "@zereight/mcp-gitlab", "npm", env={"GITLAB_PERSONAL_ACCESS_TOKEN": DUMMY}),
    Spec("sentry", "@sentry/mcp-server", "npm", ["--access-token", DUMMY]),
    Spec("context7", "@upstash/context7-mcp", "npm"),
    Spec("figma", "figma-developer-mcp", "npm", ["--stdio", "--figma-api-key", DUMMY]),
    Spec("eslint", "@eslint/mcp", "npm"),
    Spec("playwrightx", "@executeautomation/playwright-mcp-server", "npm"),
    Spec("kubernetes", "mcp-server-kubernetes", "npm"),
    Spec("hubspot", "@hubspot/mcp-server", "npm", env={"PRIVATE_APP_ACCESS_TOKEN": DUMMY}),
    Spec("desktop", "@wonderwhy-er/desktop-commander", "npm"),
    Spec("git", "mcp-server-git", "pypi"),
    Spec("fetch", "mcp-server-fetch", "pypi"),
    Spec("time", "mcp-server-time", "pypi", ["--local-timezone", "UTC"]),
    Spec("sqlite", "mcp-server-sqlite", "pypi", ["--db-path", "{tmp}/x.db"]),
    Spec("atlassian", "mcp-atlassian", "pypi",
         env={"JIRA_URL": "https://example.atlassian.net", "JIRA_USERNAME": "a@example.com", "JIRA_API_TOKEN": DUMMY,
              "CONFLUENCE_URL": "https://example.atlassian.net/wiki", "CONFLUENCE_USERNAME": "a@example.com",
              "CONFLUENCE_API_TOKEN": DUMMY}),
]


def _npm_entry(npm: Path, spec: Spec) -> tuple[list[str], str]:
    pkg_dir = npm / "node_modules" / spec.package
    meta = json.loads((pkg_dir / "package.json").read_text())
    bins = meta.get("bin")
    if isinstance(bins, str):
        entry = bins
    else:
        entry = bins[spec.bin] if spec.bin else next(iter(bins.values()))
    return ["node", str(pkg_dir / entry)], meta["version"]


def _py_entry(venv: Path, spec: Spec) -> tuple[list[str], str]:
    from importlib.metadata import PathDistribution

    site = next((venv / "lib").glob("python*/site-packages"))
    dist_info = next(site.glob(spec.package.replace("-", "_") + "-*.dist-info"))
    version = PathDistribution(dist_info).version
    return [str(venv / "bin" / spec.package)], version


async def dump(spec: Spec, npm: Path, venv: Path, tmp: str) -> None:
    command, version = _npm_entry(npm, spec) if spec.registry == "npm" else _py_entry(venv, spec)
    args = [*command[1:], *(a.replace("{tmp}", tmp) for a in spec.args)]
    env = {"PATH": os.environ["PATH"], "HOME": tmp, **spec.env}
    params = StdioServerParameters(command=command[0], args=args, env=env)
    with open(os.devnull, "w") as errlog, anyio.fail_after(90):
        async with Client(stdio_client(params, errlog=errlog)) as client:
            tools, cursor = [], None
            while True:
                page = await client.list_tools(cursor=cursor)
                tools += [t.model_dump(by_alias=True, mode="json", exclude_none=True) for t in page.tools]
                cursor = page.next_cursor
                if not cursor:
                    break
    record = {"server": spec.name, "package": spec.package, "registry": spec.registry, "version": version,
              "args": [a.replace("{tmp}", "DIR") for a in spec.args], "env": sorted(spec.env), "tools": tools}
    OUT.mkdir(exist_ok=True)
    (OUT / f"{spec.name}.json").write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n")
    print(f"{spec.name}: {spec.package} {version}: {len(tools)} tools")


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--npm", type=Path, required=True)
    parser.add_argument("--py", type=Path, required=True)
    parser.add_argument("names", nargs="*")
    a = parser.parse_args()
    for spec in SPECS:
        if a.names and spec.name not in a.names:
            continue
        with tempfile.TemporaryDirectory() as tmp:
            try:
                await dump(spec, a.npm, a.py, tmp)
            except Exception as e:  # noqa: BLE001 - one server's failure: say it, go on
                print(f"{spec.name}: FAILED: {type(e).__name__}: {e}", file=sys.stderr)


if __name__ == "__main__":
    anyio.run(main)
