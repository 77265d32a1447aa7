"""SOSL over SQLite FTS5: the ``search`` half of the embedded org.

The statement ``FIND {terms} [IN ALL|NAME|EMAIL|PHONE FIELDS] [RETURNING Obj[(fields [WHERE ...]
[ORDER BY ...] [LIMIT n] [OFFSET n])], ...] [LIMIT n]`` runs in three steps:

1. The search terms (words, quoted phrases, ``AND``, ``OR``, ``AND NOT``, parentheses, the ``*`` and
   ``?`` wildcards, backslash escapes) are parsed into a small tree.
2. Each object's searchable text lives in an FTS5 index of its own, built on first use from the org
   file opened read-only (the org database is never written) into a private temporary file, and then
   only read, by as many read-only connections as threads search at once. The tree becomes an FTS5
   ``MATCH`` expression that is exact in every case: a trailing ``*`` is a prefix query, and any other
   wildcard is replaced by the words of the object's vocabulary it matches (at most
   :data:`MAX_EXPANSIONS`; a broader term is refused with ``INVALID_SEARCH``). Matches are ranked by
   BM25. The whole search runs under the org's QUERY_TIMEOUT deadline, as a SOQL query does.
3. The fields listed in ``RETURNING`` are fetched through the org's own SOQL engine
   (``SELECT fields FROM Obj WHERE Id IN (...) AND (where) ORDER BY ... LIMIT n``), so ``WHERE``
   means exactly what it means in SOQL. That query is compiled once per RETURNING item (with a
   stand-in id) and the hits are bound into its plan, not written into a query to be parsed again.

Semantics, following Salesforce's SOSL reference:

- Text is split into words at every character that is not a letter or digit; matching ignores case.
  A word matches a whole word (no stemming); a phrase matches consecutive words of one field; words
  side by side without an operator must all match (implicit ``AND``), possibly in different fields,
  except in knowledge articles, where OR is the default operator.
- Operators are evaluated in the reference's order: parentheses, then ``AND`` and ``AND NOT``, then
  ``OR``; the operator left unwritten between words takes the place of the one it stands for (so in
  articles ``a b AND c`` is ``a OR (b AND c)``, elsewhere ``a b OR c`` is ``(a AND b) OR c``).
  ``AND NOT`` excludes the word, phrase or group after it. Operators are case-insensitive (``and``
  is ``AND``); quote them (``"and"``) to search for the words themselves. ``NOT`` on its own is an
  ordinary word.
- The reserved characters ``? & | ! { } [ ] ( ) ^ ~ * : \\ " ' + -`` are searched for only when
  escaped with a backslash; unescaped, ``*`` and ``?`` are wildcards, ``"`` quotes a phrase,
  parentheses group (outside phrases), and any other one is refused with ``MALFORMED_SEARCH``.
- ``*`` matches zero or more letters or digits, ``?`` exactly one; neither may begin a word, and a
  word with a wildcard needs at least two other characters. A search term of one character answers
  ``INVALID_SEARCH: search term must be longer than one character``.
- ``IN NAME FIELDS`` searches each object's name field, ``EMAIL``/``PHONE`` the email and phone
  fields, ``ALL`` (the default) every searchable field; phone fields also match their digits run
  together (``4155550100`` finds ``(415) 555-0100``). Products and articles ignore the IN clause:
  all their fields are searched.
- Without ``RETURNING`` every searchable object except products and articles is searched (Salesforce
  returns those only when named) and each match is returned with its ``Id``.
- Each object keeps at most 2,000 candidates, best ranked first, before ``WHERE`` applies (Salesforce,
  too, searches a bounded set of records); at most 2,000 records come back in all. A statement-wide
  ``LIMIT`` with no per-object limits is shared evenly among the objects; otherwise objects take their
  records in ``RETURNING`` order until the limit is spent.
- Records come back per object in ``RETURNING`` order, ranked by relevance (BM25, then ``Id``) unless
  the object has an ``ORDER BY``.

Example:
    >>> from crmarena_gym.org import LocalOrg
    >>> org = LocalOrg(getfixture("tiny_org"))  # one issue: "Shipping Delay"
    >>> found = run_search(org, "FIND {ship*} IN NAME FIELDS RETURNING Issue__c(Id, Name)")
    >>> [r["Name"] for r in found["searchRecords"]]
    ['Shipping Delay']
"""

from __future__ import annotations

import bisect
import itertools
import math
import os
import re
import shutil
import sqlite3
import tempfile
import threading
import time
import weakref
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from crmarena_gym import _signals as signals
from crmarena_gym._memory import bytes_cache
from crmarena_gym.org._base import OrgError
from crmarena_gym.org._local import _TIMEOUT_MESSAGE, raise_if_signalled
from crmarena_gym.org.soql import MAX_OFFSET, positioned_message
from crmarena_gym.schema import DEFAULT_KIND, Field, FieldType, OrgSchema, SObject, org_schema, quote_identifier

__all__ = ["MAX_EXPANSIONS", "MAX_RESULTS", "SearchIndex", "escape_refused", "parse_search", "run_search"]

#: Most records one search returns, and most candidates kept per object (Salesforce's limit).
MAX_RESULTS = 2000

_CACHE_KEY = "crmarena_gym.org._sosl.index"
_CACHE_LOCK = threading.Lock()
# Salesforce returns these only when RETURNING names them.
_NOT_IN_DEFAULT_SCOPE = frozenset({"Product2", "Knowledge__kav"})
# The IN clause "doesn't apply to articles, documents, feed comments, feed items, files, products, and
# solutions ... all fields are searched" (SOSL reference, IN SearchGroup).
_EVERY_FIELD_ALWAYS = frozenset({"Product2", "Knowledge__kav"})
# "When searching articles, documents, and solutions, AND must be specified because OR is the default
# operator" (SOSL reference, FIND {SearchQuery}).
_OR_BY_DEFAULT = frozenset({"Knowledge__kav"})
_AGGREGATES = frozenset({"count", "count_distinct", "sum", "avg", "min", "max", "grouping"})
_SCOPES = {"all": "ALL", "name": "NAME", "email": "EMAIL", "phone": "PHONE", "sidebar": "ALL"}
_WORD_RE = re.compile(r"[^\W_]+")
#: SOSL's reserved characters (the SOSL reference, FIND {SearchQuery}); inside a search term each must
#: be escaped with a backslash to be searched for. Unescaped, ``*`` and ``?`` are wildcards, ``"``
#: quotes a phrase and parentheses group; every other one is refused.
RESERVED_CHARACTERS = frozenset("?&|!{}[]()^~*:\\\"'+-")
RESERVED_IN_WORDS = RESERVED_CHARACTERS - frozenset('*?"()')
RESERVED_IN_PHRASES = RESERVED_CHARACTERS - frozenset('*?"')
# Bounds that keep the recursive tree walks far from Python's recursion limit.
MAX_TERMS = 200
MAX_NESTING = 20
#: Most words the wildcard terms of one search may stand for in one object; past it the search is
#: refused as too broad (Lucene's default clause limit: wildcard queries expand to index terms).
MAX_EXPANSIONS = 1024
_TABLE = "fts"
_DIR_PREFIX = "crmarena_gym_search_"  # then the process id: crmarena_gym_search_<pid>_<random>
# FTS5 virtual-machine steps between two checks of the deadline.
_PROGRESS_STEPS = 2000
# Searches whose ids an index keeps (see SearchIndex.search), and the most ids it keeps in all.
_HITS_KEPT = 1024
_HIT_IDS_KEPT = 100_000
# Statements up to this long are kept parsed (see run_search).
_SHORT_SEARCH = 4096


