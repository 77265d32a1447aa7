"""Syntax tree to parameterised SQL, with Salesforce's semantic checks and a result shaper.

The compiler checks every name against :mod:`crmarena_gym.schema` and the columns the database really
has, refuses what Salesforce refuses (with its error codes and wording), and emits one SQLite
statement. Every literal is a bound parameter; every identifier is quoted. Relative date literals
become :class:`RelativeParam` placeholders resolved against "today" when the plan is bound, so one
compiled plan serves every task date.

The shaper turns the statement's rows into simple-salesforce records; it is generated Python code (a
single list comprehension per plan), because shaping is the engine's hot loop.
"""

from __future__ import annotations

import datetime as dt
import functools
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from crmarena_gym._memory import bytes_cache
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
    Select,
    SelectItem,
    TypeOf,
)
from crmarena_gym.org.soql._dates import format_day_start, relative_range
from crmarena_gym.org.soql._errors import (
    SoqlError,
    invalid_field,
    invalid_relationship,
    invalid_type,
    malformed,
)
from crmarena_gym.schema import (
    DEFAULT_KIND,
    ORG_CREATOR_SQL,
    Field,
    FieldType,
    OrgSchema,
    SObject,
    id_checksum,
    org_schema,
    quote_identifier,
)

#: The REST path prefix of record urls, as simple-salesforce returns them (API v60.0).
URL_PREFIX = "/services/data/v60.0/sobjects/"
#: Salesforce's limit on OFFSET.
MAX_OFFSET = 2000

AGGREGATES = frozenset({"COUNT", "COUNT_DISTINCT", "SUM", "AVG", "MIN", "MAX"})
# Date functions: name -> (SQL template over the column text, result category, needs a datetime).
_DATE_FUNCS: dict[str, tuple[str, str, bool]] = {
    "CALENDAR_YEAR": ("CAST(substr({c}, 1, 4) AS INTEGER)", "int", False),
    "CALENDAR_MONTH": ("CAST(substr({c}, 6, 2) AS INTEGER)", "int", False),
    "CALENDAR_QUARTER": ("((CAST(substr({c}, 6, 2) AS INTEGER) + 2) / 3)", "int", False),
    "DAY_IN_MONTH": ("CAST(substr({c}, 9, 2) AS INTEGER)", "int", False),
    "DAY_IN_WEEK": ("(CAST(strftime('%w', substr({c}, 1, 10)) AS INTEGER) + 1)", "int", False),
    "DAY_IN_YEAR": ("CAST(strftime('%j', substr({c}, 1, 10)) AS INTEGER)", "int", False),
    "WEEK_IN_MONTH": ("((CAST(substr({c}, 9, 2) AS INTEGER) - 1) / 7 + 1)", "int", False),
    "WEEK_IN_YEAR": ("((CAST(strftime('%j', substr({c}, 1, 10)) AS INTEGER) - 1) / 7 + 1)", "int", False),
    "HOUR_IN_DAY": ("CAST(substr({c}, 12, 2) AS INTEGER)", "int", True),
    "DAY_ONLY": ("substr({c}, 1, 10)", "date", True),
}
# The org's fiscal year is the calendar year.
for _name in ("YEAR", "MONTH", "QUARTER"):
    _DATE_FUNCS[f"FISCAL_{_name}"] = _DATE_FUNCS[f"CALENDAR_{_name}"]
DATE_FUNCTIONS = frozenset(_DATE_FUNCS)
#: The SQL functions compiled queries call (the authorizer allows exactly these).
# trim, ifnull and nullif also serve the schema's formula fields (a person's Name).
SQL_FUNCTIONS = frozenset(
    {"substr", "strftime", "count", "sum", "avg", "min", "max", "ifnull", "like", "trim", "nullif", "printf"}
)
#: Salesforce's limits on parent-to-child subqueries: how many in one query, and how deep (the root
#: counts as the first level; API 58.0 and later).
MAX_CHILD_SUBQUERIES = 20
MAX_CHILD_LEVELS = 5
#: The largest LIMIT a query with FIELDS(ALL) or FIELDS(CUSTOM) may have.
FIELDS_LIMIT = 200
#: At most this many fields in GROUP BY ROLLUP(...) or CUBE(...).
MAX_ROLLUP_FIELDS = 3
#: What WITH accepts (no field or sharing rule hides anything from the API user here).
WITH_MODES = frozenset({"SECURITY_ENFORCED", "USER_MODE", "SYSTEM_MODE"})
#: USING SCOPE's values; ``mine`` and ``mine_and_my_groups`` keep the API user's records, the others
#: (teams, territories, delegation) have nothing to narrow in an org without them.
SCOPES = frozenset(
    {
        "delegated",
        "everything",
        "mine",
        "mine_and_my_groups",
        "my_territory",
        "my_team_territory",
        "team",
        "scopingrule",
    }
)

_CATEGORY = {
    FieldType.ID: "id",
    FieldType.REFERENCE: "id",
    FieldType.STRING: "text",
    FieldType.TEXTAREA: "text",
    FieldType.EMAIL: "text",
    FieldType.PHONE: "text",
    FieldType.URL: "text",
    FieldType.COMBOBOX: "text",
    FieldType.PICKLIST: "text",
    FieldType.LONG_TEXT: "longtext",
    FieldType.DATE: "date",
    FieldType.DATETIME: "datetime",
    FieldType.DOUBLE: "double",
    FieldType.PERCENT: "double",  # a number to SOQL (a percent of 50 is 50)
    FieldType.CURRENCY: "currency",
    FieldType.INTEGER: "int",
    FieldType.BOOLEAN: "boolean",
}
# Salesforce's type names in "must be of type X" messages.
_TYPE_WORD = {
    "id": "id",
    "text": "string",
    "longtext": "string",
    "date": "date",
    "datetime": "dateTime",
    "double": "double",
    "currency": "currency",
    "int": "int",
    "boolean": "boolean",
}
# How a value of each category is converted for the JSON-like record (None stays None).
_CONVERTER = {
    "double": "_f",
    "currency": "_f",
    "int": "_i",
    "boolean": "_b",
    "fmt_currency": "_fmt_currency",
    "fmt_number": "_fmt_number",
    "fmt_date": "_fmt_date",
    "fmt_datetime": "_fmt_datetime",
}
# FORMAT(): the value as the API user's locale (en_US, in UTC) shows it, by the field's category.
_FORMATTED = {
    "currency": "fmt_currency",
    "double": "fmt_number",
    "int": "fmt_number",
    "date": "fmt_date",
    "datetime": "fmt_datetime",
}
# Salesforce's Name object, the parent of a polymorphic relationship (What, Who, a case's Owner): the only fields a
# query reads through one, answered from the record the id names. Field -> (type, the objects that answer it; None:
# every object that has the field). Name (and NameOrAlias) is each object's name field (a case's CaseNumber); Type
# is the record's object (compiled apart). The Object Reference: Alias, IsActive, Phone, ProfileId, Title,
# Username, UserRoleId only for a user; Email for a user or a queue; FirstName and LastName for a person.
_PEOPLE = ("User", "Contact", "Lead")
NAME_OBJECT_FIELDS: dict[str, tuple[FieldType, tuple[str, ...] | None]] = {
    "Id": (FieldType.ID, None),
    "Name": (FieldType.STRING, None),
    "NameOrAlias": (FieldType.STRING, None),
    "Type": (FieldType.PICKLIST, None),
    "Alias": (FieldType.STRING, ("User",)),
    "CommunityNickname": (FieldType.STRING, ("User",)),
    "Email": (FieldType.EMAIL, ("User", "Group")),
    "FirstName": (FieldType.STRING, _PEOPLE),
    "LastName": (FieldType.STRING, _PEOPLE),
    "IsActive": (FieldType.BOOLEAN, ("User",)),
    "Phone": (FieldType.PHONE, ("User",)),
    "Title": (FieldType.STRING, ("User",)),
    "Username": (FieldType.STRING, ("User",)),
    "ProfileId": (FieldType.ID, ("User",)),
    "UserRoleId": (FieldType.ID, ("User",)),
    "RecordTypeId": (FieldType.ID, None),
    "LastReferencedDate": (FieldType.DATETIME, None),
    "LastViewedDate": (FieldType.DATETIME, None),
}
_NAME_OBJECT_BY_LOWER = {name.lower(): name for name in NAME_OBJECT_FIELDS}
_ID_CHARS = re.compile(r"^[A-Za-z0-9]+$")
_SUFFIX = "ABCDEFGHIJKLMNOPQRSTUVWXYZ012345"
_FORMULA_COLUMN = re.compile(r'"((?:[^"]|"")*)"')
# The audit fields the file computes from other tables (a record with no date of its own dates from the org's
# first order or case): read from the file's own tables, never from a session's views of them, so that no
# write of a session moves a file record's creation.
_FILE_AUDIT_FIELDS = frozenset({"CreatedDate", "CreatedById", "LastModifiedDate", "LastModifiedById", "SystemModstamp"})
_BRACKETED_TABLE = re.compile(r"\[([A-Za-z_]\w*)\]")


def _stored_columns(obj: SObject) -> frozenset[str]:
    return frozenset(f.column_name.lower() for f in obj.stored_fields)


