"""Text to syntax tree: lark's LALR parser over :data:`SOQL_GRAMMAR`, then a walk to :mod:`._ast` nodes.

Syntax errors become MALFORMED_QUERY errors worded as Salesforce's parser words them
(``unexpected token: 'OR'``, ``unexpected token: <EOF>``), with the caret block pointing at the token.
"""

from __future__ import annotations

import functools
import re

import lark
from lark import Token, Tree

from crmarena_gym.org._cache import cache_dir
from crmarena_gym.org.soql._ast import (
    And,
    ChildSubquery,
    Compare,
    FieldPath,
    FuncCall,
    Includes,
    InSelect,
    InValues,
    Literal,
    Not,
    Or,
    OrderItem,
    Select,
    SelectItem,
    TypeOf,
)
from crmarena_gym.org.soql._bounds import check_statement
from crmarena_gym.org.soql._dates import DateLiteralError, check_relative, parse_date, parse_datetime
from crmarena_gym.org.soql._errors import SoqlError, malformed
from crmarena_gym.org.soql._grammar import SOQL_GRAMMAR
from crmarena_gym.org.soql._lark_cache import cached_parser

_SURROGATE = re.compile("[\ud800-\udfff]")
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f", '"': '"', "'": "'", "\\": "\\"}


@functools.cache
def _lark() -> lark.Lark:
    # Saved in the cache directory: a new process loads the tables (see _lark_cache).
    return cached_parser(SOQL_GRAMMAR, cache_dir(), parser="lalr", propagate_positions=True, maybe_placeholders=True)


def parse(text: str) -> Select:
    """Parse one SOQL query.

    Raises:
        SoqlError: MALFORMED_QUERY for a syntax error or a malformed literal.

    Example:
        >>> parse("SELECT Id FROM Case LIMIT 5").limit
        5
    """
    check_statement(text)  # length, nesting and string bounds, before the parser recurses through them
    try:
        tree = _lark().parse(text)
    except lark.exceptions.UnexpectedToken as exc:
        tok = exc.token
        if tok.type == "$END":
            raise malformed(text, len(text.rstrip()), "unexpected token: <EOF>") from None
        raise malformed(text, tok.start_pos, f"unexpected token: '{tok}'") from None
    except lark.exceptions.UnexpectedCharacters as exc:
        pos = exc.pos_in_stream
        rest = text[pos:]
        if rest.startswith("'"):
            raise malformed(text, pos, f"unterminated string literal: {rest[:40]}") from None
        word = rest.split(None, 1)[0] if rest.strip() else rest
        raise malformed(text, pos, f"unexpected token: '{word[:40] if word[0].isalnum() else word[0]}'") from None
    except lark.exceptions.UnexpectedEOF:
        raise malformed(text, len(text), "unexpected token: <EOF>") from None
    except lark.exceptions.LarkError as exc:  # anything else lark may raise: still a syntax error
        raise malformed(text, None, f"unexpected token: {exc}") from None
    except RecursionError:
        raise malformed(text, None, "query is too deeply nested") from None
    try:
        return _Walker(text).select(tree.children[0])
    except RecursionError:
        raise malformed(text, None, "query is too deeply nested") from None


def decode_string(raw: str, text: str, pos: int, *, like: bool = False) -> str:
    """The value of a quoted SOQL string literal (``raw`` includes the quotes).

    With ``like``, ``\\%`` and ``\\_`` stay escaped (as ``\\%`` and ``\\_``, with ``\\\\`` for a
    backslash) for an SQL ``LIKE ... ESCAPE '\\'``; otherwise they are the plain characters.
    """
    body = raw[1:-1]
    if "\\" not in body and not _SURROGATE.search(body):  # most literals: the text is the value
        return body
    out: list[str] = []
    i = 0
    while i < len(body):
        ch = body[i]
        if ch != "\\":
            out.append(ch)
            i += 1
            continue
        nxt = body[i + 1] if i + 1 < len(body) else ""
        if nxt in ("%", "_"):
            out.append("\\" + nxt if like else nxt)
            i += 2
        elif nxt.lower() in _ESCAPES:
            value = _ESCAPES[nxt.lower()]
            out.append("\\\\" if like and value == "\\" else value)
            i += 2
        elif nxt == "u" and len(body) >= i + 6 and all(c in "0123456789abcdefABCDEF" for c in body[i + 2 : i + 6]):
            out.append(chr(int(body[i + 2 : i + 6], 16)))
            i += 6
        else:
            seq = "\\" + nxt
            raise malformed(
                text, pos, f"Invalid string literal '{body}'. Illegal character sequence '{seq}' in string literal."
            )
    value = "".join(out)
    if _SURROGATE.search(value):
        # A \uXXXX pair spells one character (as in Java); a lone half is no character at all.
        try:
            value = value.encode("utf-16-le", "surrogatepass").decode("utf-16-le")
        except UnicodeDecodeError:
            shown = body.encode("utf-8", "backslashreplace").decode("utf-8")
            raise malformed(
                text, pos, f"Invalid string literal '{shown}'. A lone surrogate (U+D800..U+DFFF) is not a character."
            ) from None
    return value