class SearchableOrg(Protocol):
    """What :func:`run_search` needs of an org (``LocalOrg`` provides it)."""

    path: Path
    backend_cache: dict[str, object]
    timeout: float
    schema: OrgSchema  # the org kind's objects (RETURNING names, the default scope)

    def query(self, soql: str) -> dict[str, Any]: ...

    def _query_in_list(self, soql: str, at: int, raws: Sequence[str]) -> dict[str, Any] | None: ...


def _malformed(message: str, text: str | None = None, pos: int | None = None) -> OrgError:
    if text is not None and pos is not None:
        message = positioned_message(text, pos, message)
    return OrgError("MALFORMED_SEARCH", message)


def _too_short() -> OrgError:
    # Salesforce's answer to FIND {a}, and to a wildcard word with fewer than two other characters.
    return OrgError("INVALID_SEARCH", "search term must be longer than one character")


def words(text: str) -> list[str]:
    """The lower-cased words of ``text``, split as the search index splits them.

    Example:
        >>> words("Jane.Doe@Example.com, (415) 555-0100")
        ['jane', 'doe', 'example', 'com', '415', '555', '0100']
    """
    return _WORD_RE.findall(text.lower())


# -- the search terms -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Phrase:
    """Consecutive words, each a lower-cased pattern in which ``*`` and ``?`` are wildcards."""

    patterns: tuple[str, ...]
    source: str


@dataclass(frozen=True)
class And:
    left: Node
    right: Node


@dataclass(frozen=True)
class Or:
    left: Node
    right: Node


@dataclass(frozen=True)
class AndNot:
    """``left`` without ``right``: ``AND NOT`` excludes the one word, phrase or group that follows it."""

    left: Node
    right: Node


Node = Phrase | And | Or | AndNot


@dataclass(frozen=True)
class SearchTerms:
    """A search term read both ways it can be read: words side by side (``rain jacket``) joined by AND,
    SOSL's default operator, or by OR, the default operator of knowledge articles ("When searching
    articles, documents, and solutions, AND must be specified because OR is the default operator",
    SOSL reference, FIND {SearchQuery}). The operator left unwritten takes the place in the order of
    evaluation of the operator it stands for, so the two trees may group differently.
    """

    joined_by_and: Node
    joined_by_or: Node

    def tree(self, obj: SObject) -> Node:
        """The tree that applies to ``obj``'s records."""
        return self.joined_by_or if obj.name in _OR_BY_DEFAULT else self.joined_by_and


@dataclass(frozen=True)
class _TermToken:
    kind: str  # "(", ")", "AND", "OR", "ANDNOT", "TERM"
    chars: tuple[tuple[str, bool], ...] = ()  # (character, is a wildcard) for a TERM
    source: str = ""


def _read_chars(text: str, i: int, *, phrase: bool) -> tuple[list[tuple[str, bool]], int]:
    """The characters of one word (up to a space, parenthesis or quote) or of a quoted phrase (up to
    its closing quote) from ``text[i]``, and where they end.

    A backslash escapes the next character; an unescaped reserved character is refused, as Salesforce
    refuses it ("An error occurs if you do not precede reserved characters with a backslash").
    """
    chars: list[tuple[str, bool]] = []
    n = len(text)
    reserved = RESERVED_IN_PHRASES if phrase else RESERVED_IN_WORDS
    while i < n and (text[i] != '"' if phrase else not (text[i].isspace() or text[i] in '()"')):
        c = text[i]
        if c == "\\":
            if i + 1 >= n:
                raise _malformed("the search term ends with a backslash that escapes nothing: write \\\\ for one")
            chars.append((text[i + 1], False))
            i += 2
            continue
        if c in reserved:
            raise _malformed(
                f"the reserved character {c!r} must be escaped with a backslash in the search term "
                f"(write \\{c}), or left out: {_around(text, i)!r}"
            )
        chars.append((c, c in "*?"))
        i += 1
    return chars, i


def escape_refused(term: str) -> str:
    r"""``term`` with each reserved character that would be refused escaped, and nothing else changed.

    Salesforce refuses a search whose term holds an unescaped reserved character; the ones that are
    search syntax are kept as written: ``*`` and ``?`` (wildcards), ``"`` (phrases), parentheses outside
    a phrase (groups) and backslash escapes, as are the operators AND, OR and AND NOT. A search that
    would be refused only for a stray character is searched instead, and any other is sent unchanged.

    Example:
        >>> print(escape_refused("men's trail-runner (v2) shoe* and \\-socks"))
        men\'s trail\-runner (v2) shoe* and \-socks
        >>> print(escape_refused('"rain (pro)" OR jacket'))
        "rain \(pro\)" OR jacket
    """
    out: list[str] = []
    phrase = False
    i, n = 0, len(term)
    while i < n:
        c = term[i]
        if c == "\\":
            out.append(term[i : i + 2] if i + 1 < n else "\\\\")  # an escape as written; a last one escaped
            i += 2
            continue
        if c == '"':
            phrase = not phrase
        elif c in (RESERVED_IN_PHRASES if phrase else RESERVED_IN_WORDS):
            out.append("\\")
        out.append(c)
        i += 1
    return "".join(out)


def _around(text: str, i: int) -> str:
    """The word of the search term around position ``i`` (for messages)."""
    start, end = i, i + 1
    while start > 0 and not text[start - 1].isspace():
        start -= 1
    while end < len(text) and not text[end].isspace():
        end += 1
    return text[start:end]


def _lex_terms(text: str) -> list[_TermToken]:
    tokens: list[_TermToken] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c.isspace():
            i += 1
        elif c in "()":
            tokens.append(_TermToken(c, source=c))
            i += 1
        elif c == '"':
            start = i
            chars, i = _read_chars(text, i + 1, phrase=True)
            if i >= n:
                raise _malformed(f"unterminated quoted phrase in the search term: {text[start:]!r}")
            i += 1
            _append_term(tokens, _TermToken("TERM", tuple(chars), text[start:i]))
        else:
            start = i
            chars, i = _read_chars(text, i, phrase=False)
            source = text[start:i]
            upper = source.upper()
            if upper in ("AND", "OR"):
                if upper == "AND" and tokens and tokens[-1].kind == "AND":
                    raise _malformed("unexpected 'AND' after 'AND' in the search term")
                tokens.append(_TermToken(upper, source=source))
            elif upper == "NOT" and tokens and tokens[-1].kind == "AND":
                tokens[-1] = _TermToken("ANDNOT", source=tokens[-1].source + " " + source)
            else:
                _append_term(tokens, _TermToken("TERM", tuple(chars), source))
    return tokens


