"""Plans by shape: one compiled plan serves every query that differs from it only in its literals.

A query's *shape* is its text with each string, number, date and datetime literal replaced by a marker
of its kind (LIMIT and OFFSET counts and the ``n`` of ``LAST_N_DAYS:n`` stay in the shape: they change
more than a parameter). The compiler notes, for each parameter of a plan, the literals it derives from
and how (:data:`~crmarena_gym.org.soql._compiler.Origin`); a :class:`PlanTemplate` re-derives the
parameters from another query's literals with the same functions. Whatever depends on a literal's
value rather than its kind (an id that is no id, a date that does not exist, an escape that is not one,
how many stored spellings an id has, repeats in an ``IN`` list) is re-checked: when it differs, the
template declines and the query is compiled on its own, so refusals and answers stay exactly those of
the compiler.

Example:
    >>> from crmarena_gym.org.soql import Catalog
    >>> _, template = compile_shaped("SELECT Id FROM Case WHERE Priority = 'High' LIMIT 5", Catalog.full())
    >>> lifted = lift("SELECT Id FROM Case WHERE Priority = 'Low' LIMIT 5")
    >>> lifted.key == lift("SELECT Id FROM Case WHERE Priority = 'High' LIMIT 5").key
    True
    >>> template.instantiate(lifted).params
    ('Low', 5)
"""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from crmarena_gym.org._base import OrgError
from crmarena_gym.org.soql._ast import Literal
from crmarena_gym.org.soql._compiler import (
    Catalog,
    ChildPlan,
    Origin,
    Plan,
    _id_forms,
    canonical_id,
    compile_query,
)
from crmarena_gym.org.soql._dates import parse_date, parse_datetime
from crmarena_gym.org.soql._parser import decode_string, number_value, parse

# The grammar's literal terminals (``SOQL_GRAMMAR``), tried in its priority order, and names (so that a
# digit inside a name is no number). Anything else is part of the shape, character for character.
_TOKEN = re.compile(
    r"(?P<s>'(?:[^'\\]|\\.)*')"
    r"|(?P<t>(?i:\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:?\d{2})))"
    r"|(?P<d>\d{4}-\d{2}-\d{2})"
    r"|(?P<n>[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?)"
    r"|(?P<w>[A-Za-z_][A-Za-z0-9_]*)",
    re.S,
)
# Counts that are no literal: LIMIT n, OFFSET n and LAST_N_DAYS:n.
_COUNT_BEFORE = re.compile(r"(?i:(?<![A-Za-z0-9_])(LIMIT|OFFSET))\s*$|:\s*$")


@dataclass(frozen=True)
class Lifted:
    """A query split into its shape and its literals.

    Attributes:
        key: The text with every literal replaced by ``\\x00`` and a letter for its kind, and every
            ``IN`` list of literals of one kind by ``\\x00L`` and the kind (lists of any length share it).
        raws: The literals as written, in order.
        positions: Where each starts in the text.
        items: The shape's literal places in order: ``(first, count, is_list)`` over ``raws`` (a single
            literal has count 1 and is not a list).
    """

    key: str
    raws: tuple[str, ...]
    positions: tuple[int, ...]
    items: tuple[tuple[int, int, bool], ...]

    def with_list(self, at: int, raws: Sequence[str]) -> Lifted | None:
        """The same shape with the IN list whose first literal starts at ``at`` holding ``raws`` instead.

        ``raws`` are literals as written (``"'001...'"``), at least one: lists of any length share a shape,
        so a template instantiates the result as it would the query written with them. None when no list
        starts at ``at``.
        """
        found = [n for n, (first, _, is_list) in enumerate(self.items) if is_list and self.positions[first] == at]
        if not found or not raws:
            return None
        n = found[0]
        first, count, _ = self.items[n]
        delta = len(raws) - count
        end = first + count
        items = (*self.items[:n], (first, len(raws), True), *((f + delta, c, b) for f, c, b in self.items[n + 1 :]))
        return Lifted(
            self.key,
            (*self.raws[:first], *raws, *self.raws[end:]),
            (*self.positions[:first], *(at,) * len(raws), *self.positions[end:]),
            items,
        )


