"""sales_insight_mining: what sales calls say about competitors and discussion subtopics.

Two families (PRO.md 3.2, pinned there):
- per opportunity (the context gives its Id): which competitors were mentioned, are ahead of us, are behind us
  (we have the edge), made competing offers; which subtopics were discussed positively or negatively. The gold is
  the sorted set of labels over the opportunity's calls, without repeats.
- global, over a trailing window ending on the Today's date the context gives (the rebuild adds it; PRO.md 2.2:
  both ends inclusive, a month a calendar month, a quarter three): which competitor came up in the most calls, is
  ahead of us or behind us in the most, made the most competing offers; which subtopic was positive or negative in
  the most calls. A call counts once per label; the gold is the unique leader.

The context lists the competitor and subtopic vocabulary (labels as they must be answered; the calls say subtopics
in lower case). Pro plants no None gold here; every draw is answerable and every comparison has a runner-up (the
second label has at least one call), every per-opportunity filter leaves a label of its family out or, for the
plain "mentioned" question, covers two at least. Tools: SOQL only (the calls' text).
"""

from __future__ import annotations

import datetime as dt
import re
import sqlite3
from collections import Counter, defaultdict
from collections.abc import Mapping
from typing import Any

import numpy as np

from crmarena_gym.tasks._instance import TaskInstance
from crmarena_gym.tasks._interactive import InteractiveSplit, split_of
from crmarena_gym.tasks._oracle import OracleError, SolverCalls
from crmarena_gym.tasks._periods import add_months
from crmarena_gym.tasks._phrasing import pick
from crmarena_gym.tasks.pro._category import Category, ProAnswer, ProDraw, ProFacts, ProQuestion
from crmarena_gym.tasks.pro._conversation import id_criterion, opening, window_criterion, without_lines
from crmarena_gym.tasks.pro._sales import records
from crmarena_gym.tools._common import soql_string

# kind -> (family, what the question asks about it)
_KINDS: dict[str, str] = {
    "mentioned": "competitor",
    "ahead": "competitor",
    "behind": "competitor",
    "offer": "competitor",
    "positive": "subtopic",
    "negative": "subtopic",
}
_PER_OPPORTUNITY: dict[str, tuple[str, ...]] = {
    "mentioned": (
        "Which competitors came up in the calls about this opportunity?",
        "Name every competitor the customer mentioned on calls about this deal.",
        "Who else is this customer talking to, according to our call transcripts for the opportunity?",
    ),
    "ahead": (
        "Which competitors does the customer on this opportunity think are ahead of us?",
        "On calls about this deal, which rivals were described as stronger than us on something?",
        "Which competitors are challenging us on this opportunity by outdoing us in some area, per the calls?",
    ),
    "behind": (
        "Which competitors do we have an edge over on this opportunity, going by its calls?",
        "On calls about this deal, which rivals did the customer say we beat?",
        "Against which competitors did the customer rate us better on this opportunity?",
    ),
    "offer": (
        "Which competitors have made the customer a competing offer on this opportunity?",
        "According to the calls about this deal, who has put a rival discount on the table?",
        "Which competitors offered this customer a price cut to win the deal, per our call transcripts?",
    ),
    "positive": (
        "Which discussion topics did the customer speak about positively on calls about this opportunity?",
        "On this deal's calls, which subtopics drew a positive reaction from the customer?",
        "What did the customer like about us on this opportunity? List the subtopics they were positive about.",
    ),
    "negative": (
        "Which discussion topics worried the customer on calls about this opportunity?",
        "On this deal's calls, which subtopics did the customer raise as concerns?",
        "Where does the customer on this opportunity see problems? List the subtopics they were negative about.",
    ),
}
_GLOBAL: dict[str, tuple[str, ...]] = {
    "mentioned": (
        "Which competitor came up in the most sales calls {window}?",
        "{Window}, which rival did customers mention on the largest number of calls?",
        "Who was our most talked-about competitor on calls {window}?",
    ),
    "ahead": (
        "Which competitor did customers most often describe as ahead of us on calls {window}?",
        "{Window}, which rival outdid us in the most calls?",
        "Who did we lose out to most often on sales calls {window}?",
    ),
    "behind": (
        "Which competitor did we beat most often, according to sales calls {window}?",
        "{Window}, over which rival did customers rate us better on the most calls?",
        "Against which competitor did we have the edge on the most calls {window}?",
    ),
    "offer": (
        "Which competitor made customers a competing offer on the most calls {window}?",
        "{Window}, which rival put the most discount offers in front of our customers, by number of calls?",
        "Who undercut us with competing offers most often on sales calls {window}?",
    ),
    "positive": (
        "Which discussion subtopic was spoken about positively on the most sales calls {window}?",
        "{Window}, what did customers praise on the largest number of calls?",
        "Which subtopic drew positive comments on the most calls {window}?",
    ),
    "negative": (
        "Which discussion subtopic was raised as a concern on the most sales calls {window}?",
        "{Window}, what worried customers on the largest number of calls?",
        "Which subtopic drew negative comments on the most calls {window}?",
    ),
}
_SET_FORMAT = {
    "competitor": "Return only the competitor names, separated by commas.",
    "subtopic": "Return only the subtopic names, separated by commas.",
}
_ONE_FORMAT = {
    "competitor": "Return only the name of the competitor.",
    "subtopic": "Return only the name of the subtopic.",
}
# The trailing windows Pro's questions use (PRO.md 2.2): unit -> the counts it is asked with.
_WINDOWS: dict[str, tuple[int, ...]] = {
    "day": (14, 21),
    "week": (2, 3, 4, 5, 6),
    "month": tuple(range(1, 12)),
    "quarter": (2, 3, 4, 5, 6),
}
_UNIT_WORDS = {"day": "days", "week": "weeks", "month": "months", "quarter": "quarters"}
_FIRST_TODAY = dt.date(2020, 6, 1)
# Transcripts per query of a global question: 50 of the longest still fit an observation (100,000 characters).
_PAGE = 50
_LAST_TODAY = dt.date(2025, 6, 30)


