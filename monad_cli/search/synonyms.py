"""The field's synonyms: words people use for what tool descriptions say otherwise.

A person asks "what changed in my working tree?"; the tool says "Shows changes in the
working directory that are not yet staged". The table below groups words and short phrases
that mean the same to someone using developer and office tools (`change` / `diff` /
`modified`, `pull request` / `PR` / `merge request`, `ticket` / `issue`). A query's word
or phrase found in a group is scored as the best of itself and of each other member of its
group, a member other than the query's own counting `Weights.synonym` of its score
(`search/index.py`). Members are compared stemmed (`search/text.py`).

Groups are symmetric, so the table stays small and readable; a word in two groups gets
both. Written from the words of the domain, and extended only from the tuning part of the
evaluation set (bench/search/README.md says how it is split).
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from monad_cli.search.text import words

# One group a line, members separated by commas.
TABLE = """
change, diff, modified, modification, edit, delta, differ, difference
working tree, working directory, workspace, unstaged, uncommitted, local changes
stage, staged, add to index, index
commit, check in, revision, changeset
history, log, past commits, previous commits
branch, checkout, switch
repository, repo, project, codebase
pull request, pr, merge request, mr, code review
issue, ticket, bug, task, work item, story, epic
comment, reply, note, remark
file, document, doc
folder, directory, dir
read, open, view, show, display, print, cat, contents, content
write, save, store, put, create
edit, modify, update, change, patch, replace
delete, remove, erase, drop, destroy, trash
rename, move, mv
search, find, look up, lookup, query, grep, locate
list, enumerate, all, browse
web page, webpage, website, site, url, link, page
browser, chrome, chromium, web page
screenshot, capture, snapshot, screen, picture, image
click, press, tap
type, fill, enter, input, keyboard
navigate, go to, visit, open url, load
scroll, wheel
download, fetch, retrieve, pull
upload, attach, attachment
time, clock, hour, date
timezone, time zone, tz
convert, translate, transform
database, db, sql, table, schema
query, select, sql
collection, table
document, record, row, entry
index, indexes
message, chat, post, dm, send
channel, room, conversation
user, member, person, people, profile, account, assignee
team, group, organization, org
notify, notification, alert, alerts
monitor, monitoring, metric, metrics, observability
log, logs, logging, trace, traces
error, exception, crash, failure, failed, problem
incident, outage, page, pager
deploy, deployment, release, ship, rollout
build, pipeline, job, workflow, ci
test, tests, testing, spec
run, execute, start, launch, trigger, invoke
stop, cancel, kill, abort, halt
wait, sleep, pause, delay
think, reason, reasoning, plan, step by step, thought
remember, memory, memorize, knowledge graph, recall, note
entity, node, object
relation, relationship, link, edge, connection
observation, fact, note
map, maps, location, place, address, geocode, coordinates
direction, directions, route, navigation, travel
distance, far, how long
nearby, near, around, close to
weather, forecast, temperature
chart, graph, plot, visualize, visualization, diagram
bar chart, column chart, histogram
pie chart, donut
line chart, trend, time series
page, wiki, confluence, notion page, doc
space, workspace
sprint, iteration, board, agile
label, tag, tags
star, favorite
fork, copy
clone, copy
merge, combine, integrate
tag, release, version
secret, credential, token, key, api key, password
permission, access, role, rights
summarize, summary, overview, describe
explain, describe, details, detail, info, information, metadata
count, how many, number of, total
size, length, dimensions
sort, order, rank
filter, where, matching
schedule, calendar, event, meeting, appointment
email, mail, inbox, message
cost, price, billing, invoice, payment, charge
customer, client, contact
form, field, input
dialog, popup, alert, modal, prompt
tab, window, page
console, devtools, developer tools
network, request, requests, http, traffic
performance, speed, slow, fast, latency, profile, trace
cookie, storage, local storage, session
element, selector, node, dom
hover, mouse over, mouseover
drag, drop, drag and drop
pdf, document
scrape, crawl, extract, scraping, crawling
research, investigate, deep dive
documentation, docs, manual, reference, api docs, library docs
package, library, dependency, module
cluster, kubernetes, k8s, pod, pods
container, docker, image
server, host, instance, machine
function, lambda, edge function
environment, env, variable
migration, migrate, schema change
lint, linter, eslint, style check
format, formatting, prettier
design, figma, mockup, frame
tweet, post
latest, newest, recent, last
old, oldest, previous, earlier
today, now, current
who, author, blame
why, cause, root cause
status, state, transition, move to, workflow status, in progress
watch, watcher, watchers, subscribe, follow, following
log work, worklog, time spent, hours, time tracking
who edited, history, versions, revisions, edited
elevation, altitude, height, how high, above sea level
roll back, rollback, revert, undo
mute, silence, snooze, suppress, quiet
javascript, js, script, evaluate, code, run code
emulate, throttle, simulate, pretend, emulation
forget, delete, remove
close, resolve, closed, resolved, done
how long, duration, travel time, distance
activity, events, feed, recent events
"""


@dataclass(frozen=True)
class Synonyms:
    """Groups of equivalent phrases, each phrase a tuple of stemmed words."""

    groups: Sequence[Sequence[tuple[str, ...]]] = ()
    _by_first: dict[str, list[tuple[tuple[str, ...], int]]] = field(default_factory=dict, repr=False)

    @classmethod
    def parse(cls, table: str) -> Synonyms:
        groups: list[list[tuple[str, ...]]] = []
        for line in table.splitlines():
            members = [tuple(words(m, keep_stop=True)) for m in line.split(",")]
            members = list(dict.fromkeys(m for m in members if m))
            if len(members) > 1:
                groups.append(members)
        by_first: dict[str, list[tuple[tuple[str, ...], int]]] = {}
        for g, members in enumerate(groups):
            for m in members:
                by_first.setdefault(m[0], []).append((m, g))
        for entries in by_first.values():
            entries.sort(key=lambda e: -len(e[0]))  # the longest phrase first
        return cls(groups, by_first)

    @classmethod
    @functools.cache
    def default(cls) -> Synonyms:
        return cls.parse(TABLE)

    def expand(self, query: Sequence[str], weight: float) -> list[list[tuple[tuple[str, ...], float]]]:
        """The query's concepts: for each word or phrase of `query` (stemmed words), its
        alternatives as (words, weight): itself at 1.0, the other members of its groups at
        `weight`. A phrase of the table found in the query is one concept; so is a word."""
        out: list[list[tuple[tuple[str, ...], float]]] = []
        i = 0
        while i < len(query):
            found: tuple[str, ...] | None = None
            alternatives: dict[tuple[str, ...], float] = {}
            for member, g in self._by_first.get(query[i], ()):
                if tuple(query[i:i + len(member)]) == member and (found is None or len(member) == len(found)):
                    found = member
                    for other in self.groups[g]:
                        if other != member:
                            alternatives.setdefault(other, weight)
            if found is None:
                found = (query[i],)
            out.append([(found, 1.0), *((a, w) for a, w in alternatives.items() if a != found)])
            i += len(found)
        return out

    def members(self) -> Iterable[tuple[str, ...]]:
        return (m for g in self.groups for m in g)

__all__ = ["TABLE", "Synonyms"]