def number_value(raw: str) -> int | float:
    """The value of a NUMBER literal: an integer when it is written as one and fits 64 bits, else a float.

    Example:
        >>> number_value("42"), number_value("-1.5e2"), number_value("9" * 20)
        (42, -150.0, 1e+20)
    """
    # Past 19 digits it cannot be a 64-bit integer anyway (and int() refuses thousands of them).
    exact = all(c not in raw for c in ".eE") and len(raw.lstrip("+-")) <= 19
    value: int | float = int(raw) if exact else float(raw)
    if isinstance(value, int) and not -(2**63) <= value < 2**63:
        value = float(value)  # beyond SQLite's integers; Salesforce reads it as a double too
    return value


def _count(tok: Token) -> int:
    """The value of an INT token; past 19 digits, 2**63 (beyond any limit, and cheap to compute)."""
    return int(tok) if len(tok) <= 19 else 2**63


class _Walker:
    """Turns lark's parse tree into :mod:`._ast` nodes."""

    def __init__(self, text: str) -> None:
        self.text = text

    def select(self, t: Tree) -> Select:
        (
            select_kw,
            select_list,
            _from_kw,
            obj,
            obj_alias,
            using,
            where,
            with_clause,
            group,
            having,
            order,
            limit,
            offset,
            for_clause,
        ) = t.children
        items = tuple(self.select_item(c) for c in select_list.children)
        qualifier, obj = obj.children
        if obj is None:
            qualifier, obj = None, qualifier
        limit_value, limit_pos = (
            (None, -1) if limit is None else (_count(limit.children[1]), limit.children[1].start_pos)
        )
        offset_value, offset_pos = (
            (None, -1) if offset is None else (_count(offset.children[1]), offset.children[1].start_pos)
        )
        return Select(
            items=items,
            object_name=str(obj),
            object_qualifier=None if qualifier is None else str(qualifier),
            object_pos=obj.start_pos,
            object_alias=None if obj_alias is None else str(obj_alias),
            where=None if where is None else self.condition(where.children[1]),
            group_by=() if group is None else tuple(self.expr(c) for c in group.children[2:] if isinstance(c, Tree)),
            having=None if having is None else self.condition(having.children[1]),
            order_by=() if order is None else tuple(self.order_item(c) for c in order.children[2:]),
            limit=limit_value,
            limit_pos=limit_pos,
            offset=offset_value,
            offset_pos=offset_pos,
            pos=select_kw.start_pos,
            order_kw_pos=-1 if order is None else order.children[0].start_pos,
            limit_kw_pos=-1 if limit is None else limit.children[0].start_pos,
            offset_kw_pos=-1 if offset is None else offset.children[0].start_pos,
            group_kw_pos=-1 if group is None else group.children[0].start_pos,
            having_kw_pos=-1 if having is None else having.children[0].start_pos,
            group_kind=None if group is None or group.data != "group_sets" else str(group.children[2]).upper(),
            using_scope=None if using is None else str(using.children[2]),
            using_pos=-1 if using is None else using.children[2].start_pos,
            with_mode=None if with_clause is None else str(with_clause.children[1]),
            with_pos=-1 if with_clause is None else with_clause.children[1].start_pos,
            for_mode=None if for_clause is None else str(for_clause.children[1]).upper(),
            for_pos=-1 if for_clause is None else for_clause.children[0].start_pos,
        )

    def select_item(self, t: Tree) -> SelectItem | ChildSubquery | TypeOf:
        if t.data == "child_subquery":
            return ChildSubquery(self.select(t.children[1]), t.children[0].start_pos)
        if t.data == "typeof":
            kw, rel = t.children[0], t.children[1]
            whens = tuple(
                (str(w.children[1]), w.children[1].start_pos, self.field_list(w.children[3]))
                for w in t.children[2:]
                if isinstance(w, Tree) and w.data == "typeof_when"
            )
            lists = [c for c in t.children[2:] if isinstance(c, Tree) and c.data == "field_list"]
            otherwise = self.field_list(lists[0]) if lists else ()
            return TypeOf(str(rel), rel.start_pos, whens, otherwise, kw.start_pos)
        expr, alias = t.children
        return SelectItem(
            self.expr(expr), None if alias is None else str(alias), -1 if alias is None else alias.start_pos
        )

    def field_list(self, t: Tree) -> tuple[FieldPath, ...]:
        return tuple(self.expr(c) for c in t.children)  # type: ignore[misc]

    def expr(self, t: Tree) -> FieldPath | FuncCall:
        if t.data == "field":
            toks: list[Token] = t.children  # type: ignore[assignment]
            return FieldPath(tuple(str(x) for x in toks), toks[0].start_pos, tuple(x.start_pos for x in toks))
        name, _lpar, arg, rpar = t.children
        return FuncCall(
            str(name).upper(),
            None if arg is None else self.expr(arg),
            name.start_pos,
            self.text[name.start_pos : rpar.end_pos],
        )

    def order_item(self, t: Tree) -> OrderItem:
        expr, direction, _nulls, position = t.children
        descending = direction is not None and direction.type == "DESC"
        nulls_first = None if position is None else position.type == "FIRST"
        return OrderItem(self.expr(expr), descending, nulls_first)

    def condition(self, t: Tree):
        kind = t.data
        if kind == "and_cond":
            return And(tuple(self.condition(c) for c in t.children if isinstance(c, Tree)))
        if kind == "or_cond":
            return Or(tuple(self.condition(c) for c in t.children if isinstance(c, Tree)))
        if kind == "not_cond":
            return Not(self.condition(t.children[1]))
        if kind == "paren":
            return self.condition(t.children[1])
        if kind == "compare":
            left, op, lit = t.children
            opv = "!=" if str(op) == "<>" else str(op)
            return Compare(self.expr(left), opv, self.literal(lit, like=False), op.start_pos)
        if kind == "like":
            left, kw, lit = t.children
            return Compare(self.expr(left), "LIKE", self.literal(lit, like=True), kw.start_pos)
        if kind == "in_":
            left, not_kw, in_kw, _lpar, body, _rpar = t.children
            negated = not_kw is not None
            pos = (not_kw or in_kw).start_pos
            if body.data == "in_select":
                return InSelect(self.expr(left), negated, self.select(body.children[0]), pos)
            return InValues(self.expr(left), negated, tuple(self.literal(c) for c in body.children), pos)
        if kind == "includes":
            op = t.children[1]
            return Includes(self.expr(t.children[0]), str(op).upper(), op.start_pos)
        raise malformed(self.text, None, f"unexpected construct {kind}")  # pragma: no cover - grammar bound

    def literal(self, t: Tree, like: bool = False) -> Literal:
        node = t.children[0]
        if isinstance(node, Tree):  # date_literal: NAME [":" INT]
            name_tok, _colon, n_tok = node.children
            name = str(name_tok).upper()
            n = None if n_tok is None else _count(n_tok)
            raw = self.text[name_tok.start_pos : (n_tok or name_tok).end_pos]
            try:
                check_relative(name, n, raw)
            except DateLiteralError as exc:
                msg = str(exc)
                if msg.startswith("unexpected token"):
                    msg = f"unexpected token: '{name_tok}'"
                raise malformed(self.text, name_tok.start_pos, msg) from None
            return Literal("relative", (name, n), name_tok.start_pos, raw)
        tok: Token = node
        raw, pos, kind = str(tok), tok.start_pos, tok.type
        try:
            if kind == "STRING":
                return Literal("string", decode_string(raw, self.text, pos, like=like), pos, raw)
            if kind == "NUMBER":
                return Literal("number", number_value(raw), pos, raw)
            if kind == "DATE":
                return Literal("date", parse_date(raw), pos, raw)
            if kind == "DATETIME":
                return Literal("datetime", parse_datetime(raw), pos, raw)
        except DateLiteralError as exc:
            raise malformed(self.text, pos, str(exc)) from None
        if kind in ("TRUE", "FALSE"):
            return Literal("boolean", kind == "TRUE", pos, raw)
        return Literal("null", None, pos, raw)


__all__ = ["SoqlError", "decode_string", "number_value", "parse"]