def _window_start(today: dt.date, unit: str, n: int) -> dt.date:
    if unit == "day":
        return today - dt.timedelta(days=n)
    if unit == "week":
        return today - dt.timedelta(days=7 * n)
    return add_months(today, -n * (3 if unit == "quarter" else 1))


def _calls(facts: ProFacts) -> list[tuple[str, str, str, list[tuple[str, str, str | None, int, str | None]]]]:
    """(call, opportunity, day, [(kind, label, relation, offer, sentiment)]) for every annotated call."""

    def build() -> list[tuple[str, str, str, list[tuple[str, str, str | None, int, str | None]]]]:
        by_call: dict[str, list[tuple[str, str, str | None, int, str | None]]] = defaultdict(list)
        where: dict[str, tuple[str, str]] = {}
        for call, opp, day, kind, label, relation, offer, sentiment in facts.conn.execute(
            "SELECT h.CallId, h.OpportunityId, substr(v.CreatedDate, 1, 10), h.kind, h.label, h.relation, h.offer, "
            "h.sentiment FROM crmarena_hidden_call_insight h JOIN VoiceCallTranscript__c v ON v.Id = h.CallId "
            "ORDER BY h.CallId"
        ):
            by_call[call].append((kind, label, relation, offer, sentiment))
            where[call] = (opp, day)
        return [(call, *where[call], labels) for call, labels in by_call.items()]

    return facts.once("sim.calls", build)


def _labels_of(labels: list[tuple[str, str, str | None, int, str | None]], kind: str) -> set[str]:
    """The labels one call's annotation gives to question ``kind``."""
    out = set()
    for family, label, relation, offer, sentiment in labels:
        if family != _KINDS[kind]:
            continue
        if (
            kind == "mentioned"
            or (kind == "ahead" and relation == "disadvantage")
            or (kind == "behind" and relation == "advantage")
            or (kind == "offer" and offer)
            or (kind in ("positive", "negative") and sentiment == kind)
        ):
            out.add(label)
    return out


def _vocabulary(facts: ProFacts) -> str:
    def build() -> str:
        lines = []
        for family, title in (("competitor", "Competitors"), ("subtopic", "Discussion subtopics")):
            labels = [
                label
                for (label,) in facts.conn.execute(
                    "SELECT DISTINCT label FROM crmarena_hidden_call_insight WHERE kind = ? ORDER BY label", (family,)
                )
            ]
            lines.append(f"- {title}: {', '.join(labels)}")
        return "\n".join(lines)

    return facts.once("sim.vocabulary", build)