def _append_term(tokens: list[_TermToken], term: _TermToken) -> None:
    """Append a word or phrase; one without a letter, digit or wildcard (``,``, ``\\-``) that follows a
    word, phrase or group is left out: it searches for nothing, and the default operator joining it
    would split ``a , AND NOT b`` into ``a OR (AND NOT b)`` where OR is the default operator."""
    if tokens and tokens[-1].kind in ("TERM", ")") and not any(wild or ch.isalnum() for ch, wild in term.chars):
        return
    tokens.append(term)


def _phrase(token: _TermToken) -> Phrase:
    patterns: list[str] = []
    current: list[str] = []
    for ch, wild in [*token.chars, (" ", False)]:
        if wild or ch.isalnum():
            current.append(ch.lower() if not wild else ch)
        elif current:
            patterns.append("".join(current))
            current = []
    for pattern in patterns:
        if pattern[0] in "*?":
            raise _malformed(f"a wildcard cannot begin a search word: {token.source!r}")
        literal = sum(1 for ch in pattern if ch not in "*?")
        if literal < len(pattern) and literal < 2:
            raise _too_short()
    return Phrase(tuple(patterns), token.source)


_OPERAND_KINDS = frozenset({"TERM", "("})


class _TermParser:
    """The order of evaluation of the SOSL reference (FIND {SearchQuery}, operators): "1. Parentheses
    2. AND and AND NOT (evaluated from right to left) 3. OR".

    ``AND NOT`` excludes the word, phrase or group right after it, so a run of ``AND`` and ``AND NOT``
    is one conjunction of kept and excluded operands, the same whichever end it is evaluated from.
    Words side by side are joined by the default operator, in that operator's place: AND
    (``a b OR c`` is ``(a AND b) OR c``), or OR (``a b AND c`` is ``a OR (b AND c)``).

    ``expr := and (OR and)*``, ``and := primary ((AND | AND NOT) primary)*``; the default operator is
    one more ``OR`` or ``AND`` wherever two operands meet.
    """

    def __init__(self, tokens: list[_TermToken], default: str) -> None:
        self.tokens = tokens
        self.pos = 0
        self.depth = 0
        self.default = default
        self.kept = False  # whether an operand with words came since the last explicit OR or "("
        terms = sum(1 for t in tokens if t.kind == "TERM")
        if terms > MAX_TERMS:
            raise _malformed(f"too many words or phrases in the search term: {terms} (at most {MAX_TERMS})")

    def peek(self) -> _TermToken | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def joins(self, tok: _TermToken | None, operators: tuple[str, ...], default: str) -> bool:
        """Whether ``tok`` continues a run of ``operators``: one of them, or an operand met where the
        default operator (``default``) joins it."""
        return tok is not None and (tok.kind in operators or (self.default == default and tok.kind in _OPERAND_KINDS))

    def parse(self) -> Node | None:
        if not self.tokens:
            raise _too_short()
        node = self.expr()
        extra = self.peek()
        if extra is not None:
            raise _malformed(f"unexpected {extra.source!r} in the search term")
        return node

    def expr(self) -> Node | None:
        node = self.conjunction()
        while self.joins(tok := self.peek(), ("OR",), "OR"):
            if tok.kind == "OR":
                self.pos += 1
                self.kept = False
            node = _combine(Or, node, self.conjunction())
        return node

    def conjunction(self) -> Node | None:
        node = self.primary()
        while self.joins(tok := self.peek(), ("AND", "ANDNOT"), "AND"):
            if tok.kind in ("AND", "ANDNOT"):
                self.pos += 1
            if tok.kind == "ANDNOT" and not self.kept:  # the same test in both readings: they refuse alike
                raise _malformed(f"nothing to exclude from before {tok.source!r} in the search term")
            right = self.primary()
            if tok.kind == "ANDNOT":
                node = node if node is None or right is None else AndNot(node, right)
            else:
                node = _combine(And, node, right)
        return node

    def primary(self) -> Node | None:
        tok = self.peek()
        if tok is None:
            last = self.tokens[-1].source
            raise _malformed(f"the search term ends after {last!r}: a word or phrase must follow")
        self.pos += 1
        if tok.kind == "TERM":
            phrase = _phrase(tok)
            self.kept = self.kept or bool(phrase.patterns)
            return phrase if phrase.patterns else None
        if tok.kind == "(":
            self.depth += 1
            if self.depth > MAX_NESTING:
                raise _malformed(f"parentheses nested too deeply in the search term (at most {MAX_NESTING})")
            outside, self.kept = self.kept, False
            node = self.expr()
            self.depth -= 1
            close = self.peek()
            if close is None or close.kind != ")":
                raise _malformed("missing ')' in the search term")
            self.pos += 1
            self.kept = outside or node is not None
            return node
        raise _malformed(f"unexpected {tok.source!r} in the search term")


def _combine(kind: type[And] | type[Or], left: Node | None, right: Node | None) -> Node | None:
    if left is None:
        return right
    if right is None:
        return left
    return kind(left, right)


def _literal_count(node: Node) -> int:
    if isinstance(node, Phrase):
        return sum(1 for pattern in node.patterns for ch in pattern if ch not in "*?")
    return _literal_count(node.left) + _literal_count(node.right)


def parse_terms(text: str, default: str = "AND") -> Node:
    """Parse the text between ``FIND {`` and ``}`` into a tree of phrases and operators.

    Args:
        text: The search term.
        default: The operator between words written side by side: ``"AND"`` (SOSL's default) or
            ``"OR"`` (the default for knowledge articles).

    Raises:
        OrgError: ``MALFORMED_SEARCH`` for a syntax error or a term too short to search.

    Example:
        >>> tree = parse_terms('shoe* AND NOT "rain jacket"')
        >>> type(tree).__name__, tree.left.patterns, tree.right.patterns
        ('AndNot', ('shoe*',), ('rain', 'jacket'))
        >>> type(parse_terms("trail shoe OR boot")).__name__, type(parse_terms("trail shoe AND boot", "OR")).__name__
        ('Or', 'Or')
    """
    return _parse_tokens(_lex_terms(text), default)


def _parse_tokens(tokens: list[_TermToken], default: str) -> Node:
    node = _TermParser(tokens, default).parse()
    if node is None or _literal_count(node) < 2:
        raise _too_short()
    return node


def parse_search_terms(text: str) -> SearchTerms:
    """The search term parsed for both default operators (:class:`SearchTerms`).

    Raises:
        OrgError: ``MALFORMED_SEARCH`` for a syntax error or a term too short to search.
    """
    tokens = _lex_terms(text)
    return SearchTerms(_parse_tokens(tokens, "AND"), _parse_tokens(tokens, "OR"))


# -- the statement ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Clause:
    """A piece of the statement passed to SOQL verbatim, and where it starts in the statement."""

    text: str
    start: int


@dataclass(frozen=True)
class Returning:
    """One object of the RETURNING clause."""

    obj: SObject
    fields: tuple[Clause, ...]
    where: Clause | None = None
    order_by: Clause | None = None
    limit: int | None = None
    offset: int | None = None
    start: int = 0  # where the object's name starts in the statement


