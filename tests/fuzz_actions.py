"""A seeded fuzz harness for ``env.step``: hostile and malformed actions in every form an agent can send.

Used by ``tests/envs/test_fuzz_actions.py`` (a few thousand actions) and ``benchmarks/bench_fuzz.py``
(100,000, with a memory probe). Every action comes from one ``random.Random(seed)``: the same seed gives the
same actions. The kinds (weights in :data:`KINDS`):

- ``soql``: the corpus's queries mutated (tokens dropped, doubled, swapped, literals replaced by hostile
  ones), in every wrapping (``execute``, tags, code fences, the query tools called as functions);
- ``hostile_soql``: deep parentheses and NOT chains, thousands of ORed conditions, statements over
  100,000 characters, long and odd literals (numbers of thousands of digits, lone surrogates, NULs);
- ``sosl``: wildcard-heavy searches with RETURNING clauses;
- ``call``: a tool of the toolset (or an unknown name) with arguments of random JSON types: numbers of up
  to 5,000 digits, NaN and infinities, nested lists, long strings, ids good and bad, dates;
- ``json``: malformed JSON tool calls (truncated, deeply nested, a string of arguments, trailing text);
- ``submit``: answers of every shape;
- ``garbage``: random text, control characters, unbalanced tags, actions over the length bound.

:func:`run` plays the actions on environments (each ``(env id, toolset)`` in turn), resets when an episode
ends, and counts what ``step`` raised (it should raise nothing) with the action that made it.
"""

from __future__ import annotations

import json
import os
import random
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

CORPUS = [
    "SELECT Id, Subject, Status FROM Case WHERE Status = 'Closed' LIMIT 10",
    "SELECT Id, Owner.Name, Contact.Owner.Email FROM Case ORDER BY CreatedDate DESC NULLS LAST",
    "SELECT OwnerId, COUNT(Id) cnt FROM Case GROUP BY OwnerId HAVING COUNT(Id) > 1 ORDER BY COUNT(Id) DESC",
    "SELECT COUNT() FROM Case WHERE CreatedDate = LAST_N_DAYS:30",
    "SELECT Id FROM Case WHERE Id IN (SELECT CaseId__c FROM CaseHistory__c WHERE Field__c = 'Owner Assignment')",
    "SELECT Id FROM Case WHERE (Priority = 'High' OR Priority = 'Low') AND NOT Status = 'New'",
    "SELECT CALENDAR_MONTH(CreatedDate), COUNT(Id) FROM Case GROUP BY CALENDAR_MONTH(CreatedDate)",
    "SELECT Id, Title FROM Knowledge__kav WHERE Title LIKE '%Return%' AND PublishStatus = 'Online'",
    "SELECT SUM(Quantity), AVG(UnitPrice), MIN(UnitPrice), MAX(Quantity) FROM OrderItem",
    "SELECT Id FROM Case WHERE CreatedDate >= 2022-01-01T00:00:00Z AND CreatedDate < 2022-04-01T00:00:00+02:00",
    "SELECT Id, Name FROM Account WHERE ShippingState NOT IN ('CA', null) OFFSET 3",
    "SELECT Id, (SELECT Id, Subject FROM Cases) FROM Account LIMIT 5",
    "SELECT Id FROM Contact WHERE OwnerId NOT IN (SELECT OwnerId FROM Case WHERE Status = 'Closed')",
    "SELECT Id FROM Case WHERE Id = '500Ws000001i9uIIAQ'",
    "SELECT Body FROM LiveChatTranscript WHERE CaseId = '500Ws000001i9uIIAQ'",
]
TOKENS = [
    "SELECT", "FROM", "WHERE", "AND", "OR", "NOT", "IN", "LIKE", "GROUP BY", "HAVING", "ORDER BY", "LIMIT",
    "OFFSET", "null", "TRUE", "(", ")", ",", ".", "=", "!=", "<", ">=", "'", "\\", ":", "*", "Id", "Case",
    "COUNT()", "TODAY", "LAST_N_DAYS:", "2022-13-45", "2022-01-01T25:00:00Z", "TYPEOF", "USING SCOPE",
]  # fmt: skip
SOSL_WORDS = ["ship*", "*", "?", "ret?rn", '"late delivery"', "refund", "-", "\\*", "OR", "AND NOT", "{", "}"]
IDS = ["500Ws000001i9uIIAQ", "005Ws000001xadBIAQ", "500Ws000001i9uI", "500Ws000001i9uIIAA", "001xx", "x" * 18]
KINDS: dict[str, float] = {
    "soql": 0.28,
    "hostile_soql": 0.02,
    "sosl": 0.10,
    "call": 0.32,
    "json": 0.10,
    "submit": 0.06,
    "garbage": 0.12,
}