def draw(facts: ProFacts, rng: np.random.Generator, want_none: bool) -> ProDraw | None:
    """A per-opportunity question (about half) or a global windowed one; never a None gold (Pro has none)."""
    if want_none:
        raise ValueError("sales_insight_mining has no None golds (Pro's rate is 0): every draw is answerable")
    calls = _calls(facts)
    if not calls:
        raise ValueError("sales_insight_mining: the org has no annotated call about an opportunity")
    kind = pick(rng, tuple(_KINDS))
    family = _KINDS[kind]
    vocabulary = _vocabulary(facts)
    if rng.random() < 0.62:  # per-opportunity draws are rejected more often: about half of the kept ones
        opp = pick(rng, calls)[1]
        mine = [labels for _call, o, _day, labels in calls if o == opp]
        gold = set().union(*(_labels_of(labels, kind) for labels in mine))
        seen = set().union(
            *(_labels_of(labels, "mentioned" if family == "competitor" else "positive") for labels in mine)
        )
        if family == "subtopic":
            seen |= set().union(*(_labels_of(labels, "negative") for labels in mine))
        if not gold or (kind == "mentioned" and len(gold) < 2) or (kind != "mentioned" and not seen - gold):
            return None
        query = f"{pick(rng, _PER_OPPORTUNITY[kind])} {_SET_FORMAT[family]}"
        required = f"- Opportunity Id to be considered is: {opp}\n{vocabulary}"
        return ProDraw(tuple(sorted(gold)), query, required, {"kind": kind, "opportunity_id": opp})
    span = (_LAST_TODAY - _FIRST_TODAY).days
    today = _FIRST_TODAY + dt.timedelta(days=int(rng.integers(span + 1)))
    unit = pick(rng, tuple(_WINDOWS))
    n = int(pick(rng, _WINDOWS[unit]))
    start = _window_start(today, unit, n)
    counts: Counter[str] = Counter()
    for _call, _opp, day, labels in calls:
        if start.isoformat() <= day <= today.isoformat():
            counts.update(_labels_of(labels, kind))
    ranked = counts.most_common()
    if len(ranked) < 2 or ranked[0][1] == ranked[1][1]:
        return None
    phrase = f"in the past {n} {_UNIT_WORDS[unit]}"
    template = pick(rng, _GLOBAL[kind])
    query = template.format(window=phrase, Window=phrase[0].upper() + phrase[1:])
    query = f"{query} {_ONE_FORMAT[family]}"
    required = f"- Today's date: {today.isoformat()}\n{vocabulary}"
    params = {"kind": kind, "today": today.isoformat(), "start": start.isoformat(), "end": today.isoformat()}
    params["window"] = {"unit": unit, "n": n}
    return ProDraw(ranked[0][0], query, required, params)


_CONDITION = {
    "mentioned": "h.kind = 'competitor'",
    "ahead": "h.kind = 'competitor' AND h.relation = 'disadvantage'",
    "behind": "h.kind = 'competitor' AND h.relation = 'advantage'",
    "offer": "h.kind = 'competitor' AND h.offer = 1",
    "positive": "h.kind = 'subtopic' AND h.sentiment = 'positive'",
    "negative": "h.kind = 'subtopic' AND h.sentiment = 'negative'",
}


def gold_sql(conn: sqlite3.Connection, params: Mapping[str, Any]) -> ProAnswer:
    """The labels over the opportunity's calls, or the label with the most calls in the window (unique)."""
    condition = _CONDITION[params["kind"]]
    if "opportunity_id" in params:
        labels = [
            label
            for (label,) in conn.execute(
                f"SELECT DISTINCT h.label FROM crmarena_hidden_call_insight h JOIN VoiceCallTranscript__c v "
                f"ON v.Id = h.CallId WHERE v.OpportunityId__c = ? AND {condition} ORDER BY h.label",
                (params["opportunity_id"],),
            )
        ]
        return tuple(labels) or None
    top = conn.execute(
        f"SELECT h.label, COUNT(DISTINCT h.CallId) AS n FROM crmarena_hidden_call_insight h "
        f"JOIN VoiceCallTranscript__c v ON v.Id = h.CallId "
        f"WHERE substr(v.CreatedDate, 1, 10) BETWEEN ? AND ? AND {condition} "
        f"GROUP BY h.label ORDER BY n DESC LIMIT 2",
        (params["start"], params["end"]),
    ).fetchall()
    if not top or (len(top) == 2 and top[0][1] == top[1][1]):
        return None
    return top[0][0]


# The calls' wording: what a customer says about a competitor or a subtopic.
_AHEAD = (
    r"We're also talking to (.+?), and honestly their .+ is ahead of yours\.",
    r"(.+?) looks stronger than you on ",
)
_BEHIND = (r"We looked at (.+?) too, but your .+ is clearly better than theirs\.", r"Compared with (.+?), you win on ")
_MENTION = (r"(.+?) came up in our evaluation as well\.", r"Our team also had a call with (.+?)\.$")
_OFFER = (r"(.+?) has offered us \d+% off",)
_POSITIVE = (r"I'm really pleased with what I've seen on (.+?)\.$", r"The (.+?) is a big plus for us\.$")
_NEGATIVE = (r"I'm worried about the (.+?)\.$", r"The (.+?) is a real concern on our side\.$")
_LINE = re.compile(r"^\[[^\]]+\] [^:]+: (.*)$")


def _vocab_from(required: str, title: str) -> dict[str, str]:
    match = re.search(rf"^- {title}: (.+)$", required, re.M)
    if match is None:
        raise OracleError(f"the context lists no {title.lower()}")
    return {label.strip().lower(): label.strip() for label in match.group(1).split(", ")}


