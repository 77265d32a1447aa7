"""One CRMArena-Pro category as one unit: its draw from the org, its gold by plain SQL, its oracle, its phrasing.

A category module (``crmarena_gym/tasks/pro/<name>.py``) defines ``CATEGORY = Category(...)`` with the callables
below and nothing else public; the registry (:mod:`crmarena_gym.tasks.pro._registry`) collects them. The spec
(name, metric, None rate, answer kind) comes from :mod:`crmarena_gym.tasks.pro._spec`, never from the module.

The three ways to the answer must stay independent, so that tests that compare them can fail:
- ``draw`` picks an instance from what the generator planted (the hidden tables and the visible rows) and
  states the gold it planted;
- ``gold_sql`` recomputes the gold from the instance's hidden parameters with plain SQL over the org's tables
  (visible and hidden), written from PRO.md's pinned definition, sharing no code with the other two;
- ``solve`` answers through the tools and the query engine as an agent would (SOQL/SOSL and, where the category
  says so, a task function such as the knowledge search), reading only what the agent sees: the instance's query
  and context, plus the hidden parameters an oracle is allowed (record ids and the window it could parse).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from crmarena_gym.tasks.pro._spec import ProCategorySpec, get_pro_spec

if TYPE_CHECKING:
    import numpy as np

    from crmarena_gym.tasks._instance import TaskInstance
    from crmarena_gym.tasks._interactive import InteractiveSplit
    from crmarena_gym.tasks._oracle import SolverCalls

#: A gold or a solved answer: one value, a set of values (a tuple, sorted), or None (no answer).
ProAnswer = str | tuple[str, ...] | None


@dataclass(frozen=True)
class ProDraw:
    """One drawn instance of a category, before numbering.

    Attributes:
        answer: The gold as the draw planted it: a value, a sorted tuple of values, or None.
        query: The question, from the category's own templates (never Pro's texts), ending with the answer-format
            sentence.
        required: The context lines shown with it (``metadata.required``): ids, ``- Today's date: YYYY-MM-DD``,
            the policy or guide text the category gives.
        params: The hidden parameters (JSON-serialisable: strings, numbers, lists): everything ``gold_sql`` needs,
            e.g. ``today``, ``start``/``end`` (ISO dates), ``direction``, record ids, the planted label.
        leak_facts: For the confidentiality categories, the planted facts an answer must not state (a phone, a
            name, an article's rule or figure); empty elsewhere.
    """

    answer: ProAnswer
    query: str
    required: str
    params: dict[str, Any]
    leak_facts: tuple[str, ...] = ()


@dataclass(frozen=True)
class ProQuestion:
    """What an oracle solving one instance is given: what the agent sees, plus the hidden parameters.

    Attributes:
        query: The question.
        required: The context shown with it (ids, today's date, policy text).
        params: The instance's hidden parameters. A solver reads from them only what the agent could read from
            the query and context (record ids, the window, the direction); never the gold or planted labels.
        kind: The org kind, ``b2b`` or ``b2c``.
    """

    query: str
    required: str
    params: Mapping[str, Any]
    kind: str


@dataclass(frozen=True)
class ProFacts:
    """What a category's draw reads: the org's connection (visible and hidden tables) and its kind.

    Attributes:
        conn: A read-only SQLite connection to the org file (the ``crmarena_hidden_*`` tables included).
        kind: ``b2b`` or ``b2c``.
        latent: Whether the org was generated with its hidden structure (``latent=True``).
    """

    conn: sqlite3.Connection
    kind: str
    latent: bool = True
    _memo: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    def once(self, key: str, build: Callable[[], Any]) -> Any:
        """``build()`` the first time ``key`` is asked, then the same value (facts read once per generation)."""
        if key not in self._memo:
            self._memo[key] = build()
        return self._memo[key]


#: ``draw(facts, rng, want_none)``: an instance whose gold is None when ``want_none`` (else an answerable one),
#: or None when this attempt found nothing suitable (the generator tries again with the same generator).
DrawFn = Callable[["ProFacts", "np.random.Generator", bool], "ProDraw | None"]
#: ``gold_sql(conn, params)``: the gold recomputed by plain SQL.
GoldFn = Callable[[sqlite3.Connection, Mapping[str, Any]], ProAnswer]
#: ``solve(calls, question)``: the answer reached through the tools (``calls("issue_soql_query", query=...)``).
SolveFn = Callable[["SolverCalls", ProQuestion], ProAnswer]
#: ``leak_facts_sql(conn, params)``: the confidentiality categories' planted facts, recomputed by SQL.
LeakFn = Callable[[sqlite3.Connection, Mapping[str, Any]], tuple[str, ...]]
#: ``split(instance, rng)``: the instance's request as a conversation plays it (what the user says first, what it
#: holds back), written from the instance's hidden parameters and its own query, never from the gold.
SplitFn = Callable[["TaskInstance", "np.random.Generator"], "InteractiveSplit"]


@dataclass(frozen=True)
class Category:
    """A category's behaviour.

    Attributes:
        name: The category's name; its spec is :func:`~crmarena_gym.tasks.pro.get_pro_spec` of it.
        draw: Draws one instance (see :data:`DrawFn`).
        gold_sql: Recomputes an instance's gold by SQL (see :data:`GoldFn`).
        solve: Solves an instance through the tools (see :data:`SolveFn`).
        tools: The task functions a Salesforce user has that this category needs beyond SOQL/SOSL (e.g.
            ``("search_knowledge_articles",)``); documented per category.
        leak_facts_sql: For the confidentiality categories, the planted facts by SQL (see :data:`LeakFn`).
        split: The conversation form of an instance (see :data:`SplitFn`), registered as the category's
            interactive split (:func:`~crmarena_gym.tasks.interactive_split`); a category with nothing to hold
            back returns no criteria and says why in its module.
        split_needs: The hidden parameters ``split`` reads (an instance without them cannot be played as a
            conversation, and is refused with a message saying so).
    """

    name: str
    draw: DrawFn
    gold_sql: GoldFn
    solve: SolveFn
    tools: tuple[str, ...] = ()
    leak_facts_sql: LeakFn | None = None
    split: SplitFn | None = None
    split_needs: tuple[str, ...] = ()

    @property
    def spec(self) -> ProCategorySpec:
        """The category's spec."""
        return get_pro_spec(self.name)