def _weird_text(rng: random.Random, n: int) -> str:
    alphabet = "abc XYZ019'\"\\{}[]()<>:,;%_*?\n\t\x00\ud800\udfff\u202e\ufeff€é😀"
    return "".join(rng.choice(alphabet) for _ in range(n))


def _long_number(rng: random.Random) -> str:
    digits = rng.choice([1, 19, 20, 309, 400, 4300, 4301, 5000])
    return rng.choice(["", "-"]) + "9" * digits + rng.choice(["", ".5", "e999", "e-999"])


def hostile_literal(rng: random.Random) -> str:
    """A SOQL literal that is hard to read: huge numbers, long or odd strings, dates that do not exist."""
    return rng.choice(
        [
            lambda: _long_number(rng),
            lambda: "'" + "x" * rng.choice([3999, 4000, 4001, 20_000]) + "'",
            lambda: "'" + _weird_text(rng, 20).replace("'", "\\'") + "'",
            lambda: "'\\ud83d'",
            lambda: "'\\u00'",
            lambda: "2022-02-30",
            lambda: "9999-99-99T99:99:99Z",
            lambda: "LAST_N_DAYS:" + "9" * rng.choice([3, 30, 5000]),
            lambda: "NEXT_N_WEEKS:-1",
        ]
    )()


def mutated_soql(rng: random.Random) -> str:
    words = rng.choice(CORPUS).split(" ")
    for _ in range(rng.randint(0, 4)):
        i = rng.randrange(len(words))
        op = rng.random()
        if op < 0.25 and len(words) > 1:
            del words[i]
        elif op < 0.5:
            words.insert(i, rng.choice(TOKENS))
        elif op < 0.7:
            words.insert(i, words[i])
        elif op < 0.85:
            j = rng.randrange(len(words))
            words[i], words[j] = words[j], words[i]
        else:
            words[i] = hostile_literal(rng)
    return " ".join(words)


def hostile_soql(rng: random.Random) -> str:
    base = "SELECT Id FROM Case WHERE "
    return rng.choice(
        [
            lambda: base + "(" * (n := rng.choice([17, 100, 5000, 49_000])) + "Status = 'New'" + ")" * n,
            lambda: base + "NOT " * rng.choice([17, 3000, 20_000]) + "Status = 'New'",
            lambda: base + " OR ".join(f"Subject = 's{j}'" for j in range(rng.choice([999, 1000, 4500]))),
            lambda: base + " AND ".join(f"Subject != 's{j}'" for j in range(rng.choice([1000, 3000]))),
            lambda: base + "Subject = 'x'" + " " * rng.choice([99_970, 100_000, 150_000]),
            lambda: base + "Subject IN (" + ", ".join(f"'{j}'" for j in range(rng.choice([5000, 15_000]))) + ")",
            lambda: base + " OR ".join(["Subject = 'x'"] * 300) + " OR OR",
            lambda: "SELECT " + ", ".join(["Id"] * rng.choice([2, 3000])) + " FROM Case",
            lambda: base + "(Subject = 'a' OR (Status = 'b' AND NOT (Priority = 'c' OR " * 6 + "Id = null" + "))))" * 6,
        ]
    )()


def sosl(rng: random.Random) -> str:
    words = " ".join(rng.choice(SOSL_WORDS) for _ in range(rng.randint(1, 12)))
    tail = rng.choice(["", " RETURNING Case(Id, Subject)", " IN ALL FIELDS RETURNING Knowledge__kav(Id LIMIT 3)"])
    return "FIND {" + words + "}" + tail