@dataclass(frozen=True)
class SearchSpec:
    """A parsed SOSL statement."""

    terms: SearchTerms
    scope: str  # "ALL", "NAME", "EMAIL" or "PHONE"
    returning: tuple[Returning, ...]
    limit: int | None
    explicit_returning: bool


_TOKEN_RE = re.compile(
    r"""(?P<ws>\s+)
    |(?P<string>'(?:[^'\\]|\\.)*')
    |(?P<word>-?[A-Za-z0-9_][A-Za-z0-9_.:+\-]*)
    |(?P<op>!=|<>|<=|>=|=|<|>)
    |(?P<punct>[(),])""",
    re.VERBOSE | re.DOTALL,
)


@dataclass(frozen=True)
class _Tok:
    kind: str
    text: str
    start: int
    end: int

    def is_word(self, *words: str) -> bool:
        return self.kind == "word" and self.text.lower() in words


def _tokenize(text: str, offset: int) -> list[_Tok]:
    tokens: list[_Tok] = []
    pos = offset
    while pos < len(text):
        m = _TOKEN_RE.match(text, pos)
        if m is None:
            if text[pos] == "'":
                raise _malformed(f"unterminated string literal: {text[pos : pos + 30]!r}")
            raise _malformed(f"unexpected character {text[pos]!r} at position {pos + 1}")
        if m.lastgroup != "ws":
            tokens.append(_Tok(str(m.lastgroup), m.group(), m.start(), m.end()))
        pos = m.end()
    return tokens


class _StatementParser:
    def __init__(self, text: str, tokens: list[_Tok], schema: OrgSchema) -> None:
        self.text = text
        self.tokens = tokens
        self.schema = schema
        self.pos = 0

    def peek(self, ahead: int = 0) -> _Tok | None:
        i = self.pos + ahead
        return self.tokens[i] if i < len(self.tokens) else None

    def error(self, message: str, tok: _Tok | None) -> OrgError:
        return _malformed(message, self.text, tok.start if tok is not None else len(self.text.rstrip()))

    def next(self, what: str) -> _Tok:
        tok = self.peek()
        if tok is None:
            raise self.error(f"unexpected end of search, expecting {what}", None)
        self.pos += 1
        return tok

    def expect_word(self, *words: str) -> _Tok:
        tok = self.next(" or ".join(w.upper() for w in words))
        if not tok.is_word(*words):
            raise self.error(f"unexpected token: {tok.text!r}, expecting {' or '.join(w.upper() for w in words)}", tok)
        return tok

    def integer(self, clause: str) -> int:
        tok = self.next(f"a number after {clause}")
        if tok.kind != "word" or not (tok.text.isascii() and tok.text.isdigit()):
            raise self.error(f"{clause} needs a non-negative integer, got {tok.text!r}", tok)
        return int(tok.text) if len(tok.text) <= 19 else 2**63  # past 19 digits: beyond any limit

    def refuse_unsupported(self, tok: _Tok) -> None:
        if tok.is_word("with", "update", "using"):
            nxt = self.peek(1)
            clause = tok.text.upper() + (" " + nxt.text if nxt is not None else "")
            raise self.error(f"{clause!r} is not supported by the embedded org's search", tok)

    def parse(self, terms: SearchTerms) -> SearchSpec:
        scope = "ALL"
        tok = self.peek()
        if tok is not None and tok.is_word("in"):
            self.pos += 1
            group = self.next("ALL, NAME, EMAIL or PHONE")
            if group.kind != "word" or group.text.lower() not in _SCOPES:
                raise self.error(f"unexpected token: {group.text!r}, expecting ALL, NAME, EMAIL or PHONE", group)
            scope = _SCOPES[group.text.lower()]
            self.expect_word("fields")
        returning: list[Returning] = []
        explicit = False
        tok = self.peek()
        if tok is not None and tok.is_word("returning"):
            self.pos += 1
            explicit = True
            returning.append(self.returning_item())
            while (tok := self.peek()) is not None and tok.kind == "punct" and tok.text == ",":
                self.pos += 1
                returning.append(self.returning_item())
            seen: set[str] = set()
            for item in returning:
                if item.obj.name in seen:
                    raise _malformed(f"duplicate object in RETURNING: {item.obj.name!r}", self.text, item.start)
                seen.add(item.obj.name)
        limit = None
        tok = self.peek()
        if tok is not None:
            self.refuse_unsupported(tok)
        if tok is not None and tok.is_word("limit"):
            self.pos += 1
            limit = self.integer("LIMIT")
        tok = self.peek()
        if tok is not None:
            self.refuse_unsupported(tok)
            raise self.error(f"unexpected token: {tok.text!r}", tok)
        if not explicit:
            returning = [
                Returning(obj, (Clause("Id", -1),))
                for obj in self.schema.objects
                if obj.name not in _NOT_IN_DEFAULT_SCOPE and _columns(obj, "ALL")
            ]
        return SearchSpec(terms, scope, tuple(returning), limit, explicit)

    def returning_item(self) -> Returning:
        tok = self.next("an object name after RETURNING")
        if tok.kind != "word" or not re.fullmatch(r"[A-Za-z][A-Za-z0-9_]*", tok.text):
            raise self.error(f"unexpected token: {tok.text!r}, expecting an object name", tok)
        obj = self.schema.get_object(tok.text)
        if obj is None:
            raise OrgError(
                "INVALID_TYPE",
                positioned_message(
                    self.text,
                    tok.start,
                    f"sObject type '{tok.text}' is not supported. If you are attempting to use a custom object, be "
                    "sure to append the '__c' after the entity name. Please reference your WSDL or the describe "
                    "call for the appropriate names.",
                ),
            )
        nxt = self.peek()
        if nxt is None or nxt.kind != "punct" or nxt.text != "(":
            return Returning(obj, (Clause("Id", -1),), start=tok.start)
        self.pos += 1
        fields = self.field_list()
        where = order_by = None
        limit = offset = None
        tok = self.peek()
        if tok is not None and tok.is_word("where"):
            self.pos += 1
            where = self.clause_text("WHERE", ("order", "limit", "offset", "using"))
        tok = self.peek()
        if tok is not None and tok.is_word("using"):
            self.refuse_unsupported(tok)
        if tok is not None and tok.is_word("order"):
            self.pos += 1
            self.expect_word("by")
            order_by = self.clause_text("ORDER BY", ("limit", "offset"))
        tok = self.peek()
        if tok is not None and tok.is_word("limit"):
            self.pos += 1
            limit = self.integer("LIMIT")
        tok = self.peek()
        if tok is not None and tok.is_word("offset"):
            self.pos += 1
            number = self.peek()
            offset = self.integer("OFFSET")
            if offset > MAX_OFFSET and number is not None:
                # Refused here, whether or not the item has an ORDER BY (and so whether SOQL sees it).
                raise OrgError(
                    "NUMBER_OUTSIDE_VALID_RANGE",
                    positioned_message(self.text, number.start, f"Maximum SOSL offset allowed is {MAX_OFFSET}"),
                )
        close = self.next("')'")
        if close.kind != "punct" or close.text != ")":
            raise self.error(f"unexpected token: {close.text!r}, expecting ')'", close)
        return Returning(obj, fields, where, order_by, limit, offset, tok.start)

    def field_list(self) -> tuple[Clause, ...]:
        """``item (, item)*`` where an item is a field path, or ``function(field path)`` (toLabel, FORMAT)."""
        fields: list[Clause] = []
        while True:
            head = self.next("a field name")
            if head.kind != "word" or head.is_word("where", "order", "limit", "offset", "using"):
                raise self.error(f"unexpected token: {head.text!r}, expecting a field name", head)
            end = head.end
            nxt = self.peek()
            if nxt is not None and nxt.kind == "punct" and nxt.text == "(":
                if head.text.lower() in _AGGREGATES:
                    raise self.error(f"aggregate functions are not allowed in a search: {head.text}()", head)
                self.pos += 1
                arg = self.next("a field name")
                if arg.kind != "word":
                    raise self.error(f"unexpected token: {arg.text!r}, expecting a field name", arg)
                close = self.next("')'")
                if close.kind != "punct" or close.text != ")":
                    raise self.error(f"unexpected token: {close.text!r}, expecting ')'", close)
                end = close.end
                alias = self.peek()
                if (
                    alias is not None
                    and alias.kind == "word"
                    and not alias.is_word("where", "order", "limit", "offset", "using")
                ):
                    self.pos += 1
                    end = alias.end
            fields.append(Clause(self.text[head.start : end], head.start))
            tok = self.peek()
            if tok is not None and tok.kind == "punct" and tok.text == ",":
                self.pos += 1
                continue
            return tuple(fields)

    def clause_text(self, clause: str, stops: tuple[str, ...]) -> Clause:
        start_pos = self.pos
        depth = 0
        while (tok := self.peek()) is not None:
            if tok.kind == "punct" and tok.text == "(":
                depth += 1
            elif tok.kind == "punct" and tok.text == ")":
                if depth == 0:
                    break
                depth -= 1
            elif depth == 0 and tok.is_word(*stops):
                break
            self.pos += 1
        if self.pos == start_pos:
            tok = self.peek()
            raise self.error(f"{clause} needs a condition, got {tok.text if tok else 'nothing'!r}", tok)
        first = self.tokens[start_pos]
        return Clause(self.text[first.start : self.tokens[self.pos - 1].end], first.start)