@dataclass(frozen=True)
class Catalog:
    """The tables and columns a database really has, by object, and the org kind's schema they follow.

    Attributes:
        tables: Object API name -> the table's name in the database.
        columns: Object API name -> lower-cased names of the table's columns.
        empty: Standard objects the database has no table for (Opportunity ...): every org has them,
            so they are queried as empty tables of their stored fields (their names are in ``columns``).
        schema: The org kind's objects (``crmarena_gym.schema.org_schema``): every name a query uses is
            looked up there (the service org's by default).
    """

    tables: Mapping[str, str]
    columns: Mapping[str, frozenset[str]]
    empty: frozenset[str] = frozenset()
    schema: OrgSchema = field(default_factory=lambda: org_schema(DEFAULT_KIND))

    @classmethod
    def full(cls, kind: str = DEFAULT_KIND) -> Catalog:
        """The catalog of a database with every object and stored field of org kind ``kind`` (our generated
        layout)."""
        schema = org_schema(kind)
        return cls(
            {o.name: o.name for o in schema.objects},
            {o.name: _stored_columns(o) for o in schema.objects + schema.standard_objects},
            frozenset(o.name for o in schema.standard_objects),
            schema,
        )

    def has(self, obj: SObject) -> bool:
        if obj.name in self.empty:
            return True
        return obj.name in self.tables and "id" in self.columns.get(obj.name, frozenset())

    def table_sql(self, obj: SObject) -> str:
        """What a FROM clause names for ``obj``: its quoted table, or an empty table of its columns."""
        if obj.name in self.tables:
            return quote_identifier(self.tables[obj.name])
        columns = ", ".join(f"NULL AS {quote_identifier(f.column_name)}" for f in obj.stored_fields)
        return f"(SELECT {columns} WHERE 0)"

    def available(self, obj: SObject, f: Field) -> bool:
        """Whether the database holds ``f``: its column, or every column its formula reads."""
        columns = self.columns.get(obj.name, frozenset())
        if f.column_name.lower() in columns:  # a real column wins over the formula
            return True
        return f.formula is not None and all(
            m.lower() in columns or m == "rowid" for m in _FORMULA_COLUMN.findall(f.formula)
        )


#: Where a parameter's value comes from: (positions of the literals in the query text, the name of the
#: derivation in :data:`crmarena_gym.org.soql._shapes.DERIVATIONS`, the index among its values).
Origin = tuple[tuple[int, ...], str, int]
# The derivation of a literal's bound value, by the literal's kind (after the type checks of coerce).
_DERIVATION = {"string": "string", "number": "number", "date": "date", "datetime": "datetime"}


@dataclass(frozen=True)
class RelativeParam:
    """A bound value that depends on today: one end of a relative date literal's range."""

    name: str
    n: int | None
    end: bool
    datetime: bool

    def resolve(self, today: dt.date) -> str:
        start, end = relative_range(self.name, self.n, today)
        day = end if self.end else start
        return format_day_start(day) if self.datetime else day.isoformat()


def _bind(params: tuple[Any, ...], today: dt.date) -> tuple[Any, ...]:
    return tuple(p.resolve(today) if isinstance(p, RelativeParam) else p for p in params)


@dataclass
class ChildPlan:
    """A parent-to-child subquery, run after its parent: one statement for the children of every parent.

    Attributes:
        name: The relationship name, the key of the nested result in each parent record.
        sql: Selects the parent's id first, then the child's columns, for every parent of the parent
            query (it repeats the parent's filter as an ``IN (SELECT Id ...)``).
        params: Its parameters (the parent's, then the subquery's own).
        shape: Rows to child records (the parent id column is ignored).
        limit: The subquery's LIMIT, applied per parent; None: no limit.
        children: Subqueries of the subquery (API 58.0 and later allow five levels).
        origins: Where each parameter comes from (see :attr:`Plan.origins`).
    """

    name: str
    sql: str
    params: tuple[Any, ...]
    shape: Callable[[list[tuple[Any, ...]]], list[dict[str, Any]]]
    limit: int | None
    children: tuple[ChildPlan, ...] = ()
    origins: tuple[Origin | None, ...] = ()

    def attach(
        self,
        rows: Sequence[tuple[Any, ...]],
        records: list[dict[str, Any]],
        id_col: int,
        run: Callable[[str, tuple[Any, ...]], list[tuple[Any, ...]]],
        today: dt.date,
    ) -> None:
        """Put each parent's children under :attr:`name` in ``records`` (parallel to ``rows``).

        ``run(sql, params)`` executes a statement. A parent without children gets None, as Salesforce
        answers; one with children gets ``{"totalSize", "done", "records"}``.
        """
        if not records:
            return
        child_rows = run(self.sql, _bind(self.params, today))
        child_records = self.shape(child_rows)
        for sub in self.children:
            sub.attach(child_rows, child_records, 1, run, today)
        grouped: dict[Any, list[dict[str, Any]]] = {}
        for row, record in zip(child_rows, child_records, strict=True):
            grouped.setdefault(row[0], []).append(record)
        for row, record in zip(rows, records, strict=True):
            found = grouped.get(row[id_col])
            if found and self.limit is not None:
                found = found[: self.limit]
            record[self.name] = {"totalSize": len(found), "done": True, "records": found} if found else None


@dataclass
class Plan:
    """A compiled query: SQL, its parameters and the function that shapes rows into records.

    Attributes:
        sql: One SQLite SELECT statement.
        params: Its positional parameters; :class:`RelativeParam` entries resolve per ``today``.
        relative: Whether any parameter depends on today.
        shape: Rows (tuples) to simple-salesforce records.
        count_only: ``SELECT COUNT()``: the single value is totalSize and there are no records.
        object_name: The queried object.
        children: The parent-to-child subqueries, run after this statement (its rows' first column is
            the record id); see :meth:`ChildPlan.attach`.
        origins: Parallel to ``params``: for a value taken from literals of the query, an
            :data:`Origin` (the literals' positions, how the value is derived from them, and its
            index among the values derived); None for a constant of the query's shape. They let a plan
            serve every query of its shape with other literals (see :mod:`._shapes`).
    """

    sql: str
    params: tuple[Any, ...]
    relative: bool
    shape: Callable[[list[tuple[Any, ...]]], list[dict[str, Any]]]
    count_only: bool
    object_name: str
    children: tuple[ChildPlan, ...] = ()
    origins: tuple[Origin | None, ...] = ()

    def bind(self, today: dt.date) -> tuple[Any, ...]:
        """The parameters with relative dates resolved against ``today``."""
        if not self.relative:
            return self.params
        return _bind(self.params, today)


@dataclass(frozen=True)
class _Link:
    """One relationship a field path follows: the nested record it puts in a record.

    Attributes:
        name: The relationship name, the nested record's key (``Account``, ``What``).
        obj: The parent object's name (its records' ``attributes.type``); ``Name`` for a polymorphic relationship.
        id_sql: The parent record's id (null without one).
        object_sql: For a polymorphic relationship, the SQL naming the record's object (its url's); else None.
    """

    name: str
    obj: str
    id_sql: str
    object_sql: str | None = None


@dataclass(frozen=True)
class _TypeOfNode:
    """A TYPEOF's place in a record: the parent shaped by its own type.

    Attributes:
        prefix_col: The column of the id's key prefix.
        branches: Per WHEN whose object has a table: (key prefix, object name, the joined record's id column, the
            branch's record tree).
        otherwise: The ELSE branch: (the Name object's id column, the column naming the record's object, its
            record tree); None without ELSE.
    """

    prefix_col: int
    branches: tuple[tuple[str, str, int, dict[str, Any]], ...]
    otherwise: tuple[int, int, dict[str, Any]] | None


@dataclass
class _Val:
    """A compiled expression."""

    sql: str
    cat: str  # a key of _TYPE_WORD
    name: str  # the key it gets in a record (leaf field name)
    text: str  # as written
    pos: int
    field: Field | None = None
    owner: SObject | None = None  # the object the leaf field belongs to
    chain: tuple[_Link, ...] = ()  # the relationships followed to the leaf
    aggregate: bool = False
    func: str | None = None


@dataclass
class _Scope:
    obj: SObject
    alias: str
    user_alias: str | None
    joins: dict[tuple[str, ...], str] = field(default_factory=dict)
    join_sql: list[str] = field(default_factory=list)


def canonical_id(value: str) -> str | None:
    """The 18-character form of a 15- or 18-character id (case restored from its checksum), or None.

    Example:
        >>> canonical_id("500ws000007QLRJIAA")
        '500Ws000007qlrjIAA'
    """
    if len(value) not in (15, 18):
        return None
    return _canonical_id(value)


# Queries name the same ids again and again (agents, cases, the tools' IN lists): the answers are kept.
@functools.lru_cache(maxsize=32768)
def _canonical_id(value: str) -> str | None:
    if not _ID_CHARS.match(value):
        return None
    if len(value) == 15:
        return value + id_checksum(value)
    suffix = value[15:].upper()
    if any(c not in _SUFFIX for c in suffix):
        return value
    chars = list(value[:15])
    for chunk, ch in enumerate(suffix):
        bits = _SUFFIX.index(ch)
        for i in range(5):
            j = chunk * 5 + i
            chars[j] = chars[j].upper() if bits >> i & 1 else chars[j].lower()
    return "".join(chars) + suffix


def _id_forms(typed: str, canonical: str) -> tuple[str, ...]:
    """The stored spellings an id literal may match: its canonical 18-character form, then as typed."""
    return tuple(dict.fromkeys((canonical, typed)))


def id_in_values(typed: Sequence[str], canonical: Sequence[str]) -> list[str]:
    """The values an ``Id IN (...)`` list binds: each id's stored spellings, without repeats."""
    return list(dict.fromkeys(f for t, x in zip(typed, canonical, strict=True) for f in _id_forms(t, x)))


def compile_query(text: str, query: Select, catalog: Catalog) -> Plan:
    """Check ``query`` (parsed from ``text``) against the schema and ``catalog`` and compile it.

    Raises:
        SoqlError: The query names an unknown object, field or relationship, or breaks a Salesforce rule.
    """
    return _Compiler(text, catalog).top(query)


