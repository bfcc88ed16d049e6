"""Words of a tool's text and of a query, as the ranker compares them.

`words(text)` splits on anything not a letter or digit and inside identifiers
(`getFileContents`, `git_diff_unstaged`, `HTTPServer` → get file contents, git diff unstaged,
http server), lowercases, drops English stop words and the words people wrap a task in ("I
want to", "please", "my"), and takes plural endings off (`stem`), so "repositories" meets
"repository" and "issues" "issue". Standard library only.
"""

from __future__ import annotations

import re
from functools import lru_cache

# Identifier pieces: an acronym before a capitalized word (HTTPServer), a capitalized or
# lowercase run, digits.
_PIECE = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")

# English function words (the Snowball English list's most common part) and the words a
# person wraps a task in: they tell nothing about which tool is meant.
STOP = frozenset((
    "a", "about", "above", "after", "again", "against", "all", "am", "an", "and", "any", "are", "as", "at", "be",
    "because", "been", "before", "being", "below", "between", "both", "but", "by", "can", "could", "did", "do",
    "does", "doing", "down", "during", "each", "few", "for", "from", "further", "had", "has", "have", "having", "he",
    "her", "here", "hers", "herself", "him", "himself", "his", "how", "i", "if", "in", "into", "is", "it", "its",
    "itself", "just", "me", "more", "most", "my", "myself", "no", "nor", "not", "now", "of", "off", "on", "once",
    "only", "or", "other", "our", "ours", "ourselves", "out", "over", "own", "same", "she", "should", "so", "some",
    "such", "than", "that", "the", "their", "theirs", "them", "themselves", "then", "there", "these", "they", "this",
    "those", "through", "to", "too", "under", "until", "up", "very", "was", "we", "were", "what", "when", "where",
    "which", "while", "who", "whom", "why", "will", "with", "would", "you", "your", "yours", "yourself",
    "yourselves", "please", "want", "wanna", "need", "needs", "like", "let", "lets", "us", "also", "using", "use",
    "via", "one", "thing", "things", "something", "got", "get", "gets", "getting", "give", "gives",
))


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """One lowercase word without its plural ending (Harman's "S" stemmer, JASIS 42(1), 1991:
    -ies → -y, -es → -e, -s → nothing; not after -us, -ss, -aes, -ees, -oes, -eies, -aies).

    Why not Snowball (PyStemmer): on the tuning part of bench/search it ranks no better at 5
    or 20 and worse at 1 (0.570 against 0.585): conflating -ed and -ing forms with a tool's
    nouns costs more than it finds, and the synonyms cover the verbs people use."""
    if len(word) <= 3:
        return word
    if word.endswith("ies") and not word.endswith(("eies", "aies")):
        return word[:-3] + "y"
    if word.endswith("es") and not word.endswith(("aes", "ees", "oes")):
        return word[:-1]
    if word.endswith("s") and not word.endswith(("us", "ss")):
        return word[:-1]
    return word


def pieces(text: str) -> list[str]:
    """`text`'s words, identifiers split, lowercased; nothing dropped or stemmed."""
    return [p.lower() for p in _PIECE.findall(text)]


def words(text: str, *, keep_stop: bool = False) -> list[str]:
    """`text`'s stemmed words without stop words (`keep_stop`: with them), in order."""
    return [stem(p) for p in pieces(text) if keep_stop or p not in STOP]


__all__ = ["STOP", "pieces", "stem", "words"]