def _find_braces(text: str) -> tuple[str, int]:
    """The search term between ``FIND {`` and its ``}``, and the index just past the ``}``."""
    m = re.match(r"\s*FIND\b\s*", text, re.IGNORECASE)
    if m is None:
        head = text.strip().split(None, 1)[0] if text.strip() else ""
        raise _malformed(f"unexpected token: {head!r}, a search starts with FIND" if head else "empty search")
    i = m.end()
    if i >= len(text) or text[i] != "{":
        raise _malformed("No search term found. The search term must be enclosed in braces.")
    j = i + 1
    while j < len(text):
        if text[j] == "\\":
            j += 2
            continue
        if text[j] == "}":
            return text[i + 1 : j], j + 1
        j += 1
    raise _malformed("missing '}' after the search term")


def parse_search(sosl: str, schema: OrgSchema | None = None) -> SearchSpec:
    """Parse a SOSL statement over the objects of ``schema`` (the service org's when None).

    Raises:
        OrgError: ``MALFORMED_SEARCH`` for a syntax error, ``INVALID_TYPE`` for an unknown object.

    Example:
        >>> spec = parse_search("FIND {shoe*} IN NAME FIELDS RETURNING Product2(Id, Name LIMIT 5)")
        >>> spec.scope, spec.returning[0].obj.name, [f.text for f in spec.returning[0].fields]
        ('NAME', 'Product2', ['Id', 'Name'])
    """
    if not isinstance(sosl, str):
        raise _malformed(f"the search must be a string, got {type(sosl).__name__}: {sosl!r}")
    term_text, end = _find_braces(sosl)
    terms = parse_search_terms(term_text)
    return _StatementParser(sosl, _tokenize(sosl, end), schema or org_schema(DEFAULT_KIND)).parse(terms)


# -- the index --------------------------------------------------------------------------------------


def _columns(obj: SObject, scope: str) -> tuple[Field, ...]:
    """The fields of ``obj`` that a search ``IN scope FIELDS`` looks at."""
    if scope == "NAME":
        return tuple(f for f in obj.fields if f.name_field)
    if scope == "EMAIL":
        return tuple(f for f in obj.fields if f.type is FieldType.EMAIL and (f.searchable or f.name_field))
    if scope == "PHONE":
        return tuple(f for f in obj.fields if f.type is FieldType.PHONE and (f.searchable or f.name_field))
    return tuple(f for f in obj.fields if f.searchable or f.name_field)


def _index_text(field: Field, value: object) -> str | None:
    if value is None:
        return None
    text = str(value)
    if field.type is FieldType.PHONE:
        digits = "".join(ch for ch in text if ch.isdigit())
        if digits:
            text = f"{text} {digits}"
    return text


@dataclass
class _ObjectIndex:
    path: Path  # the index file: written once when built, then only read
    fields: tuple[Field, ...]  # column c<i> holds fields[i]
    vocabulary: list[str]  # every distinct word of the indexed fields, sorted
    idle: list[_Reader]  # open connections not in use


class _Reader:
    """A read-only connection to one object's index file, with its own deadline."""

    def __init__(self, path: Path) -> None:
        self.deadline = math.inf
        self.conn = sqlite3.connect(path.as_uri() + "?mode=ro&immutable=1", uri=True, check_same_thread=False)
        self.conn.set_progress_handler(self._progress, _PROGRESS_STEPS)

    def _progress(self) -> int:
        return 1 if time.monotonic() > self.deadline else 0