class _Compiler:
    def __init__(self, text: str, catalog: Catalog) -> None:
        self.text = text
        self.catalog = catalog
        self.params: list[Any] = []
        self.origins: list[Origin | None] = []
        self.relative = False
        self.n_alias = 0
        self.n_children = 0
        # While compiling one grouping set of ROLLUP/CUBE: the SQL of the group fields rolled up there.
        self.rolled: frozenset[str] | None = None

    # -- names -----------------------------------------------------------------------------------

    def new_alias(self) -> str:
        alias = f"t{self.n_alias}"
        self.n_alias += 1
        return alias

    def param(self, value: Any, origin: Origin | None = None) -> str:
        self.params.append(value)
        self.origins.append(origin)
        return "?"

    def literal_param(self, value: Any, lit: Literal, v: _Val) -> str:
        """A parameter holding ``value``, the coerced value of ``lit`` compared with ``v``."""
        how = "id" if v.cat == "id" else _DERIVATION.get(lit.kind)
        return self.param(value, None if how is None else ((lit.pos,), how, 0))

    def scope(self, q: Select) -> _Scope:
        if q.object_qualifier is not None:  # Parent.Children names a relationship: only a subquery's FROM
            raise invalid_type(self.text, q.object_pos, f"{q.object_qualifier}.{q.object_name}")
        obj = self.catalog.schema.get_object(q.object_name, standard=True)
        if obj is None or not self.catalog.has(obj):
            raise invalid_type(self.text, q.object_pos, q.object_name)
        return _Scope(obj, self.new_alias(), q.object_alias)

    def column(self, alias: str, obj: SObject, f: Field, pos: int) -> str:
        qa = quote_identifier(alias)
        if not self.catalog.available(obj, f):
            raise invalid_field(self.text, pos, f.name, obj.name)
        if f.column_name.lower() in self.catalog.columns[obj.name]:
            return f"{qa}.{quote_identifier(f.column_name)}"
        formula = f.formula or "NULL"
        if f.extra and f.name in _FILE_AUDIT_FIELDS:
            formula = _BRACKETED_TABLE.sub(r"main.[\1]", formula)
        return "(" + _FORMULA_COLUMN.sub(lambda m: f"{qa}.{m.group(0)}", formula) + ")"

    def resolve(self, scope: _Scope, fp: FieldPath, start: tuple[SObject, str, tuple[str, ...]] | None = None) -> _Val:
        """The field path ``fp`` of the scope's object, or of ``start`` (object, its join alias, its join key)."""
        parts = list(fp.parts)
        positions = list(fp.part_pos) or [fp.pos] * len(parts)
        obj = scope.obj if start is None else start[0]
        if len(parts) > 1 and start is None:
            first = parts[0].lower()
            if (scope.user_alias and first == scope.user_alias.lower()) or (
                first == obj.name.lower() and obj.get_relationship(parts[0]) is None
            ):
                parts, positions = parts[1:], positions[1:]
        alias = scope.alias if start is None else start[1]
        chain: list[_Link] = []
        key: tuple[str, ...] = () if start is None else start[2]
        for i, (rel, pos) in enumerate(zip(parts[:-1], positions[:-1], strict=True)):
            ref = obj.get_relationship(rel)
            parent = (
                self.catalog.schema.get_object(ref.reference_to, standard=True)
                if ref is not None and ref.reference_to
                else None
            )
            if ref is None or parent is None or not self.catalog.has(parent):
                raise invalid_relationship(self.text, pos, rel)
            try:
                ref_sql = self.column(alias, obj, ref, pos)
            except SoqlError:
                raise invalid_relationship(self.text, pos, rel) from None
            if ref.polymorphic:
                # The parent is Salesforce's Name object, which has no relationship this org holds.
                if i + 2 < len(parts):
                    raise invalid_relationship(self.text, positions[i + 1], parts[i + 1])
                return self.name_field(scope, ref, ref_sql, (*key, ref.name.lower()), chain, fp, positions[-1])
            key = (*key, ref.name.lower())
            join_alias = self.join(scope, key, parent, ref_sql)
            chain.append(_Link(ref.relationship_name or rel, parent.name, f'{quote_identifier(join_alias)}."Id"'))
            obj, alias = parent, join_alias
        leaf = obj.get_field(parts[-1])
        if leaf is None:
            raise invalid_field(self.text, positions[-1], parts[-1], obj.name)
        return _Val(
            self.column(alias, obj, leaf, positions[-1]),
            _CATEGORY[leaf.type],
            leaf.name,
            fp.text,
            fp.pos,
            field=leaf,
            owner=obj,
            chain=tuple(chain),
        )

    def join(self, scope: _Scope, key: tuple[str, ...], parent: SObject, ref_sql: str) -> str:
        """The alias of ``parent`` joined on ``ref_sql`` under ``key`` (joined once per query scope)."""
        join_alias = scope.joins.get(key)
        if join_alias is None:
            join_alias = self.new_alias()
            scope.joins[key] = join_alias
            scope.join_sql.append(
                f"LEFT JOIN {self.catalog.table_sql(parent)} AS {quote_identifier(join_alias)}"
                f' ON {quote_identifier(join_alias)}."Id" = {ref_sql}'
            )
        return join_alias

    def name_field(
        self, scope: _Scope, ref: Field, ref_sql: str, key: tuple[str, ...], chain: list[_Link], fp: FieldPath, pos: int
    ) -> _Val:
        """A field of Salesforce's Name object through the polymorphic relationship ``ref`` (``What.Name``).

        The value comes from the record the id names, whatever its object: a CASE on the id's key prefix over one
        LEFT JOIN per object the relationship may point to and the org has a table for (an id never names a record
        of another object's table). An object without the field answers null (``What.Email`` of an opportunity);
        a field the Name object lacks is refused, as Salesforce refuses it (INVALID_FIELD on entity 'Name').
        """
        name = _NAME_OBJECT_BY_LOWER.get(fp.parts[-1].lower())
        if name is None:
            raise invalid_field(self.text, pos, fp.parts[-1], "Name")
        ftype, answering = NAME_OBJECT_FIELDS[name]
        targets: list[tuple[SObject, str]] = []
        for target_name in (ref.reference_to or "", *ref.polymorphic):
            target = self.catalog.schema.get_object(target_name, standard=True)
            if target is not None and target.name in self.catalog.tables and self.catalog.has(target):
                alias = self.join(scope, (*key, target.name.lower()), target, ref_sql)
                targets.append((target, alias))
        prefix = f"substr({ref_sql}, 1, 3)"
        # Schema names and key prefixes only: nothing in these CASEs is quoted from the query.
        # One object with a table (a case's owner: a user, queues have none here): its join alone says it all.
        single = len(targets) == 1
        if single:
            id_sql, object_sql = f'{quote_identifier(targets[0][1])}."Id"', f"'{targets[0][0].name}'"
        else:
            whens = " ".join(f"WHEN '{t.key_prefix}' THEN {quote_identifier(a)}.\"Id\"" for t, a in targets)
            id_sql = f"(CASE {prefix} {whens} END)" if targets else "NULL"
            objects = " ".join(f"WHEN '{t.key_prefix}' THEN '{t.name}'" for t, _ in targets)
            object_sql = f"(CASE {prefix} {objects} END)" if targets else "NULL"
        link = _Link(ref.relationship_name or ref.name, "Name", id_sql, object_sql)
        links = (*chain, link)
        if name == "Type":
            return self.parent_type(ref, ref_sql, id_sql, fp, links)
        if name == "Id":
            sql = id_sql
        else:
            whens = []
            for target, alias in targets:
                if answering is not None and target.name not in answering:
                    continue
                f = target.get_field(name)
                if name in ("Name", "NameOrAlias"):  # the object's name field: a case's number, a contract's ...
                    f = target.get_field("Name") or target.get_field(f"{target.name}Number")
                if f is None or not self.catalog.available(target, f):
                    continue
                value = self.column(alias, target, f, pos)
                if f.column_name.lower() not in self.catalog.columns[target.name]:  # a formula: no record, no value
                    value = f'CASE WHEN {quote_identifier(alias)}."Id" IS NOT NULL THEN {value} END'
                whens.append(f"WHEN '{target.key_prefix}' THEN {value}")
            if single and whens:
                sql = whens[0].split(" THEN ", 1)[1]
            else:
                sql = f"(CASE {prefix} {' '.join(whens)} END)" if whens else "NULL"
        leaf = Field(name, ftype, f"The {name} of the record the relationship points to (Name object)")
        return _Val(sql, _CATEGORY[ftype], name, fp.text, fp.pos, field=leaf, chain=links)

    def parent_type(self, ref: Field, ref_sql: str, id_sql: str, fp: FieldPath, chain: tuple[_Link, ...]) -> _Val:
        """``What.Type``, ``Owner.Type``: on a polymorphic relationship, the type of the record it points to.

        The parent of a polymorphic relationship is Salesforce's Name object, whose ``Type`` is the record's
        object (``Account``, ``Opportunity``; an owner's ``User`` or, for a queue, ``Queue``), told here by the
        id's key prefix once ``id_sql`` (the parent's ``Id``, read off its object's join) found the record; null
        without a parent, as for an id that names no record (Salesforce's relationship is then null, so
        ``WHERE What.Type = 'Account'`` does not match it). A relationship to one object has no such field
        (INVALID_FIELD on the parent's, as Salesforce answers).
        """
        types = []
        for name in (ref.reference_to or "", *ref.polymorphic):
            target = self.catalog.schema.get_object(name, standard=True)
            if target is not None:
                types.append((target.key_prefix, "Queue" if target.name == "Group" else target.name))
        whens = " ".join(f"WHEN '{prefix}' THEN '{label}'" for prefix, label in types)  # schema names: no quotes
        sql = f"(CASE WHEN {id_sql} IS NOT NULL THEN (CASE substr({ref_sql}, 1, 3) {whens} END) END)"
        labels = tuple(label for _, label in types)
        leaf = Field(
            "Type", FieldType.PICKLIST, "The type of the record the relationship points to", picklist_values=labels
        )
        return _Val(sql, "text", "Type", fp.text, fp.pos, field=leaf, chain=chain)

    # -- expressions -----------------------------------------------------------------------------

    def value(self, scope: _Scope, e: FieldPath | FuncCall, where: str) -> _Val:
        """A non-aggregate expression: a field path, a date function or toLabel()."""
        if isinstance(e, FieldPath):
            return self.resolve(scope, e)
        if e.name in AGGREGATES:
            raise malformed(self.text, e.pos, f"Aggregate functions are not allowed in the {where} clause: {e.text}")
        if e.name in _DATE_FUNCS:
            template, cat, needs_datetime = _DATE_FUNCS[e.name]
            arg = e.arg
            if isinstance(arg, FuncCall) and arg.name == "CONVERTTIMEZONE" and isinstance(arg.arg, FieldPath):
                arg = arg.arg  # the org's time zone is UTC
            if not isinstance(arg, FieldPath):
                raise malformed(self.text, e.pos, f"{e.name} takes one date or dateTime field: {e.text}")
            inner = self.resolve(scope, arg)
            if inner.cat not in ("date", "datetime") or (needs_datetime and inner.cat != "datetime"):
                kind = "dateTime" if needs_datetime else "date or dateTime"
                raise malformed(self.text, arg.pos, f"{e.name} only applies to a {kind} field, not {arg.text}")
            sql = template.format(c=inner.sql)
            return _Val(sql, cat, e.name, e.text, e.pos, chain=inner.chain, func=e.name)
        if e.name == "TOLABEL" and isinstance(e.arg, FieldPath):
            inner = self.resolve(scope, e.arg)  # picklist labels equal their values in this org
            inner.text = e.text
            return inner
        if e.name == "FORMAT":
            if where != "SELECT":
                raise malformed(self.text, e.pos, f"FORMAT() can only be used in the SELECT list: {e.text}")
            if not isinstance(e.arg, FieldPath):
                raise malformed(self.text, e.pos, f"FORMAT() takes a field or an aggregate function: {e.text}")
            return self.formatted(self.resolve(scope, e.arg), e)
        if e.name == "GROUPING":
            raise malformed(
                self.text, e.pos, f"GROUPING() can only be used with GROUP BY ROLLUP or GROUP BY CUBE: {e.text}"
            )
        if e.name == "CONVERTTIMEZONE":
            raise malformed(self.text, e.pos, "convertTimezone() can only be used inside a date function")
        raise malformed(self.text, e.pos, f"Unknown function: {e.name}")

    def aggregate(self, scope: _Scope, e: FuncCall) -> _Val:
        if e.arg is None:
            if e.name == "COUNT":
                raise malformed(self.text, e.pos, "COUNT() must be the only element in the SELECT list")
            raise malformed(self.text, e.pos, f"{e.name} needs a field: {e.text}")
        if isinstance(e.arg, FuncCall) and e.arg.name in AGGREGATES:
            raise malformed(self.text, e.arg.pos, f"Aggregate functions cannot be nested: {e.text}")
        inner = self.value(scope, e.arg, "SELECT")
        if inner.cat in ("longtext", "boolean") or (
            e.name in ("SUM", "AVG") and inner.cat not in ("double", "currency", "int")
        ):
            raise malformed(self.text, e.arg.pos, f"field {e.arg.text} does not support aggregate operator {e.name}")
        if e.name == "COUNT":
            sql, cat = f"COUNT({inner.sql})", "int"
        elif e.name == "COUNT_DISTINCT":
            sql, cat = f"COUNT(DISTINCT {inner.sql})", "int"
        elif e.name in ("SUM", "AVG"):
            sql, cat = f"{e.name}({inner.sql})", "double"
        else:
            sql, cat = f"{e.name}({inner.sql})", inner.cat
        return _Val(sql, cat, e.name, e.text, e.pos, field=inner.field, aggregate=True, func=e.name)

    def grouped(self, scope: _Scope, e: FieldPath | FuncCall, groups: Sequence[_Val], where: str) -> _Val:
        """An expression of an aggregate query: an aggregate, or something grouped by."""
        if isinstance(e, FuncCall) and e.name in AGGREGATES:
            return self.aggregate(scope, e)
        if isinstance(e, FuncCall) and e.name == "FORMAT" and isinstance(e.arg, FuncCall):
            if where != "SELECT":
                raise malformed(self.text, e.pos, f"FORMAT() can only be used in the SELECT list: {e.text}")
            if e.arg.name not in AGGREGATES:
                raise malformed(self.text, e.pos, f"FORMAT() takes a field or an aggregate function: {e.text}")
            return self.formatted(self.aggregate(scope, e.arg), e)
        if isinstance(e, FuncCall) and e.name == "GROUPING" and self.rolled is not None:
            if not isinstance(e.arg, FieldPath):
                raise malformed(self.text, e.pos, f"GROUPING() takes a field of the GROUP BY: {e.text}")
            inner = self.value(scope, e.arg, where)
            if not any(g.sql == inner.sql for g in groups):
                raise malformed(self.text, e.arg.pos, f"GROUPING() takes a field of the GROUP BY: {e.text}")
            return _Val("1" if inner.sql in self.rolled else "0", "int", "GROUPING", e.text, e.pos, func="GROUPING")
        v = self.value(scope, e, where)
        if not any(g.sql == v.sql for g in groups):
            raise malformed(self.text, e.pos, f"Field must be grouped or aggregated: {e.text}")
        if self.rolled and v.sql in self.rolled:  # a subtotal row: the rolled-up field is null
            return _Val("NULL", v.cat, v.name, v.text, v.pos, field=v.field, owner=v.owner, func=v.func)
        return v

    def formatted(self, v: _Val, e: FuncCall) -> _Val:
        """``FORMAT(...)`` of ``v``: the same value, shaped as text in the API user's locale."""
        cat = v.cat
        if v.aggregate and v.func != "COUNT" and v.field is not None and v.field.type is FieldType.CURRENCY:
            cat = "currency"  # a sum or an average of amounts is an amount
        return _Val(
            v.sql,
            _FORMATTED.get(cat, cat),
            v.name,
            e.text,
            e.pos,
            field=v.field,
            owner=v.owner,
            chain=v.chain,
            aggregate=v.aggregate,
            func=v.func,
        )

    # -- conditions ------------------------------------------------------------------------------

    def condition(self, scope: _Scope, c: Any, groups: Sequence[_Val] | None, where: str) -> str:
        if isinstance(c, And):
            return _joined(" AND ", [self.condition(scope, x, groups, where) for x in c.items])
        if isinstance(c, Or):
            return _joined(" OR ", [self.condition(scope, x, groups, where) for x in c.items])
        if isinstance(c, Not):
            # SOQL logic is two-valued: NOT of a comparison with null is true, not SQL's unknown.
            return f"(NOT IFNULL({self.condition(scope, c.item, groups, where)}, 0))"
        left = self.operand(scope, c.left, groups, where)
        if isinstance(c, Includes):
            raise SoqlError(
                "INVALID_QUERY_FILTER_OPERATOR",
                f"{c.op} operator is only valid on multi-select picklist fields, not on {left.text}",
                self.text,
                c.pos,
            )
        if isinstance(c, Compare):
            return self.compare(left, c.op, c.right)
        if isinstance(c, InValues):
            return self.in_values(left, c)
        if isinstance(c, InSelect):
            return self.semi_join(scope, left, c, where)
        raise malformed(self.text, None, "unsupported condition")  # pragma: no cover - parser bound

    def operand(self, scope: _Scope, e: FieldPath | FuncCall, groups: Sequence[_Val] | None, where: str) -> _Val:
        v = self.value(scope, e, where) if groups is None else self.grouped(scope, e, groups, where)
        if v.cat == "longtext":
            raise SoqlError("INVALID_FIELD", f"field '{v.name}' can not be filtered in a query call", self.text, e.pos)
        return v

    def type_error(self, v: _Val, lit: Literal) -> SoqlError:
        word = _TYPE_WORD[v.cat]
        quoted = "be" if v.cat in ("id", "text", "longtext") else "not be"
        return SoqlError(
            "INVALID_FIELD",
            f"value of filter criterion for field '{v.text}' must be of type {word} and should {quoted} enclosed "
            "in quotes",
            self.text,
            lit.pos,
        )

    def coerce(self, v: _Val, lit: Literal) -> Any:
        """The bound value of ``lit`` compared with ``v``, after Salesforce's type checks."""
        cat, kind = v.cat, lit.kind
        if cat == "id":
            if kind != "string":
                raise self.type_error(v, lit)
            canonical = canonical_id(lit.value)
            if canonical is None:
                raise SoqlError("INVALID_QUERY_FILTER_OPERATOR", f"invalid ID field: {lit.value}", self.text, lit.pos)
            return canonical
        ok = {
            "text": kind == "string",
            "longtext": kind == "string",
            "double": kind == "number",
            "currency": kind == "number",
            "int": kind == "number",
            "boolean": kind == "boolean",
            "date": kind == "date",
            "datetime": kind == "datetime",
        }[cat]
        if not ok:
            raise self.type_error(v, lit)
        if kind == "boolean":
            return 1 if lit.value else 0
        if kind == "date":
            return lit.value.isoformat()
        return lit.value

    def compare(self, v: _Val, op: str, lit: Literal) -> str:
        sql = v.sql
        if lit.kind == "null":
            if op == "=":
                return f"{sql} IS NULL"
            if op == "!=":
                return f"{sql} IS NOT NULL"
            return "0"  # ordering against null matches nothing
        if op == "LIKE":
            if v.cat not in ("text", "id"):
                raise SoqlError(
                    "INVALID_FIELD",
                    f"invalid operator on field '{v.text}': LIKE applies to text fields only",
                    self.text,
                    lit.pos,
                )
            if lit.kind != "string":
                raise self.type_error(v, lit)
            return f"{sql} LIKE {self.param(lit.value, ((lit.pos,), 'like', 0))} ESCAPE '\\'"
        if lit.kind == "relative":
            if v.cat not in ("date", "datetime"):
                raise self.type_error(v, lit)
            self.relative = True
            name, n = lit.value
            is_dt = v.cat == "datetime"
            start = RelativeParam(name, n, False, is_dt)
            end = RelativeParam(name, n, True, is_dt)
            if op == "=":
                return f"({sql} >= {self.param(start)} AND {sql} < {self.param(end)})"
            if op == "!=":
                return f"({sql} IS NULL OR {sql} < {self.param(start)} OR {sql} >= {self.param(end)})"
            if op == "<":
                return f"{sql} < {self.param(start)}"
            if op == "<=":
                return f"{sql} < {self.param(end)}"
            if op == ">":
                return f"{sql} >= {self.param(end)}"
            return f"{sql} >= {self.param(start)}"
        value = self.coerce(v, lit)
        if v.cat == "id" and op in ("=", "!="):
            forms = _id_forms(lit.value, value)
            if len(forms) > 1:  # also match a dump whose ids are 15 characters or break the checksum
                marks = ", ".join(self.param(x, ((lit.pos,), "id_forms", i)) for i, x in enumerate(forms))
                return f"{sql} IN ({marks})" if op == "=" else f"({sql} IS NULL OR {sql} NOT IN ({marks}))"
            # One spelling: derived as its spellings are, so that a shape's plan holds only for one-spelling ids.
            mark = self.param(value, ((lit.pos,), "id_forms", 0))
        else:
            mark = self.literal_param(value, lit, v)
        collate = " COLLATE NOCASE" if v.cat == "text" else ""
        if op == "!=":  # SOQL's != matches null values too
            return f"{sql} IS NOT {mark}{collate}"
        return f"{sql} {op} {mark}{collate}"

    def in_values(self, v: _Val, c: InValues) -> str:
        if any(lit.kind == "relative" for lit in c.values):
            parts = [self.compare(v, "=", lit) for lit in c.values]
            joined = "(" + " OR ".join(parts) + ")"
            return f"(NOT IFNULL({joined}, 0))" if c.negated else joined
        has_null = any(lit.kind == "null" for lit in c.values)
        lits = [lit for lit in c.values if lit.kind != "null"]
        values = [self.coerce(v, lit) for lit in lits]
        if v.cat == "id":
            values = id_in_values([lit.value for lit in lits], values)
            where = tuple(lit.pos for lit in lits)
            placeholders = ", ".join(self.param(x, (where, "id_in", i)) for i, x in enumerate(values))
        else:
            placeholders = ", ".join(self.literal_param(x, lit, v) for x, lit in zip(values, lits, strict=True))
        collate = " COLLATE NOCASE" if v.cat == "text" else ""
        if not c.negated:
            parts = []
            if values:
                parts.append(f"{v.sql}{collate} IN ({placeholders})")
            if has_null:
                parts.append(f"{v.sql} IS NULL")
            return "(" + " OR ".join(parts) + ")"
        if not values:
            return f"{v.sql} IS NOT NULL"
        if has_null:
            return f"({v.sql} IS NOT NULL AND {v.sql}{collate} NOT IN ({placeholders}))"
        return f"({v.sql} IS NULL OR {v.sql}{collate} NOT IN ({placeholders}))"

    def semi_join(self, scope: _Scope, v: _Val, c: InSelect, where: str) -> str:
        if where != "WHERE":
            raise malformed(self.text, c.pos, "Semi join sub-selects are only allowed in the WHERE clause")
        if v.cat != "id" or v.func is not None:
            raise malformed(
                self.text,
                c.pos,
                f"Semi join sub-selects can only be used with an Id or reference field, not with {v.text}",
            )
        if v.chain:
            raise malformed(
                self.text,
                c.left.pos,
                f"The left operand of a semi join sub-select cannot use a relationship: '{v.text}'; name a field "
                f"of {scope.obj.name} itself",
            )
        sub_sql, inner = self.subquery(c.query)
        outer_target = v.owner.name if v.field and v.field.type is FieldType.ID and v.owner else None
        if v.field is not None and v.field.type is FieldType.REFERENCE:
            outer_target = v.field.reference_to
        inner_target = inner.owner.name if inner.field and inner.field.type is FieldType.ID and inner.owner else None
        if inner.field is not None and inner.field.type is FieldType.REFERENCE:
            inner_target = inner.field.reference_to
        if outer_target != inner_target:
            raise malformed(
                self.text,
                c.query.items[0].expr.pos if isinstance(c.query.items[0], SelectItem) else c.pos,
                f"The selected field '{inner.text}' in the subquery and the left operand field in the where "
                f"expression in the outer query '{v.text}' should point to the same object type",
            )
        if self.catalog.schema.get_object(c.query.object_name, standard=True) is scope.obj:
            raise malformed(
                self.text,
                c.query.object_pos,
                f"The inner and outer selects should not be on the same object type: '{c.query.object_name}'",
            )
        if c.negated:
            return f"({v.sql} IS NULL OR {v.sql} NOT IN ({sub_sql}))"
        return f"{v.sql} IN ({sub_sql})"

    def subquery(self, q: Select) -> tuple[str, _Val]:
        self.check_clauses(q, nested=True)
        scope = self.scope(q)
        items = [i for i in q.items if isinstance(i, SelectItem)]
        if len(items) != 1 or len(q.items) != 1:
            raise malformed(self.text, q.pos, "Semi join sub-selects must select exactly one Id or reference field")
        item = items[0]
        if not isinstance(item.expr, FieldPath) or item.alias is not None or q.group_by or q.having:
            raise malformed(
                self.text, item.expr.pos, "Semi join sub-selects must select exactly one Id or reference field"
            )
        inner = self.resolve(scope, item.expr)
        if inner.cat != "id":
            raise malformed(
                self.text,
                item.expr.pos,
                f"Semi join sub-selects can only select an Id or reference field, not {item.expr.text}",
            )
        if inner.chain:
            raise malformed(
                self.text,
                item.expr.pos,
                f"Semi join sub-selects cannot select a field through a relationship: '{item.expr.text}'",
            )
        for keyword, pos in (("ORDER BY", q.order_kw_pos), ("LIMIT", q.limit_kw_pos), ("OFFSET", q.offset_kw_pos)):
            if pos >= 0:
                raise malformed(self.text, pos, f"{keyword} is not allowed in a semi join sub-select")
        where = f"{inner.sql} IS NOT NULL"
        if q.where is not None:
            self.check_semi_joins(q.where, nested=True)
            where += " AND " + self.condition(scope, q.where, None, "WHERE")
        sql = f"SELECT {inner.sql} FROM {self.from_clause(scope)} WHERE {where}"
        return sql, inner

    # -- clauses ---------------------------------------------------------------------------------

    def from_clause(self, scope: _Scope) -> str:
        table = self.catalog.table_sql(scope.obj)
        return " ".join([f"{table} AS {quote_identifier(scope.alias)}", *scope.join_sql])

    def order_by(self, scope: _Scope, q: Select, groups: Sequence[_Val] | None) -> str:
        if not q.order_by:
            return ""
        parts = []
        for item in q.order_by:
            v = (
                self.value(scope, item.expr, "ORDER BY")
                if groups is None
                else self.grouped(scope, item.expr, groups, "ORDER BY")
            )
            if v.cat == "longtext":
                raise SoqlError(
                    "INVALID_FIELD", f"field '{v.name}' can not be sorted in a query call", self.text, item.expr.pos
                )
            sql = v.sql + (" COLLATE NOCASE" if v.cat == "text" else "")
            sql += " DESC" if item.descending else " ASC"
            if item.nulls_first is not None:
                sql += " NULLS FIRST" if item.nulls_first else " NULLS LAST"
            parts.append(sql)
        return " ORDER BY " + ", ".join(parts)

    def limit_offset(self, q: Select) -> str:
        if q.offset is not None and q.offset > MAX_OFFSET:
            raise SoqlError(
                "NUMBER_OUTSIDE_VALID_RANGE",
                f"Maximum SOQL offset allowed is {MAX_OFFSET}",
                self.text,
                q.offset_pos,
            )
        sql = ""
        if q.limit is not None:
            sql += f" LIMIT {self.param(min(q.limit, 2**62))}"  # beyond SQLite's integers means no limit
        if q.offset is not None:
            sql += (" LIMIT -1" if q.limit is None else "") + f" OFFSET {self.param(q.offset)}"
        return sql

    # -- the whole query -------------------------------------------------------------------------

    def top(self, q: Select) -> Plan:
        scope = self.scope(q)
        self.check_clauses(q, nested=False)
        items = [i for i in q.items if isinstance(i, SelectItem)]
        children = [i for i in q.items if isinstance(i, ChildSubquery)]
        typeofs = [i for i in q.items if isinstance(i, TypeOf)]
        if q.having is not None and not q.group_by:
            # "HAVING": it filters the groups of a GROUP BY; without one there is nothing to filter.
            raise malformed(self.text, q.having_kw_pos, "HAVING can only be used with GROUP BY")
        count_items = [i for i in items if isinstance(i.expr, FuncCall) and i.expr.name == "COUNT" and not i.expr.arg]
        if count_items:
            if len(q.items) != 1:
                raise malformed(
                    self.text, count_items[0].expr.pos, "COUNT() must be the only element in the SELECT list"
                )
            return self.count_query(scope, q)
        is_aggregate = bool(q.group_by) or q.having is not None
        is_aggregate = is_aggregate or any(
            isinstance(i.expr, FuncCall)
            and (
                i.expr.name in AGGREGATES | DATE_FUNCTIONS
                or (i.expr.name == "FORMAT" and isinstance(i.expr.arg, FuncCall) and i.expr.arg.name in AGGREGATES)
            )
            for i in items
        )
        if is_aggregate:
            fields = [i for i in items if isinstance(i.expr, FuncCall) and i.expr.name == "FIELDS"]
            if fields:
                raise malformed(self.text, fields[0].expr.pos, "FIELDS() cannot be used in an aggregate query")
            if children:
                raise malformed(
                    self.text, children[0].pos, "Parent-to-child subqueries are not allowed in an aggregate query"
                )
            if typeofs:
                raise malformed(self.text, typeofs[0].pos, "TYPEOF cannot be used in an aggregate query")
            return self.aggregate_query(scope, q, items)
        return self.record_query(scope, q)

    def where(self, scope: _Scope, q: Select) -> str:
        parts = []
        if q.where is not None:
            self.check_semi_joins(q.where)
            parts.append(self.condition(scope, q.where, None, "WHERE"))
        if q.using_scope is not None and q.using_scope.lower() in ("mine", "mine_and_my_groups"):
            # The API user's records: those it owns, or created where the object has no owner.
            f = scope.obj.get_field("OwnerId") or scope.obj.get_field("CreatedById")
            if f is not None:
                parts.append(f"{self.column(scope.alias, scope.obj, f, q.using_pos)} = {ORG_CREATOR_SQL}")
        return " WHERE " + " AND ".join(parts) if parts else ""

    def check_clauses(self, q: Select, nested: bool) -> None:
        """WITH, USING SCOPE and FOR VIEW|REFERENCE: their values, and where they may stand."""
        if q.with_mode is not None and q.with_mode.upper() not in WITH_MODES:
            raise malformed(self.text, q.with_pos, f"unexpected token: '{q.with_mode}'")
        if q.using_scope is not None:
            if nested:
                raise malformed(self.text, q.using_pos, "USING SCOPE is not allowed in a subquery")
            if q.using_scope.lower() not in SCOPES:
                raise malformed(
                    self.text,
                    q.using_pos,
                    f"Invalid scope: {q.using_scope}; use one of {', '.join(sorted(SCOPES))}",
                )
        if q.for_mode is not None and nested:
            raise malformed(self.text, q.for_pos, f"FOR {q.for_mode} is only allowed at the end of the outer query")

    def check_semi_joins(self, c: Any, nested: bool = False) -> None:
        """Salesforce's placement rules for semi- and anti-joins in a WHERE clause.

        They may stand only as terms of the top-level AND (never under OR or NOT), at most two of
        them, and never inside another one's sub-select (``nested``).
        """
        found: list[InSelect] = []

        def walk(node: Any, under: str | None) -> None:
            if isinstance(node, And):
                for item in node.items:
                    walk(item, under)
            elif isinstance(node, Or):
                for item in node.items:
                    walk(item, under or "OR")
            elif isinstance(node, Not):
                walk(node.item, under or "NOT")
            elif isinstance(node, InSelect):
                if nested:
                    raise malformed(self.text, node.pos, "Nesting of semi join sub-selects is not supported")
                if under == "OR":
                    raise malformed(self.text, node.pos, "Semi join sub-selects are not allowed with the 'OR' operator")
                if under == "NOT":
                    raise malformed(
                        self.text,
                        node.pos,
                        "Semi join sub-selects are not allowed with the 'NOT' operator; write an anti-join as "
                        "'NOT IN (SELECT ...)' instead",
                    )
                found.append(node)
                if len(found) > 2:
                    raise malformed(
                        self.text, node.pos, "Maximum 2 semi join sub-selects are allowed in a WHERE clause"
                    )

        walk(c, None)

    def groups(self, scope: _Scope, q: Select) -> list[_Val]:
        if q.group_kind is not None and len(q.group_by) > MAX_ROLLUP_FIELDS:
            raise malformed(
                self.text,
                q.group_by[MAX_ROLLUP_FIELDS].pos,
                f"GROUP BY {q.group_kind} takes at most {MAX_ROLLUP_FIELDS} fields",
            )
        groups = []
        for e in q.group_by:
            if isinstance(e, FuncCall) and e.name in AGGREGATES:
                raise malformed(self.text, e.pos, f"Aggregate functions are not allowed in GROUP BY: {e.text}")
            v = self.value(scope, e, "GROUP BY")
            # "Considerations When Using GROUP BY": a field's describe says whether it is groupable.
            ungroupable = v.field is not None and v.func is None and not v.field.groupable
            if v.cat in ("longtext", "double", "currency") or ungroupable:
                raise SoqlError(
                    "INVALID_FIELD", f"field '{v.name}' can not be grouped in a query call", self.text, e.pos
                )
            groups.append(v)
        return groups

    def count_query(self, scope: _Scope, q: Select) -> Plan:
        # "COUNT() and COUNT(fieldName)": COUNT() takes neither ORDER BY nor (API 19.0 on) GROUP BY.
        if q.group_by:
            raise malformed(
                self.text, q.group_kw_pos, "COUNT() cannot be used with GROUP BY: use COUNT(fieldName) instead"
            )
        if q.order_by:
            raise malformed(
                self.text, q.order_kw_pos, "COUNT() cannot be used with ORDER BY: use COUNT(fieldName) instead"
            )
        where = self.where(scope, q)
        limit = self.limit_offset(q)
        inner = f"SELECT 1 FROM {self.from_clause(scope)}{where}{limit}"
        sql = f"SELECT COUNT(*) FROM ({inner})" if limit else inner.replace("SELECT 1", "SELECT COUNT(*)", 1)
        return Plan(
            sql, tuple(self.params), self.relative, _no_records, True, scope.obj.name, origins=tuple(self.origins)
        )

    def record_columns(
        self, scope: _Scope, items: Sequence[SelectItem | ChildSubquery | TypeOf], columns: list[str]
    ) -> tuple[str, list[ChildSubquery]]:
        """Compile a record query's SELECT list into ``columns`` (appended to in place).

        Returns the shaper's record source, the record's ``Id`` being the first new column, and the
        child subqueries, whose keys the record holds (None) in their place in the list.
        """
        items = self.expand_fields(scope, items)
        index = {c: i for i, c in enumerate(columns)}

        def col(sql: str) -> int:
            if sql not in index:
                index[sql] = len(columns)
                columns.append(sql)
            return index[sql]

        id_col = col(f'{quote_identifier(scope.alias)}."Id"')
        # The record tree: key -> leaf (column, category), nested node (object name, id column, children, column
        # naming the record's object for the Name object of a polymorphic relationship, else None) or a child
        # subquery's placeholder (None,).
        root: dict[str, Any] = {}
        seen: set[str] = set()
        subs: list[ChildSubquery] = []
        for item in items:
            if isinstance(item, TypeOf):
                name, node = self.typeof_node(scope, item, col)
                if name in root:
                    raise malformed(
                        self.text, item.rel_pos, f"TYPEOF {item.relationship} cannot be used with {name} selected"
                    )
                root[name] = node
                continue
            if isinstance(item, ChildSubquery):
                found = self.catalog.schema.get_child_relationship(scope.obj, item.query.object_name)
                name = found[1].child_relationship or "" if found else item.query.object_name
                if f"({name.lower()})" in seen:
                    raise malformed(self.text, item.query.object_pos, f"duplicate field selected: {name}")
                seen.add(f"({name.lower()})")
                root[name] = (None,)
                subs.append(item)
                continue
            labelled = isinstance(item.expr, FuncCall) and item.expr.name in ("TOLABEL", "FORMAT")
            if item.alias is not None and not labelled:
                raise malformed(self.text, item.alias_pos, "Only aggregate expressions use field aliasing")
            v = self.value(scope, item.expr, "SELECT")
            if item.alias is not None:  # toLabel() and FORMAT() may be aliased: the key is the alias
                if f"alias {item.alias.lower()}" in seen or item.alias.lower() in (k.lower() for k in root):
                    raise malformed(self.text, item.alias_pos, f"duplicate alias: {item.alias}")
                seen.add(f"alias {item.alias.lower()}")
                root[item.alias] = (col(v.sql), v.cat)
                continue
            key = f"{v.sql} {v.name.lower()} {v.cat}"  # two fields may compute alike (SystemModstamp, LastModifiedDate)
            if key in seen:
                raise malformed(self.text, item.expr.pos, f"duplicate field selected: {v.text}")
            seen.add(key)
            self.place(root, v, col, item.expr.pos)
        return _record_source(scope.obj.name, id_col, root), subs

    def place(self, node: dict[str, Any], v: _Val, col: Callable[[str], int], pos: int) -> None:
        """Put ``v`` into the record tree ``node``: each relationship it follows as a nested parent, then its leaf."""
        for link in v.chain:
            entry = node.get(link.name)
            if isinstance(entry, _TypeOfNode):
                raise malformed(self.text, pos, f"{v.text} cannot be selected with a TYPEOF of {link.name}")
            if entry is None:
                entry = (link.obj, col(link.id_sql), {}, _object_entry(link, col))
                node[link.name] = entry
            node = entry[2]
        node[v.name] = (col(v.sql), v.cat)

    def typeof_node(self, scope: _Scope, item: TypeOf, col: Callable[[str], int]) -> tuple[str, _TypeOfNode]:
        """``TYPEOF What WHEN Account THEN ... ELSE ... END``: the fields of each record's own type.

        Each WHEN branch reads its object's fields from a LEFT JOIN of that object (a branch whose object the org
        has no table for matches no record); a record of another type gets the ELSE fields, those of the Name
        object, or no parent without an ELSE. Every parent is typed with its own object, as TYPEOF answers it.
        """
        ref = scope.obj.get_relationship(item.relationship)
        if ref is None or ref.reference_to is None:
            raise invalid_relationship(self.text, item.rel_pos, item.relationship)
        if not ref.polymorphic:
            raise malformed(
                self.text,
                item.rel_pos,
                f"TYPEOF can only be used on a polymorphic relationship, and '{item.relationship}' always "
                f"points to {ref.reference_to}",
            )
        allowed = {t.lower(): t for t in (ref.reference_to, *ref.polymorphic)}
        ref_sql = self.column(scope.alias, scope.obj, ref, item.rel_pos)
        name = ref.relationship_name or item.relationship
        prefix_col = col(f"substr({ref_sql}, 1, 3)")
        branches: list[tuple[str, str, int, dict[str, Any]]] = []
        seen: set[str] = set()
        for type_name, pos, fields in item.whens:
            if type_name.lower() not in allowed:
                raise malformed(
                    self.text,
                    pos,
                    f"'{type_name}' is not a type that '{item.relationship}' can point to "
                    f"({', '.join(sorted(allowed.values()))})",
                )
            if type_name.lower() in seen:
                raise malformed(self.text, pos, f"duplicate WHEN {type_name} in TYPEOF {item.relationship}")
            seen.add(type_name.lower())
            target = self.catalog.schema.get_object(type_name, standard=True)
            if target is None:  # pragma: no cover - the schema checks every reference's targets
                raise invalid_type(self.text, pos, type_name)
            for fp in fields:
                first = target.get_field(fp.parts[0]) if len(fp.parts) == 1 else None
                if len(fp.parts) == 1 and first is None:
                    raise invalid_field(self.text, fp.pos, fp.parts[0], target.name)
            if not (target.name in self.catalog.tables and self.catalog.has(target)):
                continue  # no table: no record of the type, whatever its fields
            key = (ref.name.lower(), target.name.lower())
            alias = self.join(scope, key, target, ref_sql)
            node: dict[str, Any] = {}
            self.branch_fields(scope, fields, (target, alias, key), node, col)
            branches.append((target.key_prefix, target.name, col(f'{quote_identifier(alias)}."Id"'), node))
        otherwise = None
        if item.otherwise:
            node = {}
            link = None
            for fp in item.otherwise:
                path = FieldPath((item.relationship, *fp.parts), fp.pos, (item.rel_pos, *fp.part_pos))
                v = self.resolve(scope, path)  # a field of the Name object
                link = v.chain[-1]
                if v.name.lower() in (k.lower() for k in node):
                    raise malformed(self.text, fp.pos, f"duplicate field selected: {fp.text}")
                node[v.name] = (col(v.sql), v.cat)
            assert link is not None and link.object_sql is not None
            otherwise = (col(link.id_sql), col(link.object_sql), node)
        return name, _TypeOfNode(prefix_col, tuple(branches), otherwise)

    def branch_fields(
        self,
        scope: _Scope,
        fields: Sequence[FieldPath],
        start: tuple[SObject, str, tuple[str, ...]],
        node: dict[str, Any],
        col: Callable[[str], int],
    ) -> None:
        """The fields of one TYPEOF branch into ``node`` (leaves and nested parents, as a record's own)."""
        seen: set[str] = set()
        for fp in fields:
            v = self.resolve(scope, fp, start)
            key = f"{v.sql} {v.name.lower()}"
            if key in seen:
                raise malformed(self.text, fp.pos, f"duplicate field selected: {fp.text}")
            seen.add(key)
            self.place(node, v, col, fp.pos)

    def fields_kind(self, e: FuncCall) -> str:
        """``ALL``, ``STANDARD`` or ``CUSTOM``, the argument of ``FIELDS()``."""
        arg = e.arg
        kind = arg.parts[0].upper() if isinstance(arg, FieldPath) and len(arg.parts) == 1 else ""
        if kind not in ("ALL", "STANDARD", "CUSTOM"):
            raise malformed(self.text, e.pos, f"FIELDS() takes ALL, STANDARD or CUSTOM, not {e.text}")
        return kind

    def expand_fields(
        self, scope: _Scope, items: Sequence[SelectItem | ChildSubquery]
    ) -> list[SelectItem | ChildSubquery]:
        """The SELECT list with each ``FIELDS(...)`` replaced by the fields it names, in describe order."""
        out: list[SelectItem | ChildSubquery] = []
        for item in items:
            if not (isinstance(item, SelectItem) and isinstance(item.expr, FuncCall) and item.expr.name == "FIELDS"):
                out.append(item)
                continue
            if item.alias is not None:
                raise malformed(self.text, item.alias_pos, "Only aggregate expressions use field aliasing")
            kind = self.fields_kind(item.expr)
            pos = item.expr.pos
            for f in scope.obj.fields:
                if self.catalog.available(scope.obj, f) and (kind == "ALL" or (kind == "CUSTOM") == f.custom):
                    out.append(SelectItem(FieldPath((f.name,), pos, (pos,)), None, -1))
        return out

    def check_fields_limit(self, q: Select) -> None:
        """``FIELDS(ALL)`` and ``FIELDS(CUSTOM)`` are unbounded: Salesforce wants LIMIT 200 at most with them."""
        for item in q.items:
            if isinstance(item, SelectItem) and isinstance(item.expr, FuncCall) and item.expr.name == "FIELDS":
                kind = self.fields_kind(item.expr)
                if kind != "STANDARD" and (q.limit is None or q.limit > FIELDS_LIMIT):
                    raise malformed(
                        self.text,
                        item.expr.pos,
                        f"The SOQL FIELDS function must have a LIMIT of at most {FIELDS_LIMIT} with "
                        f"FIELDS({kind}) (FIELDS(STANDARD) needs none)",
                    )

    def record_query(self, scope: _Scope, q: Select) -> Plan:
        self.check_fields_limit(q)
        columns: list[str] = []
        source, subs = self.record_columns(scope, q.items, columns)
        where = self.where(scope, q)
        order = self.order_by(scope, q, None)
        limit = self.limit_offset(q)
        from_sql = self.from_clause(scope)
        sql = f"SELECT {', '.join(columns)} FROM {from_sql}{where}{order}{limit}"
        params, origins = tuple(self.params), tuple(self.origins)
        ids = f"SELECT {columns[0]} FROM {from_sql}{where}{order}{limit}"
        children = tuple(self.child_plan(scope, sub, ids, (params, origins), 2) for sub in subs)
        shaper = _generate_shaper(source)
        return Plan(sql, params, self.relative, shaper, False, scope.obj.name, children, origins)

    def child_plan(
        self,
        parent: _Scope,
        sub: ChildSubquery,
        parent_ids: str,
        parent_params: tuple[tuple[Any, ...], tuple[Origin | None, ...]],
        level: int,
    ) -> ChildPlan:
        """Compile a parent-to-child subquery at ``level`` (the root query is level 1).

        ``parent_ids`` selects the ids of every parent record, with ``parent_params`` (values, origins).
        """
        q = sub.query
        found = self.catalog.schema.get_child_relationship(parent.obj, q.object_name)
        qualifier = (q.object_qualifier or "").lower()
        if qualifier and qualifier not in (parent.obj.name.lower(), (parent.user_alias or "").lower()):
            found = None  # FROM Account.Contacts must name the parent object (or its alias)
        if found is None or not self.catalog.has(found[0]) or not self.catalog.available(*found):
            raise SoqlError(
                "INVALID_TYPE",
                f"Didn't understand relationship '{q.object_name}' in FROM part of query call. If you are attempting "
                "to use a custom relationship, be sure to append the '__r' after the custom relationship name. "
                "Please reference your WSDL or the describe call for the appropriate names.",
                self.text,
                q.object_pos,
            )
        child, ref = found
        self.n_children += 1
        if self.n_children > MAX_CHILD_SUBQUERIES:
            raise malformed(
                self.text,
                sub.pos,
                f"No more than {MAX_CHILD_SUBQUERIES} parent-to-child relationships can be specified in a query",
            )
        if level > MAX_CHILD_LEVELS:
            raise malformed(
                self.text,
                sub.pos,
                "SOQL statements cannot query aggregate relationships more than "
                f"{MAX_CHILD_LEVELS - 1} levels away from the root entity object.",
            )
        for item in q.items:
            if isinstance(item, SelectItem) and isinstance(item.expr, FuncCall) and item.expr.name in AGGREGATES:
                raise malformed(self.text, item.expr.pos, "Only root queries support aggregate expressions")
        if q.group_by or q.having is not None:
            raise malformed(self.text, sub.pos, "Only root queries support aggregate expressions")
        if q.offset_kw_pos >= 0:
            raise malformed(self.text, q.offset_kw_pos, "OFFSET is not allowed in a parent-to-child subquery")
        self.check_fields_limit(q)
        self.check_clauses(q, nested=True)
        saved = self.params, self.origins
        self.params, self.origins = list(parent_params[0]), list(parent_params[1])
        try:
            scope = _Scope(child, self.new_alias(), q.object_alias)
            fk_sql = self.column(scope.alias, child, ref, q.object_pos)
            columns = [fk_sql]
            source, subs = self.record_columns(scope, q.items, columns)
            where = f" WHERE {fk_sql} IN ({parent_ids})"
            if q.where is not None:
                self.check_semi_joins(q.where)
                where += " AND " + self.condition(scope, q.where, None, "WHERE")
            order = self.order_by(scope, q, None)
            from_sql = self.from_clause(scope)
            sql = f"SELECT {', '.join(columns)} FROM {from_sql}{where}{order}"
            params, origins = tuple(self.params), tuple(self.origins)
            ids = f"SELECT {columns[1]} FROM {from_sql}{where}"
            grand = tuple(self.child_plan(scope, g, ids, (params, origins), level + 1) for g in subs)
        finally:
            self.params, self.origins = saved
        name = ref.child_relationship or q.object_name
        return ChildPlan(name, sql, params, _generate_shaper(source), q.limit, grand, origins)

    def aggregate_query(self, scope: _Scope, q: Select, items: list[SelectItem]) -> Plan:
        groups = self.groups(scope, q)
        if q.group_kind is not None:
            return self.grouping_sets_query(scope, q, items, groups)
        values = self.aggregate_values(scope, q, items, groups)
        where = self.where(scope, q)
        group_sql = ""
        if groups:
            group_sql = " GROUP BY " + ", ".join(g.sql + (" COLLATE NOCASE" if g.cat == "text" else "") for g in groups)
        having = ""
        if q.having is not None:
            having = " HAVING " + self.condition(scope, q.having, groups, "HAVING")
        order = self.order_by(scope, q, groups)
        limit = self.limit_offset(q)
        columns = ", ".join(v.sql for _, v in values)
        sql = f"SELECT {columns} FROM {self.from_clause(scope)}{where}{group_sql}{having}{order}{limit}"
        shaper = _aggregate_shaper(values)
        return Plan(sql, tuple(self.params), self.relative, shaper, False, scope.obj.name, (), tuple(self.origins))

    def aggregate_values(
        self, scope: _Scope, q: Select, items: list[SelectItem], groups: Sequence[_Val]
    ) -> list[tuple[str, _Val]]:
        """The SELECT list of an aggregate query: (key in the AggregateResult, value)."""
        values: list[tuple[str, _Val]] = []
        keys: set[str] = set()
        n_expr = 0
        for item in items:
            v = self.grouped(scope, item.expr, groups, "SELECT")
            if item.alias is not None:
                key = item.alias
            elif isinstance(item.expr, FuncCall) and (v.aggregate or v.func):
                key = f"expr{n_expr}"
                n_expr += 1
            else:
                key = v.name
            if key.lower() in keys:
                raise malformed(self.text, item.alias_pos if item.alias else item.expr.pos, f"duplicate alias: {key}")
            keys.add(key.lower())
            values.append((key, v))
        if not q.group_by and q.limit is not None and any(v.aggregate for _, v in values):
            # One row at most: Salesforce refuses the LIMIT rather than ignore it (COUNT() is another matter).
            raise malformed(self.text, q.limit_kw_pos, "LIMIT is not allowed in an aggregate query without GROUP BY")
        return values

    def grouping_sets_query(self, scope: _Scope, q: Select, items: list[SelectItem], groups: list[_Val]) -> Plan:
        """GROUP BY ROLLUP(...) or CUBE(...): one GROUP BY per grouping set, their rows in one UNION ALL.

        A set's rows carry null for the fields rolled up in it, and GROUPING(field) is 1 there. ROLLUP
        rolls up from the right (a, b; a; none), CUBE every combination. Without ORDER BY the rows come
        sorted by the fields, each subtotal after the rows it sums and the grand total last.
        """
        n = len(groups)
        if q.group_kind == "ROLLUP":
            sets = [tuple(range(k)) for k in range(n, -1, -1)]
        else:  # CUBE: every subset, the largest first
            sets = sorted(
                (tuple(i for i in range(n) if mask >> i & 1) for mask in range(2**n - 1, -1, -1)),
                key=lambda s: -len(s),
            )
        branches: list[str] = []
        values: list[tuple[str, _Val]] = []
        for kept in sets:
            self.rolled = frozenset(g.sql for i, g in enumerate(groups) if i not in kept)
            try:
                values = self.aggregate_values(scope, q, items, groups)
                where = self.where(scope, q)
                having = ""
                if q.having is not None:
                    having = " HAVING " + self.condition(scope, q.having, groups, "HAVING")
                hidden: list[str] = []
                for item in q.order_by:
                    v = self.grouped(scope, item.expr, groups, "ORDER BY")
                    if v.cat == "longtext":
                        raise SoqlError(
                            "INVALID_FIELD",
                            f"field '{v.name}' can not be sorted in a query call",
                            self.text,
                            item.expr.pos,
                        )
                    hidden.append(v.sql)
                if not q.order_by:  # each field's subtotal after its rows: (rolled up?, value) per field
                    for g in groups:
                        hidden += ["1" if g.sql in self.rolled else "0", "NULL" if g.sql in self.rolled else g.sql]
            finally:
                self.rolled = None
            group_sql = ""
            if kept:
                group_sql = " GROUP BY " + ", ".join(
                    groups[i].sql + (" COLLATE NOCASE" if groups[i].cat == "text" else "") for i in kept
                )
            columns = [v.sql for _, v in values] + hidden
            named = ", ".join(f"{c} AS c{i}" for i, c in enumerate(columns))
            branches.append(f"SELECT {named} FROM {self.from_clause(scope)}{where}{group_sql}{having}")
        n_values = len(values)
        order_parts = []
        if q.order_by:
            for i, item in enumerate(q.order_by):
                v = self.grouped(scope, item.expr, groups, "ORDER BY")
                part = f"c{n_values + i}" + (" COLLATE NOCASE" if v.cat == "text" else "")
                part += " DESC" if item.descending else " ASC"
                if item.nulls_first is not None:
                    part += " NULLS FIRST" if item.nulls_first else " NULLS LAST"
                order_parts.append(part)
        else:
            for i, g in enumerate(groups):
                order_parts.append(f"c{n_values + 2 * i}")
                order_parts.append(f"c{n_values + 2 * i + 1}" + (" COLLATE NOCASE" if g.cat == "text" else ""))
        limit = self.limit_offset(q)
        outer = ", ".join(f"c{i}" for i in range(n_values))
        sql = f"SELECT {outer} FROM ({' UNION ALL '.join(branches)}) ORDER BY {', '.join(order_parts)}{limit}"
        shaper = _aggregate_shaper(values)
        return Plan(sql, tuple(self.params), self.relative, shaper, False, scope.obj.name, (), tuple(self.origins))


