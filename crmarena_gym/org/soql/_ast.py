"""The syntax tree of a SOQL query, as the parser builds it and the compiler reads it.

Every node carries ``pos``, the 0-based character offset of its first token in the query text, so
that semantic errors can point at the offending token the way Salesforce's messages do.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class FieldPath:
    """A field or a child-to-parent path (``Owner.Name``); ``parts`` as written."""

    parts: tuple[str, ...]
    pos: int
    part_pos: tuple[int, ...] = ()

    @property
    def text(self) -> str:
        return ".".join(self.parts)


@dataclass(frozen=True)
class FuncCall:
    """A function call: an aggregate (``COUNT(Id)``), a date function or ``COUNT()``."""

    name: str  # upper case
    arg: FieldPath | FuncCall | None
    pos: int
    text: str  # the call as written, for messages


Expr = FieldPath | FuncCall


@dataclass(frozen=True)
class Literal:
    """A value in a condition.

    ``kind`` is one of ``string``, ``number``, ``boolean``, ``null``, ``date`` (``datetime.date``),
    ``datetime`` (the stored text form, UTC) or ``relative`` (``value`` is ``(NAME, n or None)``).
    """

    kind: str
    value: Any
    pos: int
    raw: str


@dataclass(frozen=True)
class Compare:
    """``expr OP literal`` with OP one of ``= != < <= > >= LIKE``."""

    left: Expr
    op: str
    right: Literal
    pos: int


@dataclass(frozen=True)
class InValues:
    """``expr [NOT] IN (literal, ...)``."""

    left: Expr
    negated: bool
    values: tuple[Literal, ...]
    pos: int


@dataclass(frozen=True)
class InSelect:
    """``expr [NOT] IN (SELECT ...)``: a semi-join, or an anti-join when negated."""

    left: Expr
    negated: bool
    query: Select
    pos: int


@dataclass(frozen=True)
class Includes:
    """``expr INCLUDES|EXCLUDES (...)``: for multi-select picklists, which this org has none of."""

    left: Expr
    op: str
    pos: int


@dataclass(frozen=True)
class And:
    items: tuple[Condition, ...]


@dataclass(frozen=True)
class Or:
    items: tuple[Condition, ...]


@dataclass(frozen=True)
class Not:
    item: Condition


Condition = Compare | InValues | InSelect | Includes | And | Or | Not


@dataclass(frozen=True)
class SelectItem:
    expr: Expr
    alias: str | None
    alias_pos: int


@dataclass(frozen=True)
class ChildSubquery:
    """A parent-to-child subquery in the SELECT list (``(SELECT Id FROM Cases)``)."""

    query: Select
    pos: int


@dataclass(frozen=True)
class TypeOf:
    """``TYPEOF Owner WHEN User THEN Name, Email ELSE Name END``: fields chosen by the parent's type.

    ``whens`` holds (type name, its position, the fields); ``otherwise`` the ELSE fields (may be empty).
    """

    relationship: str
    rel_pos: int
    whens: tuple[tuple[str, int, tuple[FieldPath, ...]], ...]
    otherwise: tuple[FieldPath, ...]
    pos: int


@dataclass(frozen=True)
class OrderItem:
    expr: Expr
    descending: bool
    nulls_first: bool | None  # None: Salesforce's default (first when ascending)


@dataclass(frozen=True)
class Select:
    items: tuple[SelectItem | ChildSubquery | TypeOf, ...]
    object_name: str
    object_pos: int
    object_alias: str | None
    where: Condition | None
    group_by: tuple[Expr, ...]
    having: Condition | None
    order_by: tuple[OrderItem, ...]
    limit: int | None
    limit_pos: int
    offset: int | None
    offset_pos: int
    pos: int
    # Where the ORDER, LIMIT and OFFSET keywords start (-1: absent), for refusals of the whole clause.
    order_kw_pos: int = -1
    limit_kw_pos: int = -1
    offset_kw_pos: int = -1
    group_kw_pos: int = -1
    having_kw_pos: int = -1
    # GROUP BY ROLLUP(...) or CUBE(...): "ROLLUP" or "CUBE"; None for a plain GROUP BY.
    group_kind: str | None = None
    # USING SCOPE name, WITH name (SECURITY_ENFORCED, USER_MODE, SYSTEM_MODE), FOR VIEW|REFERENCE: as written.
    using_scope: str | None = None
    using_pos: int = -1
    with_mode: str | None = None
    with_pos: int = -1
    for_mode: str | None = None
    for_pos: int = -1
    # FROM Account.Contacts in a parent-to-child subquery: the parent named before the relationship.
    object_qualifier: str | None = None