def json_value(rng: random.Random, depth: int = 0) -> Any:
    """A random JSON value of any type (as Python, or as raw JSON text with ``raw:`` prefix for what Python
    cannot hold, such as a number of 5,000 digits)."""
    kinds = ["int", "float", "str", "id", "date", "bool", "null", "big"]
    if depth < 3:
        kinds += ["list", "dict"]
    kind = rng.choice(kinds)
    if kind == "int":
        return rng.choice([0, -1, 1, 2**31, 2**63, -(2**64), 10**100])
    if kind == "float":
        return rng.choice([0.5, -0.0, 1e308, float("inf"), float("nan"), 3.0])
    if kind == "str":
        return rng.choice(["", "Q1", "Winter", "May", "x" * rng.choice([10, 5000, 120_000]), _weird_text(rng, 30)])
    if kind == "id":
        return rng.choice(IDS)
    if kind == "date":
        return rng.choice(["2022-01-01T00:00:00Z", "2022-13-01T00:00:00Z", "2022-01-01", "yesterday", "0000-00-00"])
    if kind == "bool":
        return rng.random() < 0.5
    if kind == "null":
        return None
    if kind == "big":
        return RawJSON(_long_number(rng))
    if kind == "list":
        return [json_value(rng, depth + 1) for _ in range(rng.choice([0, 1, 3, 50]))]
    return {
        rng.choice(["Id", "OwnerId", "CreatedDate", "ClosedDate", "k", ""]): json_value(rng, depth + 1)
        for _ in range(3)
    }


@dataclass(frozen=True)
class RawJSON:
    """JSON text put in a document as it is (a number Python's ``json`` could not write or read back)."""

    text: str


def dumps(value: Any) -> str:
    """``json.dumps`` that writes :class:`RawJSON` as its text and non-finite floats as JSON readers accept."""
    if isinstance(value, RawJSON):
        return value.text
    if isinstance(value, dict):
        return "{" + ", ".join(f"{json.dumps(str(k))}: {dumps(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(dumps(v) for v in value) + "]"
    return json.dumps(value)


def call(rng: random.Random, tools: Sequence[dict[str, Any]]) -> str:
    if rng.random() < 0.05:
        name, props = rng.choice(["no_such_tool", "", "SELECT", "__import__", "x" * 300]), {"a": {}}
    else:
        function = rng.choice(tools)["function"]
        name, props = function["name"], function["parameters"]["properties"]
    args = {p: json_value(rng) for p in props if rng.random() < 0.85}
    if rng.random() < 0.1:
        args[rng.choice(["extra", "", "ID"])] = json_value(rng)
    body = dumps(args)
    return rng.choice(
        [
            lambda: '{"name": ' + json.dumps(name) + ', "arguments": ' + body + "}",
            lambda: json.dumps({"name": name, "arguments": body}),  # as OpenAI sends the arguments
            lambda: f"execute {name}({body})",
            lambda: f"<execute>{name}({body})</execute>",
            lambda: f"Thought: let me call it.\n<execute>\n```json\n{name}({body})\n```\n</execute>",
        ]
    )()


def malformed_json(rng: random.Random) -> str:
    depth = rng.choice([10, 1200, 40_000])
    return rng.choice(
        [
            lambda: '{"name": "get_cases", "arguments": {"case_ids": ' + "[" * depth + "]" * depth + "}}",
            lambda: '{"name": "get_cases", "arguments": {"case_ids": [',
            lambda: '{"name": "get_period", "arguments": "{\\"year\\": ' + _long_number(rng) + '}"}',
            lambda: '{"arguments": {}}',
            lambda: '{"name": ["get_issues"], "arguments": 3}',
            lambda: '{"name": "get_issues", "arguments": {}} trailing',
            lambda: "get_issues(" + "{" * 50 + ")",
            lambda: '{"name": "get_issues", "arguments": {"a": NaN, "b": -Infinity}}',
            lambda: '{"name": "get_issues", "arguments": {"\\ud800": "\\udfff"}}',
        ]
    )()


def submit(rng: random.Random) -> str:
    answer = rng.choice(["None", "", IDS[0], "OR", _weird_text(rng, 40), "x" * 50_000, "\ud83d", "005Ws000001xadBIAQ"])
    return rng.choice([f"submit {answer}", f"<submit>{answer}</submit>", f"<respond>{answer}</respond>"])


def garbage(rng: random.Random) -> str:
    return rng.choice(
        [
            lambda: _weird_text(rng, rng.choice([0, 1, 50, 2000])),
            lambda: "<execute>" * 50,
            lambda: "</execute><submit>",
            lambda: "execute",
            lambda: "```\n```",
            lambda: "x" * rng.choice([199_999, 200_001, 1_000_000]),
            lambda: "\x00" * 100,
            lambda: "execute " + "\ud800" * 10,
        ]
    )()