def _aggregate_shaper(values: list[tuple[str, _Val]]) -> Callable[[list[tuple[Any, ...]]], list[dict[str, Any]]]:
    entries = ", ".join(f"{key!r}: {_convert(v.cat, f'r[{i}]')}" for i, (key, v) in enumerate(values))
    return _generate_shaper("{'attributes': {'type': 'AggregateResult'}" + (", " + entries if entries else "") + "}")


def _convert(cat: str, expr: str) -> str:
    fn = _CONVERTER.get(cat)
    return expr if fn is None else f"{fn}({expr})"


def _record_source(
    obj: str, id_col: int, node: dict[str, Any], object_col: int | str | None = None, typed: bool = False
) -> str:
    """The source of one record's dict: ``obj``'s attributes, then ``node``'s entries (see ``record_columns``).

    The parent of a polymorphic relationship is typed ``Name``, as Salesforce's REST API answers it; its url
    names the record's own object (``/sobjects/Account/001...``): ``object_col``, or the column it numbers. ``typed``:
    the record is typed with that object instead (a TYPEOF's ELSE branch).
    """
    if object_col is None or isinstance(object_col, str):
        url = f"{URL_PREFIX}{obj if object_col is None else object_col}/"
        attributes = f"'attributes': {{'type': {obj!r}, 'url': {url!r} + r[{id_col}]}}"
    else:
        url = f"{URL_PREFIX!r} + r[{object_col}] + '/' + r[{id_col}]"
        kind = f"r[{object_col}]" if typed else repr(obj)
        attributes = f"'attributes': {{'type': {kind}, 'url': {url}}}"
    parts = [attributes]
    for key, entry in node.items():
        if isinstance(entry, _TypeOfNode):
            parts.append(f"{key!r}: {_typeof_source(entry)}")
        elif len(entry) == 1:  # a child subquery's place, filled in after the parents are shaped
            parts.append(f"{key!r}: None")
        elif len(entry) == 2:
            parts.append(f"{key!r}: {_convert(entry[1], f'r[{entry[0]}]')}")
        else:
            parent, parent_id, children, parent_object = entry
            inner = _record_source(parent, parent_id, children, parent_object)
            parts.append(f"{key!r}: ({inner} if r[{parent_id}] is not None else None)")
    return "{" + ", ".join(parts) + "}"