class SearchIndex:
    """FTS5 indexes of one org file's searchable fields, one index file per object.

    Each object's index is built on first use into a file of a private temporary directory (removed
    when the index is garbage collected); once built it is only read, through a pool of read-only
    connections, so that searches from many threads run side by side and none waits for another's.
    Only the first search of an object waits for its build. A pickled index comes back empty and
    rebuilds itself.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()  # held only briefly: the tables below and the reader pools
        self._building: dict[str, threading.Lock] = {}
        self._objects: dict[str, _ObjectIndex] = {}
        self._dir: Path | None = None
        self._pid = os.getpid()  # a forked child opens its own connections to the same files
        # The ids each search found, by (object, terms, scope, limit): the index never changes, and agents
        # (and the oracle) search for the same terms again and again. Bounded by entries and by ids.
        # An entry keeps how many words its wildcards stood for: over MAX_EXPANSIONS, it is searched again.
        self._hits: OrderedDict[tuple[str, Node, str, int], tuple[tuple[str, ...], int]] = OrderedDict()
        self._hit_ids = 0

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.path,))

    def _directory(self) -> Path:
        with self._lock:
            if self._dir is None:
                _sweep_stale_directories()
                try:
                    self._dir = Path(tempfile.mkdtemp(prefix=f"{_DIR_PREFIX}{os.getpid()}_"))
                except OSError as exc:
                    raise OrgError(
                        "UNKNOWN_EXCEPTION",
                        f"cannot create the search index's directory under {tempfile.gettempdir()!r}: {exc} "
                        "(set TMPDIR to a writable directory)",
                    ) from None
                weakref.finalize(self, _remove_directory, str(self._dir), os.getpid())
            return self._dir

    def _object(self, obj: SObject) -> _ObjectIndex:
        built = self._objects.get(obj.name)
        if built is not None:
            return built
        with self._lock:
            building = self._building.setdefault(obj.name, threading.Lock())
        with building:  # one build per object; searches of other objects go on meanwhile
            built = self._objects.get(obj.name)
            if built is None:
                built = self._build(obj)
                self._objects[obj.name] = built
        return built

    def _rows(self, obj: SObject, fields: tuple[Field, ...]) -> list[tuple[Any, ...]]:
        """The id and the searchable values of every record of ``obj``, read from the org file."""
        try:
            conn = sqlite3.connect(self.path.resolve().as_uri() + "?mode=ro", uri=True)
        except sqlite3.Error as exc:
            raise OrgError(
                "UNKNOWN_EXCEPTION", f"cannot open {str(self.path)!r} to build the search index: {exc}"
            ) from None
        try:
            table = quote_identifier(obj.table_name)
            present = {row[1].lower() for row in conn.execute(f"PRAGMA table_info({table})").fetchall()}
            if not present:
                raise OrgError("INVALID_TYPE", f"sObject type '{obj.name}' is not supported.")
            exprs = []
            for field in fields:
                if field.formula is not None:
                    needed = re.findall(r'"([^"]+)"', field.formula)
                    ok = all(name.lower() in present for name in needed)
                    exprs.append(f"({field.formula})" if ok else "NULL")
                else:
                    ok = field.column_name.lower() in present
                    exprs.append(quote_identifier(field.column_name) if ok else "NULL")
            return conn.execute(f'SELECT "Id", {", ".join(exprs)} FROM {table}').fetchall()
        except sqlite3.Error as exc:  # a damaged or foreign file
            raise OrgError(
                "UNKNOWN_EXCEPTION", f"cannot read {obj.name} from {str(self.path)!r} to build the search index: {exc}"
            ) from None
        finally:
            conn.close()

    def _build(self, obj: SObject) -> _ObjectIndex:
        fields = _columns(obj, "ALL")
        rows = self._rows(obj, fields)
        target = self._directory() / f"{obj.name}.sqlite"
        partial = target.with_name(target.name + ".partial")
        columns = ", ".join(f"c{i}" for i in range(len(fields)))
        placeholders = ", ".join("?" for _ in range(len(fields) + 1))
        try:
            conn = sqlite3.connect(partial)
            try:
                conn.execute(
                    f"CREATE VIRTUAL TABLE {_TABLE} USING fts5(rid UNINDEXED, {columns}, "
                    "tokenize = 'unicode61 remove_diacritics 0', prefix = '2 3')"
                )
                with conn:
                    conn.executemany(
                        f"INSERT INTO {_TABLE} (rid, {columns}) VALUES ({placeholders})",
                        ((r[0], *(_index_text(f, v) for f, v in zip(fields, r[1:], strict=True))) for r in rows),
                    )
                    conn.execute(f"INSERT INTO {_TABLE} ({_TABLE}) VALUES ('optimize')")  # one segment: faster reads
                conn.execute(f"CREATE VIRTUAL TABLE temp.vocabulary USING fts5vocab(main, {_TABLE}, row)")
                vocabulary = [term for (term,) in conn.execute("SELECT term FROM temp.vocabulary ORDER BY term")]
            finally:
                conn.close()
            os.replace(partial, target)
        except (sqlite3.Error, OSError) as exc:  # a full or read-only temporary directory
            raise OrgError(
                "UNKNOWN_EXCEPTION",
                f"cannot write the search index of {obj.name} to {str(target.parent)!r}: {exc} "
                "(set TMPDIR to a writable directory with free space)",
            ) from None
        return _ObjectIndex(target, fields, vocabulary, [])

    def search(
        self, obj: SObject, terms: SearchTerms, scope: str, limit: int = MAX_RESULTS, deadline: float = math.inf
    ) -> list[str]:
        """Ids of ``obj`` records matching ``terms`` in ``scope``, best first (at most ``limit``).

        Args:
            obj: The object to search.
            terms: The parsed search term (:func:`parse_search_terms`).
            scope: ``"ALL"``, ``"NAME"``, ``"EMAIL"`` or ``"PHONE"``.
            limit: The most ids returned.
            deadline: A ``time.monotonic()`` value past which the search stops with QUERY_TIMEOUT.

        Raises:
            OrgError: ``QUERY_TIMEOUT`` past the deadline, ``INVALID_SEARCH`` for wildcard terms that
                stand for too many words, ``UNKNOWN_EXCEPTION`` when the index cannot be built or read.
        """
        wanted = {f.name for f in _columns(obj, "ALL" if obj.name in _EVERY_FIELD_ALWAYS else scope)}
        if not wanted or limit <= 0:
            return []
        index = self._object(obj)  # a first build is not counted against the deadline
        if time.monotonic() > deadline:  # checked before the work, and by SQLite while it runs
            raise _timed_out()
        key = (obj.name, terms, scope, limit)
        with self._lock:
            found = self._hits.get(key)
            if found is not None and found[1] <= MAX_EXPANSIONS:
                self._hits.move_to_end(key)
                return list(found[0])
        built = _Expression(index.vocabulary, obj, deadline)
        expression = built.of(terms.tree(obj))
        if expression is None:  # a wildcard term that no word of the object matches
            return []
        cols = " ".join(f"c{i}" for i, f in enumerate(index.fields) if f.name in wanted)
        sql = f"SELECT rid FROM {_TABLE} WHERE {_TABLE} MATCH ? ORDER BY rank, rid LIMIT ?"
        reader = self._checkout(index)
        reader.deadline = deadline
        seen = signals.received()
        try:
            rows = reader.conn.execute(sql, ("{" + cols + "} : (" + expression + ")", limit)).fetchall()
        except sqlite3.Error as exc:
            raise_if_signalled(exc, seen, deadline)
            raise _search_error(exc) from None
        finally:
            reader.deadline = math.inf
            with self._lock:
                index.idle.append(reader)
        ids = tuple(row[0] for row in rows)
        self._remember(key, ids, built.expanded)
        return list(ids)

    def _remember(self, key: tuple[str, Node, str, int], ids: tuple[str, ...], expanded: int) -> None:
        with self._lock:
            old = self._hits.pop(key, None)
            self._hit_ids -= 0 if old is None else len(old[0])
            self._hits[key] = (ids, expanded)
            self._hit_ids += len(ids)
            while len(self._hits) > _HITS_KEPT or self._hit_ids > _HIT_IDS_KEPT:
                _, (dropped, _) = self._hits.popitem(last=False)
                self._hit_ids -= len(dropped)

    def _checkout(self, index: _ObjectIndex) -> _Reader:
        with self._lock:
            if self._pid != os.getpid():  # forked: SQLite connections must not cross a fork
                self._pid = os.getpid()
                for built in self._objects.values():
                    built.idle.clear()
            if index.idle:
                return index.idle.pop()
        try:
            return _Reader(index.path)
        except sqlite3.Error as exc:
            raise OrgError("UNKNOWN_EXCEPTION", f"cannot open the search index {str(index.path)!r}: {exc}") from None


def _sweep_stale_directories() -> None:
    """Remove the index directories of processes that are gone (killed before they could clean up)."""
    if os.name != "posix":  # os.kill(pid, 0) probes a process only on POSIX (on Windows it terminates)
        return
    try:
        entries = list(Path(tempfile.gettempdir()).glob(_DIR_PREFIX + "*_*"))
    except OSError:
        return
    for entry in entries:
        pid = entry.name[len(_DIR_PREFIX) :].split("_", 1)[0]
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            shutil.rmtree(entry, ignore_errors=True)
        except (PermissionError, OverflowError, OSError):
            continue  # alive under another user, or not a process id: leave it


def _remove_directory(path: str, pid: int) -> None:
    """Remove an index directory, only from the process that made it (never from a forked child)."""
    if os.getpid() == pid:
        shutil.rmtree(path, ignore_errors=True)


def _search_error(exc: sqlite3.Error) -> OrgError:
    """A failed FTS5 query as the org reports it: every SQLite error becomes an OrgError."""
    text = str(exc)
    if isinstance(exc, sqlite3.OperationalError) and "interrupt" in text:
        return OrgError("QUERY_TIMEOUT", _TIMEOUT_MESSAGE)
    if text.startswith("fts5:"):  # FTS5 refuses what it cannot parse (a term too complex)
        return _malformed(f"the search term is too complex to run: {text}")
    return OrgError("UNKNOWN_EXCEPTION", f"the org could not run the search: {text}")


def _timed_out() -> OrgError:
    return OrgError("QUERY_TIMEOUT", _TIMEOUT_MESSAGE)


def _fts_string(token: str) -> str:
    return '"' + token.replace('"', '""') + '"'


@bytes_cache(max_entries=4096, max_bytes=8 * 1024 * 1024)  # a pattern's regex grows with it
def _wildcard_regex(pattern: str) -> re.Pattern[str]:
    return re.compile("".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern))


class _Expression:
    """The FTS5 ``MATCH`` expression of a search term over one object's index, exact in every case.

    A word with a trailing ``*`` is an FTS5 prefix query. Any other wildcard (``*`` inside a word,
    ``?``) is expanded to the words of the object's vocabulary that it matches, found by a binary
    search on its literal beginning; the expansion is bounded (:data:`MAX_EXPANSIONS` words per
    search and object), so no search ever filters records one by one.
    """

    def __init__(self, vocabulary: list[str], obj: SObject, deadline: float) -> None:
        self.vocabulary = vocabulary
        self.obj = obj
        self.deadline = deadline
        self.expanded = 0

    @staticmethod
    def operator(node: Node) -> str:
        return {Or: "OR", And: "AND", AndNot: "NOT"}.get(type(node), "")

    def operands(self, node: Node) -> list[Node]:
        """The operands of a chain of one operator (``a OR b OR c``), flattened left to right."""
        operator = self.operator(node)
        out: list[Node] = []
        stack = [node]
        while stack:
            current = stack.pop()
            if isinstance(current, And | Or) and self.operator(current) == operator:
                stack.extend((current.right, current.left))
            else:
                out.append(current)
        return out

    def of(self, node: Node) -> str | None:
        """The expression, or None when no record can match (a wildcard that matches no word)."""
        if isinstance(node, Phrase):
            return self.phrase(node)
        if isinstance(node, AndNot):
            excluded: list[Node] = []
            base: Node = node
            while isinstance(base, AndNot):  # a AND NOT b AND NOT c: one flat chain
                excluded.append(base.right)
                base = base.left
            kept = self.of(base)
            if kept is None:
                return None
            parts = [kept, *(e for e in (self.of(right) for right in reversed(excluded)) if e is not None)]
            return " NOT ".join(f"({p})" for p in parts)
        # Chains of one operator are written flat (a OR b OR c): FTS5's parser has a small stack.
        items = [self.of(operand) for operand in self.operands(node)]
        if self.operator(node) == "AND":
            return None if None in items else " AND ".join(f"({e})" for e in items)
        present = [e for e in items if e is not None]
        return " OR ".join(f"({e})" for e in present) if present else None

    def phrase(self, node: Phrase) -> str | None:
        options: list[list[str]] = []
        expanded = False
        for pattern in node.patterns:
            tokens, wild = self.word(pattern)
            if not tokens:
                return None
            options.append(tokens)
            expanded = expanded or wild
        if expanded:
            combinations = math.prod(len(tokens) for tokens in options)
            self.expanded += combinations
            if self.expanded > MAX_EXPANSIONS:
                raise OrgError(
                    "INVALID_SEARCH",
                    f"the wildcards of the search term stand for more than {MAX_EXPANSIONS} different words of "
                    f"{self.obj.name} (at {node.source!r}); put more letters before each wildcard or use fewer "
                    "wildcard terms",
                )
        return " OR ".join("(" + " + ".join(choice) + ")" for choice in itertools.product(*options))

    def word(self, pattern: str) -> tuple[list[str], bool]:
        """The FTS5 tokens one word pattern stands for, and whether it was expanded from the vocabulary."""
        first = min((pattern.find(w) for w in "*?" if w in pattern), default=-1)
        if first < 0:
            return [_fts_string(pattern)], False
        if first == len(pattern) - 1 and pattern[first] == "*":
            return [_fts_string(pattern[:first]) + "*"], False
        prefix, regex = pattern[:first], _wildcard_regex(pattern)
        found: list[str] = []
        vocabulary = self.vocabulary
        for i in range(bisect.bisect_left(vocabulary, prefix), len(vocabulary)):
            word = vocabulary[i]
            if not word.startswith(prefix):
                break
            if regex.fullmatch(word):
                found.append(_fts_string(word))
            if i % 1024 == 1023 and time.monotonic() > self.deadline:
                raise _timed_out()
        return found, True


def _index_for(org: SearchableOrg) -> SearchIndex:
    index = org.backend_cache.get(_CACHE_KEY)
    if not isinstance(index, SearchIndex):
        with _CACHE_LOCK:
            index = org.backend_cache.get(_CACHE_KEY)
            if not isinstance(index, SearchIndex):
                index = SearchIndex(org.path)
                org.backend_cache[_CACHE_KEY] = index
    return index


# -- running a search -------------------------------------------------------------------------------


def _soql_string(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


class _SoqlBuilder:
    """Builds the SOQL text of one RETURNING item, remembering which parts came from the statement."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.origins: list[tuple[int, int, int]] = []  # (start in SOQL, length, start in the statement)
        self.length = 0

    def add(self, text: str, origin: int | None = None) -> None:
        if origin is not None and origin >= 0:
            self.origins.append((self.length, len(text), origin))
        self.parts.append(text)
        self.length += len(text)

    def origin_of(self, pos: int) -> int | None:
        for start, length, origin in self.origins:
            if start <= pos < start + length:
                return origin + pos - start
        return None

    @property
    def text(self) -> str:
        return "".join(self.parts)