def _read_call(body: str, competitors: dict[str, str], subtopics: dict[str, str]) -> dict[str, set[str]]:
    """kind -> the labels one call gives it, read from its text."""
    found: dict[str, set[str]] = {kind: set() for kind in _KINDS}
    for raw in body.splitlines():
        match = _LINE.match(raw)
        if match is None:
            continue
        line = match.group(1)
        for kind, patterns, vocabulary in (
            ("ahead", _AHEAD, competitors),
            ("behind", _BEHIND, competitors),
            ("mentioned", _MENTION, competitors),
            ("offer", _OFFER, competitors),
            ("positive", _POSITIVE, subtopics),
            ("negative", _NEGATIVE, subtopics),
        ):
            for pattern in patterns:
                hit = re.match(pattern, line)
                if hit is None:
                    continue
                name = hit.group(1).strip().lower()
                if name not in vocabulary:
                    raise OracleError(f"a call names {hit.group(1)!r}, which the context's vocabulary does not list")
                found[kind].add(vocabulary[name])
    found["mentioned"] |= found["ahead"] | found["behind"] | found["offer"]
    return found


def solve(calls: SolverCalls, question: ProQuestion) -> ProAnswer:
    """Read the calls (the opportunity's, or every opportunity call in the window) and count labels per call."""
    kind = question.params["kind"]
    competitors = _vocab_from(question.required, "Competitors")
    subtopics = _vocab_from(question.required, "Discussion subtopics")
    if "opportunity_id" in question.params:
        opp = soql_string(question.params["opportunity_id"])
        found = records(
            calls(
                "issue_soql_query",
                query=f"SELECT Id, Body__c FROM VoiceCallTranscript__c WHERE OpportunityId__c = {opp}",
            )
        )
        labels = set().union(*(_read_call(r["Body__c"] or "", competitors, subtopics)[kind] for r in found))
        return tuple(sorted(labels)) or None
    start = dt.date.fromisoformat(question.params["start"])
    after = dt.date.fromisoformat(question.params["end"]) + dt.timedelta(days=1)
    where = (
        "OpportunityId__c != null "
        f"AND CreatedDate >= {start.isoformat()}T00:00:00Z AND CreatedDate < {after.isoformat()}T00:00:00Z"
    )
    # A long window holds hundreds of transcripts, more text than one observation shows (an environment cuts it
    # at 100,000 characters): read them a page at a time, by Id.
    found: list[dict[str, Any]] = []
    last = None
    while True:
        after_last = f" AND Id > {soql_string(last)}" if last else ""
        page = records(
            calls(
                "issue_soql_query",
                query=f"SELECT Id, Body__c FROM VoiceCallTranscript__c WHERE {where}{after_last} ORDER BY Id "
                f"LIMIT {_PAGE}",
            )
        )
        found += page
        if len(page) < _PAGE:
            break
        last = page[-1]["Id"]
    counts: Counter[str] = Counter()
    for r in found:
        counts.update(_read_call(r["Body__c"] or "", competitors, subtopics)[kind])
    ranked = counts.most_common(2)
    if not ranked or (len(ranked) == 2 and ranked[0][1] == ranked[1][1]):
        return None
    return ranked[0][0]


# What a global question asks, without its window (the user's opening).
_GLOBAL_GOALS: dict[str, tuple[str, ...]] = {
    "mentioned": ("Which competitor comes up on the most sales calls?", "Who is our most talked-about rival on calls?"),
    "ahead": ("Which competitor do customers most often say is ahead of us?", "Who do we lose out to most on calls?"),
    "behind": ("Which competitor do we beat most often, going by the calls?", "Over which rival do we win most?"),
    "offer": ("Which competitor makes the most competing offers on calls?", "Who undercuts us most with offers?"),
    "positive": ("Which subtopic do customers praise on the most calls?", "What do customers like most on calls?"),
    "negative": (
        "Which subtopic worries customers on the most calls?",
        "What do customers complain about most on calls?",
    ),
}


def _split(instance: TaskInstance, rng: np.random.Generator) -> InteractiveSplit:
    """Held back: the opportunity of a per-opportunity question (its Id line leaves the context; the question says
    "this opportunity"), or the trailing window of a global one."""
    p = instance.params
    if "opportunity_id" in p:
        criterion = id_criterion(rng, "opportunity", "opportunity", p["opportunity_id"])
        required = without_lines(instance.metadata.required, p["opportunity_id"])
        return split_of(instance, instance.query, (criterion,), required=required)
    window = {"today": p["today"], "start": p["start"], "end": p["end"], "window": p["window"]}
    formats = tuple(_ONE_FORMAT.values())
    return split_of(
        instance, opening(rng, _GLOBAL_GOALS[p["kind"]], instance.query, formats), (window_criterion(rng, window),)
    )


CATEGORY = Category(
    "sales_insight_mining",
    draw,
    gold_sql,
    solve,
    split=_split,
    split_needs=("kind",),
)