# An IN list of literals of one kind, in a key whose literals are markers.
_IN_LIST = re.compile(r"(?<![A-Za-z0-9_])([Ii][Nn]\s*\()\s*\x00([sndt])(?:\s*,\s*\x00\2)*\s*\)")


def lift(text: str) -> Lifted | None:
    """Lift the literals out of a SOQL query; None when it has none to lift (or holds a NUL).

    Example:
        >>> lifted = lift("SELECT Id FROM Case WHERE Status IN ('New', 'Open') AND CreatedDate > 2024-01-01T00:00:00Z")
        >>> lifted.raws, lifted.key.replace(chr(0), "?")
        (("'New'", "'Open'", '2024-01-01T00:00:00Z'), 'SELECT Id FROM Case WHERE Status IN (?Ls) AND CreatedDate > ?t')
    """
    if "\x00" in text:  # the marker's character: a text holding it could mimic another's shape
        return None
    parts: list[str] = []
    raws: list[str] = []
    positions: list[int] = []
    last = 0
    for m in _TOKEN.finditer(text):
        kind = m.lastgroup
        if kind == "w":
            continue
        start = m.start()
        if kind == "n" and _COUNT_BEFORE.search(text, max(0, start - 40), start):
            continue
        parts.append(text[last:start])
        parts.append("\x00" + kind)  # type: ignore[operator]
        raws.append(m.group())
        positions.append(start)
        last = m.end()
    if not raws:
        return None
    parts.append(text[last:])
    key = "".join(parts)
    items: list[tuple[int, int, bool]] = []
    out: list[str] = []
    done, at = 0, 0  # literals placed in items; characters of the key copied
    for m in _IN_LIST.finditer(key):
        first = done + key.count("\x00", at, m.start())
        items += [(i, 1, False) for i in range(done, first)]
        count = key.count("\x00", m.start(), m.end())
        items.append((first, count, True))
        out += [key[at : m.start()], m[1], "\x00L", m[2], ")"]
        done, at = first + count, m.end()
    items += [(i, 1, False) for i in range(done, len(raws))]
    out.append(key[at:])
    return Lifted("".join(out), tuple(raws), tuple(positions), tuple(items))


def _one(fn: Callable[[str], Any]) -> Callable[[tuple[str, ...]], tuple[Any, ...]]:
    return lambda raws: (fn(raws[0]),)


# Per-instance queries name the same ids again and again: each literal's spellings are kept (a literal
# that is no id raises, and is not kept; an id literal is short).
@functools.lru_cache(maxsize=32768)
def _spellings(raw: str) -> tuple[str, ...]:
    """The stored spellings an id literal (as written) may match: see ``_id_forms``; ValueError: no id."""
    typed = decode_string(raw, raw, 0)
    canonical = canonical_id(typed)
    if canonical is None:
        raise ValueError(f"invalid ID field: {typed}")
    return _id_forms(typed, canonical)


def _id(raw: str) -> str:
    return _spellings(raw)[0]


def _id_in(raws: tuple[str, ...]) -> tuple[str, ...]:
    """The values of an ``Id IN (...)`` list: each id's spellings, without repeats (as ``id_in_values``)."""
    return tuple(dict.fromkeys(f for r in raws for f in _spellings(r)))


#: How the compiler derives a parameter from the literals (as written) it comes from; see ``Origin``.
DERIVATIONS: dict[str, Callable[[tuple[str, ...]], tuple[Any, ...]]] = {
    "string": _one(lambda raw: decode_string(raw, raw, 0)),
    "like": _one(lambda raw: decode_string(raw, raw, 0, like=True)),
    "number": _one(number_value),
    "date": _one(lambda raw: parse_date(raw).isoformat()),
    "datetime": _one(parse_datetime),
    "id": _one(_id),
    "id_forms": lambda raws: _spellings(raws[0]),
    "id_in": _id_in,
}