def _object_entry(link: _Link, col: Callable[[str], int]) -> int | str | None:
    """How a nested record's url names its object: None (the link's own object), a constant, or a column."""
    if link.object_sql is None:
        return None
    if link.object_sql.startswith("'"):  # one object: a schema name, quoted by name_field
        return link.object_sql[1:-1]
    return col(link.object_sql)


def _typeof_source(entry: _TypeOfNode) -> str:
    """The source of a TYPEOF's parent: the first branch whose type and record the row has, else ELSE's, else None."""
    source = "None"
    if entry.otherwise is not None:
        id_col, object_col, node = entry.otherwise
        inner = _record_source("", id_col, node, object_col, typed=True)
        source = f"({inner} if r[{id_col}] is not None else None)"
    for prefix, obj, id_col, node in reversed(entry.branches):
        inner = _record_source(obj, id_col, node)
        source = f"({inner} if r[{entry.prefix_col}] == {prefix!r} and r[{id_col}] is not None else {source})"
    return source


def _f(v: Any) -> float | None:
    return None if v is None else float(v)


def _i(v: Any) -> int | None:
    return None if v is None else int(v)


def _b(v: Any) -> bool | None:
    return None if v is None else bool(v)


def _fmt_currency(v: Any) -> str | None:
    return None if v is None else ("-" if v < 0 else "") + f"${abs(float(v)):,.2f}"


