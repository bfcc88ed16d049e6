"""A BM25F index over tools: which tools a person's words most likely mean.

One `ToolIndex` holds one document per tool, of four fields: the tool's own name and title
(split into words: `git_diff_unstaged` → git diff unstaged), its server's name, its
description, and its parameters (names and descriptions, top level of `inputSchema`). A
query's words are matched against each field's stemmed words (`search/text.py`) and
scored by BM25F (Robertson, Zaragoza & Taylor, "Simple BM25 extension to multiple weighted
fields", CIKM 2004): a word's counts in the fields are weighted and length-normalized per
field, summed, and saturated once (`k1`), times the word's IDF over the whole catalog. A
query word the catalog does not hold is also looked for through the field's synonyms
(`search/synonyms.py`), at a lower weight.

Memory: each (word, tool) pair is one entry of two `array`s (a 4-byte tool number and its
4-byte score), built once per catalog: ~41 pairs a tool on bench/search's real tools, so
~200k pairs (under 2 MB) at 5,000 tools. Nothing of the tools' text is kept but their names.

Why not `rank-bm25` or `bm25s`: both score a single field (BM25, not BM25F), and both bring
numpy (and bm25s scipy: tens of MB of RSS) into the supervisor, whose index costs ~7 MiB at
5,000 tools (bench/bench_search.py); the scoring loop is twenty lines.
"""

from __future__ import annotations

import heapq
import math
from array import array
from collections import Counter
from collections.abc import Generator, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from monad_cli.search.synonyms import Synonyms
from monad_cli.search.text import words

FIELDS = ("name", "server", "description", "params")


@dataclass(frozen=True)
class Weights:
    """BM25F's parameters: each field's weight and length normalization (`b`), and `k1`."""

    name: float = 5.0
    server: float = 1.0
    description: float = 1.0
    params: float = 0.2
    b_name: float = 0.3
    b_server: float = 0.0
    b_description: float = 0.75
    b_params: float = 0.75
    k1: float = 1.2
    synonym: float = 0.6  # a synonym's match counts this much of the word's own

    def weight(self, field: str) -> float:
        return float(getattr(self, field))

    def b(self, field: str) -> float:
        return float(getattr(self, f"b_{field}"))


@dataclass(frozen=True)
class ToolDoc:
    """One tool as the index reads it: `name` is what a hit returns (the gateway's exposed
    name), `tool` the server's own name, `server` the server's."""

    name: str
    server: str
    tool: str
    description: str = ""
    title: str = ""
    input_schema: Mapping[str, Any] | None = None

    @classmethod
    def from_wire(cls, name: str, server: str, tool: Mapping[str, Any]) -> ToolDoc:
        """From a tool's wire shape (MCP spec, server/tools `Tool`): `name`, `title`,
        `description`, `inputSchema`, `annotations.title`."""
        title = tool.get("title") or (tool.get("annotations") or {}).get("title") or ""
        return cls(name=name, server=server, tool=str(tool.get("name", name)),
                   description=str(tool.get("description") or ""), title=str(title),
                   input_schema=tool.get("inputSchema") if isinstance(tool.get("inputSchema"), Mapping) else None)

    def fields(self) -> dict[str, list[str]]:
        params: list[str] = []
        props = (self.input_schema or {}).get("properties")
        if isinstance(props, Mapping):
            for key, prop in props.items():
                params += words(str(key))
                if isinstance(prop, Mapping) and isinstance(prop.get("description"), str):
                    params += words(prop["description"])
        return {"name": words(f"{self.tool} {self.title}"), "server": words(self.server),
                "description": words(self.description), "params": params}


def analyze(doc: ToolDoc) -> tuple[str, ...]:
    """A document's stemmed words, one space-joined string per field of `FIELDS` (the costly
    part of building an index: callers that rebuild often keep these per tool)."""
    return tuple(" ".join(ws) for ws in doc.fields().values())


