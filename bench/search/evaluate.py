"""Recall of the tool search ranker on real servers' tools (issue 40, item 4).

    python bench/search/evaluate.py [--misses] [--json]

The catalog is `bench/search/catalog/*.json` (dumped by dump_tools.py: package, version,
the tools as listed), exposed as the gateway exposes them (`server__tool`). The queries are
`bench/search/queries.tsv`: a task as a person would put it, a tab, the exposed name(s) of
the tool(s) that answer it (any of them counts). A query is **held out** when the first
byte of the sha256 of its text (UTF-8, as written) is below 77 (about 30 %): decided by
the text alone before any tuning, so neither the table of synonyms nor the weights were
ever fitted on them. `--misses` prints the tuning part's misses only; the held-out part's
are never printed.

Prints recall@1 and recall@5 (and @20) on each part, and the latency of one query.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from monad_cli.core.tool_names import build_name_map  # noqa: E402
from monad_cli.search import ToolDoc, ToolIndex, analyze  # noqa: E402

HERE = Path(__file__).parent
HELD_OUT_BELOW = 77  # of 256: ~30 %


def held_out(query: str) -> bool:
    return hashlib.sha256(query.encode()).digest()[0] < HELD_OUT_BELOW


def load_catalog(directory: Path = HERE / "catalog") -> list[ToolDoc]:
    servers = [json.loads(p.read_text()) for p in sorted(directory.glob("*.json"))]
    names = build_name_map((s["server"], t["name"]) for s in servers for t in s["tools"])
    return [ToolDoc.from_wire(names.exposed_name(s["server"], t["name"]) or t["name"], s["server"], t)
            for s in servers for t in s["tools"]]


def load_queries(path: Path = HERE / "queries.tsv") -> list[tuple[str, set[str]]]:
    out = []
    for n, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        query, _, answers = line.partition("\t")
        if not answers.strip():
            raise SystemExit(f"{path.name}:{n}: no answer after a tab")
        out.append((query.strip(), set(answers.split())))
    return out


def recall(index: ToolIndex, queries: list[tuple[str, set[str]]], k: int) -> float:
    hits = sum(1 for q, answers in queries if answers & {n for n, _ in index.search(q, k)})
    return hits / len(queries) if queries else 0.0


def ablation(docs: list[ToolDoc], parts: dict[str, list[tuple[str, set[str]]]]) -> None:
    """Recall with parts of the ranker taken away: what each buys."""
    from monad_cli.search import Weights
    from monad_cli.search.synonyms import Synonyms

    single = Weights(name=1.0, server=0.0, description=1.0, params=0.0, b_name=0.75, b_description=0.75)
    analyzed = [(d.name, analyze(d)) for d in docs]
    for label, weights, synonyms in (("BM25 over names + descriptions", single, Synonyms()),
                                     ("+ field weights (BM25F)", Weights(), Synonyms()),
                                     ("+ synonyms (the default)", Weights(), Synonyms.default())):
        index = ToolIndex(analyzed, weights=weights, synonyms=synonyms)
        row = "  ".join(f"{part} @1 {recall(index, qs, 1):.3f} @5 {recall(index, qs, 5):.3f}"
                        for part, qs in parts.items())
        print(f"  {label:32} {row}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--misses", action="store_true", help="print the tuning part's misses at 5")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--ablation", action="store_true", help="also each part of the ranker taken away")
    a = parser.parse_args()
    docs = load_catalog()
    known = {d.name for d in docs}
    queries = load_queries()
    bad = sorted({n for _, ans in queries for n in ans} - known)
    if bad:
        raise SystemExit(f"queries.tsv names tools the catalog lacks: {', '.join(bad)}")
    started = time.perf_counter()
    index = ToolIndex([(d.name, analyze(d)) for d in docs])
    build_ms = (time.perf_counter() - started) * 1000
    parts = {"tune": [q for q in queries if not held_out(q[0])], "held-out": [q for q in queries if held_out(q[0])]}
    report: dict[str, object] = {"tools": len(docs), "servers": len({d.server for d in docs}),
                                 "queries": len(queries), "buildMs": round(build_ms, 1)}
    for part, qs in parts.items():
        report[part] = {"n": len(qs), **{f"recall@{k}": round(recall(index, qs, k), 3) for k in (1, 5, 20)}}
    started = time.perf_counter()
    for q, _ in queries:
        index.search(q, 8)
    report["queryMs"] = round((time.perf_counter() - started) * 1000 / len(queries), 3)
    if a.json:
        print(json.dumps(report))
    else:
        print(f"{report['tools']} tools of {report['servers']} servers, {report['queries']} queries; "
              f"index built in {report['buildMs']} ms, {report['queryMs']} ms a query")
        for part in parts:
            r = report[part]
            assert isinstance(r, dict)
            print(f"  {part:9} n={r['n']:3}  recall@1 {r['recall@1']:.3f}  recall@5 {r['recall@5']:.3f}  "
                  f"recall@20 {r['recall@20']:.3f}")
    if a.ablation:
        ablation(docs, parts)
    if a.misses:
        for q, answers in parts["tune"]:
            got = [n for n, _ in index.search(q, 5)]
            if not answers & set(got):
                print(f"MISS {q!r}: want {' '.join(sorted(answers))}; got {' '.join(got)}")


if __name__ == "__main__":
    main()