def _returning_soql(item: Returning, has_id: bool, ids: list[str]) -> tuple[_SoqlBuilder, int]:
    """The SOQL of one RETURNING item over the records ``ids``, and where the first id's literal starts."""
    soql = _SoqlBuilder()
    soql.add("SELECT " if has_id else "SELECT Id, ")
    for n, field in enumerate(item.fields):
        soql.add(", " if n else "")
        soql.add(field.text, field.start)
    soql.add(" FROM ")
    soql.add(item.obj.name, item.start)
    soql.add(" WHERE Id IN (" if ids else " WHERE Id = null")
    at = soql.length
    if ids:
        soql.add(", ".join(_soql_string(i) for i in ids) + ")")
    if item.where is not None:
        soql.add(" AND (")
        soql.add(item.where.text, item.where.start)
        soql.add(")")
    if item.order_by is not None:
        soql.add(" ORDER BY ")
        soql.add(item.order_by.text, item.order_by.start)
        if item.limit is not None:
            soql.add(f" LIMIT {item.limit}")
        if item.offset is not None:
            soql.add(f" OFFSET {item.offset}")
    return soql, at


#: A well-formed id that no record has: it stands for the hits in the query that fetches them.
_STAND_IN_ID = "000000000000000AAA"


def _fetch(org: SearchableOrg, sosl: str, item: Returning, ids: list[str]) -> list[dict[str, Any]]:
    """The RETURNING fields of the records ``ids`` (best first) that pass the object's WHERE.

    The hits are bound into the plan of the item's query compiled once with a stand-in id (the org keeps
    it by shape), not written into a query of their own to be parsed apart again; when that plan cannot
    take them, the query is written with them.
    """
    has_id = any(f.text.strip().lower() == "id" for f in item.fields)
    soql, at = _returning_soql(item, has_id, [_STAND_IN_ID] if ids else [])
    try:
        found = org._query_in_list(soql.text, at, [_soql_string(i) for i in ids]) if ids else org.query(soql.text)
        if found is None:
            soql, _ = _returning_soql(item, has_id, ids)
            found = org.query(soql.text)
        records = list(found["records"])
    except OrgError as exc:
        raise _restate(exc, soql, sosl, item) from None
    if item.order_by is None:
        position = {record_id: n for n, record_id in enumerate(ids)}
        records.sort(key=lambda r: position.get(r.get("Id"), len(position)))
        start = item.offset or 0
        records = records[start:] if item.limit is None else records[start : start + item.limit]
    if not has_id:
        for record in records:
            record.pop("Id", None)
    return records