class ToolIndex:
    """BM25F over a fixed set of tools (see the module docstring); build a new one when
    the set changes. `search` is pure: safe to share between sessions."""

    def __init__(self, docs: Sequence[tuple[str, Sequence[str]]], *, weights: Weights | None = None,
                 synonyms: Synonyms | None = None, _steps: bool = False) -> None:
        """`docs`: (name, `analyze(doc)`) pairs. Built in two passes over the words, straight
        into the postings' arrays: no per-document counts are kept (at 5,000 tools they
        would cost more than the index). See `steps` for a build in slices."""
        self.weights = weights or Weights()
        self.synonyms = synonyms if synonyms is not None else Synonyms.default()
        self.names = [name for name, _ in docs]
        self._postings: dict[str, tuple[array[int], array[float]]] = {}
        if not _steps:
            for _ in self._fill(docs, 0):
                pass

    @classmethod
    def steps(cls, docs: Sequence[tuple[str, Sequence[str]]], every: int = 250, *,
              weights: Weights | None = None, synonyms: Synonyms | None = None) -> Generator[None, None, ToolIndex]:
        """Build the index in slices of `every` documents: a generator yielding between
        slices (an event loop may run other work there) and returning the index."""
        index = cls(docs, weights=weights, synonyms=synonyms, _steps=True)
        yield from index._fill(docs, every)
        return index

    def _fill(self, docs: Sequence[tuple[str, Sequence[str]]], every: int) -> Iterator[None]:
        w = self.weights
        n = len(docs)
        lengths = [array("I", (len(fields[f].split()) for _, fields in docs)) for f in range(len(FIELDS))]
        avg = [(sum(ls) / n if n else 0.0) or 1.0 for ls in lengths]
        factor = [w.weight(f) for f in FIELDS]
        b = [w.b(f) for f in FIELDS]
        ids: dict[str, array[int]] = {}
        tfs: dict[str, array[float]] = {}
        for i, (_, fields) in enumerate(docs):
            if every and i and i % every == 0:
                yield
            pseudo: dict[str, float] = {}
            for f, text in enumerate(fields):
                if not text:
                    continue
                norm = factor[f] / (1 - b[f] + b[f] * lengths[f][i] / avg[f])
                for word, tf in Counter(text.split()).items():
                    pseudo[word] = pseudo.get(word, 0.0) + tf * norm
            for word, t in pseudo.items():
                if word not in ids:
                    ids[word], tfs[word] = array("I"), array("f")
                ids[word].append(i)
                tfs[word].append(t)
        k1 = w.k1
        for word, doc_ids in ids.items():
            df = len(doc_ids)
            idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
            self._postings[word] = (doc_ids, array("f", (idf * t / (k1 + t) for t in tfs[word])))

    def __len__(self) -> int:
        return len(self.names)

    def scores(self, query: str) -> dict[int, float]:
        """Each matching tool's score (by its position in `names`)."""
        total: dict[int, float] = {}
        for concept in self.synonyms.expand(words(query), self.weights.synonym):
            best: dict[int, float] = {}
            for phrase, factor in concept:
                summed: dict[int, float] = {}
                for word in phrase:
                    posting = self._postings.get(word)
                    if posting is not None:
                        for i, s in zip(*posting, strict=True):
                            summed[i] = summed.get(i, 0.0) + s
                for i, s in summed.items():
                    if s * factor > best.get(i, 0.0):
                        best[i] = s * factor
            for i, s in best.items():
                total[i] = total.get(i, 0.0) + s
        return total

    def search(self, query: str, limit: int = 8, *, among: Any = None) -> list[tuple[str, float]]:
        """The `limit` best (name, score) pairs for `query`, best first; `among`: a container
        of names to keep (others are skipped). Ties go to the name that sorts first."""
        names = self.names
        ranked = heapq.nsmallest(limit, ((-s, names[i]) for i, s in self.scores(query).items()
                                         if among is None or names[i] in among))
        return [(name, -s) for s, name in ranked]


__all__ = ["FIELDS", "ToolDoc", "ToolIndex", "Weights", "analyze"]