# How a template makes a parameter (or a run of them): ("const", value), ("one", items, derivation, index)
# for the index-th value derived from single literals, or ("span", item, derivation) for the values of
# an IN list (one per literal, or an id list's spellings), as many as it has.
_Slot = tuple[Any, ...]


@dataclass(frozen=True)
class _Node:
    plan: Plan | ChildPlan
    slots: tuple[_Slot, ...]
    # The SQL around the slots: texts[i] precedes slot i, the last follows them; None: the plan's SQL.
    texts: tuple[str, ...] | None
    children: tuple[_Node, ...]


class PlanTemplate:
    """A compiled plan with its literal parameters re-derived for each query of its shape."""

    def __init__(self, root: _Node, groups: dict[tuple[tuple[int, ...], str], int], spans: set[tuple[int, str]]):
        self._root = root
        #: (single literal items, derivation) -> how many values it gave for the query compiled.
        self._groups = groups
        #: (IN list item, derivation): its values vary with its length.
        self._spans = spans

    @property
    def plan(self) -> Plan:
        """The plan compiled for the first query of the shape."""
        return self._root.plan  # type: ignore[return-value]

    @classmethod
    def build(cls, lifted: Lifted, query: Any, plan: Plan) -> PlanTemplate | None:
        """The template of ``plan``, compiled from the query that ``lifted`` came from (``query``: its tree).

        None when a lifted literal is not a literal of the tree as written, or is not a parameter of the
        plan (its value may have decided something else), or the plan cannot be rebuilt from its literals.
        """
        literals = {lit.pos: lit.raw for lit in _literals(query)}
        if any(literals.get(pos) != raw for pos, raw in zip(lifted.positions, lifted.raws, strict=True)):
            return None
        place: dict[int, tuple[int, int]] = {}  # position -> (item, index in the item)
        for n, (first, count, _) in enumerate(lifted.items):
            for k in range(count):
                place[lifted.positions[first + k]] = (n, k)
        groups: dict[tuple[tuple[int, ...], str], int] = {}
        spans: set[tuple[int, str]] = set()
        used: set[int] = set()

        def node(p: Plan | ChildPlan) -> _Node | None:
            origins: Sequence[Origin | None] = p.origins or (None,) * len(p.params)
            slots: list[_Slot] = []
            pieces = p.sql.split("?")
            texts = [pieces[0]]
            if len(pieces) != len(p.params) + 1:  # a "?" that is no parameter: no template
                return None
            i = 0
            while i < len(p.params):
                origin = origins[i]
                if origin is None or not any(pos in place for pos in origin[0]):
                    slots.append(("const", p.params[i]))  # a constant of the shape
                    texts.append(pieces[i + 1])
                    i += 1
                    continue
                if not all(pos in place for pos in origin[0]):
                    return None
                where = tuple(place[pos] for pos in origin[0])
                items = tuple(dict.fromkeys(n for n, _ in where))
                listed = [lifted.items[n][2] for n in items]
                if not any(listed):
                    slots.append(("one", items, origin[1], origin[2]))
                    groups[(items, origin[1])] = -1
                    used.update(items)
                    texts.append(pieces[i + 1])
                    i += 1
                    continue
                if len(items) != 1:
                    return None
                n, how = items[0], origin[1]
                first, count, _ = lifted.items[n]
                if how == "id_in":  # the list's spellings: every parameter of this origin, in order
                    if len(where) != count:
                        return None
                    j = i
                    while j < len(p.params) and origins[j] == (origin[0], how, j - i):
                        j += 1
                else:  # one parameter per literal of the list, in order, derived alike
                    j = i + count
                    expected = [((lifted.positions[first + k],), how, 0) for k in range(count)]
                    if list(origins[i:j]) != expected:
                        return None
                if any(piece != ", " for piece in pieces[i + 1 : j]):
                    return None
                slots.append(("span", n, how))
                spans.add((n, how))
                used.add(n)
                texts.append(pieces[j])
                i = j
            children = [node(c) for c in p.children]
            if any(c is None for c in children):
                return None
            plain = all(slot[0] != "span" for slot in slots)
            return _Node(p, tuple(slots), None if plain else tuple(texts), tuple(children))  # type: ignore[arg-type]

        root = node(plan)
        if root is None or used != set(range(len(lifted.items))):
            return None
        template = cls(root, groups, spans)
        try:
            for items, how in groups:
                groups[(items, how)] = len(DERIVATIONS[how](template._raws(lifted, items)))
        except (OrgError, ValueError):
            return None
        again = template.instantiate(lifted)
        if again is None or not _same(again, plan):  # the derivations must give back the compiler's values
            return None
        return template

    @staticmethod
    def _raws(lifted: Lifted, items: tuple[int, ...]) -> tuple[str, ...]:
        return tuple(lifted.raws[lifted.items[n][0]] for n in items)

    def instantiate(self, lifted: Lifted) -> Plan | None:
        """The plan of the query ``lifted`` came from (of this template's shape); None: compile it instead."""
        derived: dict[Any, tuple[Any, ...]] = {}
        try:
            for (items, how), count in self._groups.items():
                values = DERIVATIONS[how](self._raws(lifted, items))
                if len(values) != count:  # a different number of placeholders: another statement
                    return None
                derived[(items, how)] = values
            for n, how in self._spans:
                first, count, _ = lifted.items[n]
                raws = lifted.raws[first : first + count]
                if how == "id_in":
                    derived[(n, how)] = DERIVATIONS[how](raws)
                else:
                    derived[(n, how)] = tuple(DERIVATIONS[how]((raw,))[0] for raw in raws)
        except (OrgError, ValueError, IndexError):
            return None
        return _rebuild(self._root, derived)  # type: ignore[return-value]