def _fmt_number(v: Any) -> str | None:
    if v is None:
        return None
    return f"{v:,}" if isinstance(v, int) else f"{float(v):,.3f}".rstrip("0").rstrip(".")


def _fmt_date(v: Any) -> str | None:
    if not isinstance(v, str) or len(v) < 10:
        return v
    return f"{int(v[5:7])}/{int(v[8:10])}/{v[:4]}"


def _fmt_datetime(v: Any) -> str | None:
    if not isinstance(v, str) or len(v) < 16:
        return v
    hour, minute = int(v[11:13]), v[14:16]
    return f"{_fmt_date(v)}, {(hour - 1) % 12 + 1}:{minute} {'AM' if hour < 12 else 'PM'}"


_SHAPER_GLOBALS = {
    "_f": _f,
    "_i": _i,
    "_b": _b,
    "_fmt_currency": _fmt_currency,
    "_fmt_number": _fmt_number,
    "_fmt_date": _fmt_date,
    "_fmt_datetime": _fmt_datetime,
    "__builtins__": {},
}


# A shaper is a pure function of its source: queries of one SELECT list share it. Kept by measured bytes (a select
# list's source, and its code, grow with the query).
@bytes_cache(max_entries=4096, max_bytes=16 * 1024 * 1024)
def _generate_shaper(record_source: str) -> Callable[[list[tuple[Any, ...]]], list[dict[str, Any]]]:
    # The source holds only schema names, validated aliases and repr()'d constants.
    namespace: dict[str, Any] = {}
    exec(f"def shape(rows):\n    return [{record_source} for r in rows]\n", dict(_SHAPER_GLOBALS), namespace)
    return namespace["shape"]


#: Most conditions joined in one run of ANDs or ORs of the SQL; a longer run is grouped in parentheses.
_RUN = 256


def _joined(op: str, parts: list[str]) -> str:
    """``(a OP b OP ...)``; past :data:`_RUN` parts, runs of that many each in parentheses.

    SQLite parses ``a OR b OR c`` as ``(a OR b) OR c``: its expression tree is as deep as the run is long, and
    past 1,000 it refuses the statement ("Expression tree is too large"). Runs of 256 keep it a few hundred
    deep for every run a 100,000-character statement can hold. A shorter run is joined as it always was.
    """
    if len(parts) > _RUN:
        parts = ["(" + op.join(parts[i : i + _RUN]) + ")" for i in range(0, len(parts), _RUN)]
    return "(" + op.join(parts) + ")"


def _no_records(rows: list[tuple[Any, ...]]) -> list[dict[str, Any]]:
    return []