_POSITIONED = re.compile(r"\A\n[^\n]*\n *\^\nERROR at Row:(\d+):Column:(\d+)\n(.*)\Z", re.DOTALL)


def _restate(exc: OrgError, soql: _SoqlBuilder, sosl: str, item: Returning) -> OrgError:
    """The SOQL engine's error about the generated query, restated against the user's statement.

    The engine points at a row and column of the SOQL built here; the caret moves to the same spot of
    the statement when that spot came from it (a field, the WHERE or ORDER BY text), else to the
    object's name, so that the excerpt never shows text the user did not write.
    """
    code = "MALFORMED_SEARCH" if exc.code == "MALFORMED_QUERY" else exc.code
    m = _POSITIONED.match(exc.message)
    if m is None:
        return OrgError(code, exc.message)
    row, col, short = int(m.group(1)), int(m.group(2)), m.group(3)
    lines = soql.text.split("\n")
    pos = sum(len(line) + 1 for line in lines[: row - 1]) + col - 1
    origin = soql.origin_of(pos)
    return OrgError(code, positioned_message(sosl, item.start if origin is None else origin, short))


def _share_evenly(counts: list[int], budget: int) -> list[int]:
    """Split ``budget`` among objects holding ``counts`` records: equal shares, leftovers passed on."""
    taken = [0] * len(counts)
    active = [i for i, c in enumerate(counts) if c > 0]
    while budget > 0 and active:
        share = max(1, budget // len(active))
        for i in list(active):
            give = min(share, counts[i] - taken[i], budget)
            taken[i] += give
            budget -= give
            if taken[i] == counts[i]:
                active.remove(i)
            if budget == 0:
                break
    return taken


def _parsed(sosl: str, kind: str) -> SearchSpec:
    """:func:`parse_search` over the objects of org kind ``kind``, kept: the same searches come again and
    again (a refusal is not kept). The bounds the parser checks are part of the key, so that a statement is
    never let through under bounds it was not checked against."""
    return _parsed_under(sosl, kind, MAX_TERMS, MAX_NESTING, MAX_OFFSET)


@bytes_cache(max_entries=1024, max_bytes=16 * 1024 * 1024)  # a statement may be 100,000 characters
def _parsed_under(sosl: str, kind: str, *bounds: int) -> SearchSpec:
    return parse_search(sosl, org_schema(kind))


def run_search(org: SearchableOrg, sosl: str) -> dict[str, Any]:
    """Run a SOSL statement against an embedded org.

    Args:
        org: The org (``LocalOrg``): its ``path`` is read (read-only) to build the search index,
            kept in its ``backend_cache``; RETURNING fields are fetched with its ``query``.
        sosl: The statement, e.g. ``FIND {shoe*} IN NAME FIELDS RETURNING Product2(Id, Name)``.

    Returns:
        ``{"searchRecords": [...]}``, each record with ``attributes`` and the requested fields.

    Raises:
        OrgError: ``MALFORMED_SEARCH`` for a syntax error, ``INVALID_TYPE``/``INVALID_FIELD`` for
            unknown objects and fields, or any error the SOQL engine raises for a RETURNING clause.
    """
    schema = getattr(org, "schema", None)
    # A drifted org's schema is its own (renamed objects and fields): parsed against it, not the kind's cache.
    if isinstance(sosl, str) and len(sosl) <= _SHORT_SEARCH and getattr(schema, "drift", None) is None:
        spec = _parsed(sosl, schema.kind if schema is not None else DEFAULT_KIND)
    else:
        spec = parse_search(sosl, schema)
    deadline = time.monotonic() + org.timeout  # one QUERY_TIMEOUT for the whole search, as for a query
    index = _index_for(org)
    per_object: list[list[dict[str, Any]]] = []
    for item in spec.returning:
        ids = index.search(item.obj, spec.terms, spec.scope, deadline=deadline)
        per_object.append(_fetch(org, sosl, item, ids))
    budget = min(MAX_RESULTS, spec.limit if spec.limit is not None else MAX_RESULTS)
    if spec.limit is not None and all(item.limit is None for item in spec.returning):
        takes = _share_evenly([len(r) for r in per_object], budget)
    else:
        takes = []
        for records in per_object:
            take = min(len(records), budget)
            takes.append(take)
            budget -= take
    out: list[dict[str, Any]] = []
    for records, take in zip(per_object, takes, strict=True):
        out.extend(records[:take])
    return {"searchRecords": out}
