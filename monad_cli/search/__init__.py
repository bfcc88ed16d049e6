"""Tool search: which of the catalog's tools a person's words mean (issue 40).

Pure and offline: it reads tool definitions and a query, never the daemon, the network or a
model file. `ToolIndex` (BM25F with stemming and the field's synonyms, `search/index.py`)
is the ranker the gateway's `find_tool` and the Studio's search box use;
bench/search/ measures it on real servers' tools.
"""

from monad_cli.search.index import ToolDoc, ToolIndex, Weights, analyze

__all__ = ["ToolDoc", "ToolIndex", "Weights", "analyze"]