def _rebuild(node: _Node, derived: dict[Any, tuple[Any, ...]]) -> Plan | ChildPlan:
    params: list[Any] = []
    sql: list[str] = []
    for i, slot in enumerate(node.slots):
        if node.texts is not None:
            sql.append(node.texts[i])
        if slot[0] == "const":
            params.append(slot[1])
            sql.append("?")
        elif slot[0] == "one":
            params.append(derived[(slot[1], slot[2])][slot[3]])
            sql.append("?")
        else:
            values = derived[(slot[1], slot[2])]
            params += values
            sql.append(", ".join("?" * len(values)))
    children = tuple(_rebuild(c, derived) for c in node.children)
    if node.texts is None:
        return dataclasses.replace(node.plan, params=tuple(params), children=children)  # type: ignore[arg-type]
    sql.append(node.texts[-1])
    return dataclasses.replace(node.plan, sql="".join(sql), params=tuple(params), children=children)  # type: ignore[arg-type]


def _same(a: Plan | ChildPlan, b: Plan | ChildPlan) -> bool:
    return (
        a.sql == b.sql
        and [(type(x), x) for x in a.params] == [(type(x), x) for x in b.params]
        and len(a.children) == len(b.children)
        and all(_same(x, y) for x, y in zip(a.children, b.children, strict=True))
    )


def _literals(node: Any) -> list[Literal]:
    """Every literal of a syntax tree."""
    found: list[Literal] = []
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, Literal):
            found.append(item)
        elif isinstance(item, tuple | list):
            stack.extend(item)
        elif dataclasses.is_dataclass(item):
            stack.extend(getattr(item, f.name) for f in dataclasses.fields(item))
    return found


def compile_shaped(text: str, catalog: Catalog, lifted: Lifted | None = None) -> tuple[Plan, PlanTemplate | None]:
    """Parse and compile ``text``, and the template of its shape when it has one.

    ``lifted`` is ``lift(text)`` when the caller has it already.

    Raises:
        SoqlError: As :func:`~crmarena_gym.org.soql.parse` and :func:`~crmarena_gym.org.soql.compile_query`.
    """
    query = parse(text)
    plan = compile_query(text, query, catalog)
    lifted = lifted or lift(text)
    return plan, None if lifted is None else PlanTemplate.build(lifted, query, plan)


__all__ = ["DERIVATIONS", "Lifted", "PlanTemplate", "compile_shaped", "lift"]