def wrap_query(rng: random.Random, query: str) -> str:
    tool = "issue_sosl_query" if query.lstrip().upper().startswith("FIND") else "issue_soql_query"
    return rng.choice(
        [
            lambda: f"execute {query}",
            lambda: f"Thought: look it up.\n<execute>{query}</execute>",
            lambda: f"<execute>\n```sql\n{query}\n```\n</execute>",
            lambda: json.dumps({"name": tool, "arguments": {"query": query}}),
        ]
    )()


def action(rng: random.Random, tools: Sequence[dict[str, Any]]) -> tuple[str, str]:
    """One action and its kind."""
    kind = rng.choices(list(KINDS), weights=list(KINDS.values()))[0]
    if kind == "soql":
        return kind, wrap_query(rng, mutated_soql(rng))
    if kind == "hostile_soql":
        return kind, wrap_query(rng, hostile_soql(rng))
    if kind == "sosl":
        return kind, wrap_query(rng, sosl(rng))
    if kind == "call":
        return kind, call(rng, tools)
    if kind == "json":
        return kind, malformed_json(rng)
    if kind == "submit":
        return kind, submit(rng)
    return kind, garbage(rng)


def rss_bytes() -> int:
    """This process's resident memory (Linux ``/proc``; 0 elsewhere)."""
    try:
        with open("/proc/self/statm", encoding="ascii") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:
        return 0


@dataclass
class Report:
    """What a fuzz run saw."""

    actions: int = 0
    by_kind: dict[str, int] = field(default_factory=dict)
    exceptions: list[tuple[str, str, str]] = field(default_factory=list)  # (kind, exception, action excerpt)
    slowest: tuple[float, str] = (0.0, "")
    rss: list[tuple[int, int]] = field(default_factory=list)  # (actions, bytes)
    wall: float = 0.0
    cpu: float = 0.0


def run(
    make_env: Callable[[str, str], Any],
    combos: Sequence[tuple[str, str]],
    n: int,
    seed: int,
    *,
    probe_every: int = 0,
    progress: Callable[[Report], None] | None = None,
) -> Report:
    """Play ``n`` actions drawn with ``seed``, spread evenly over ``combos`` of ``(env id, toolset)``.

    ``make_env(env_id, toolset)`` builds an environment; it is reset with seeds drawn from the same
    generator whenever an episode ends. With ``probe_every``, resident memory is recorded that often.
    """
    rng = random.Random(seed)
    report = Report()
    wall, cpu = time.perf_counter(), time.process_time()
    per = -(-n // len(combos))
    for env_id, toolset in combos:
        env = make_env(env_id, toolset)
        tools = env.unwrapped.tools.schemas()
        env.reset(seed=rng.randrange(2**31))
        for _ in range(min(per, n - report.actions)):
            kind, text = action(rng, tools)
            report.by_kind[kind] = report.by_kind.get(kind, 0) + 1
            started = time.perf_counter()
            try:
                _, _, terminated, truncated, _ = env.step(text)
            except Exception as exc:  # what the harness is looking for: anything out of step
                detail = "".join(traceback.format_exception_only(type(exc), exc)).strip()[:300]
                report.exceptions.append((kind, detail, repr(text[:200])))
                terminated = True
            spent = time.perf_counter() - started
            if spent > report.slowest[0]:
                report.slowest = (spent, f"{kind}: {text[:120]!r}")
            report.actions += 1
            if terminated or truncated:
                env.reset(seed=rng.randrange(2**31))
            if probe_every and report.actions % probe_every == 0:
                report.rss.append((report.actions, rss_bytes()))
                if progress is not None:
                    report.wall, report.cpu = time.perf_counter() - wall, time.process_time() - cpu
                    progress(report)
        env.close()
    report.wall, report.cpu = time.perf_counter() - wall, time.process_time() - cpu
    return report


def combos(
    env_ids: Sequence[str], toolsets: Sequence[str] = ("soql", "functions", "flex")
) -> Iterator[tuple[str, str]]:
    """Every env id with every toolset."""
    for env_id in env_ids:
        for toolset in toolsets:
            yield env_id, toolset
