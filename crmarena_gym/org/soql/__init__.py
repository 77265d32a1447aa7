"""The SOQL engine of the embedded org: a lark grammar, a parser, a compiler to SQLite and date literals.

Example:
    >>> from crmarena_gym.org.soql import Catalog, compile_query, parse
    >>> text = "SELECT Id FROM Case WHERE Status = 'Closed' LIMIT 5"
    >>> plan = compile_query(text, parse(text), Catalog.full())
    >>> plan.params
    ('Closed', 5)
"""

from __future__ import annotations

from crmarena_gym.org.soql._bounds import (
    MAX_NESTING,
    MAX_STATEMENT_CHARS,
    MAX_STRING_CHARS,
    check_statement,
    too_long,
)
from crmarena_gym.org.soql._compiler import (
    AGGREGATES,
    DATE_FUNCTIONS,
    FIELDS_LIMIT,
    MAX_CHILD_LEVELS,
    MAX_CHILD_SUBQUERIES,
    MAX_OFFSET,
    SQL_FUNCTIONS,
    URL_PREFIX,
    Catalog,
    ChildPlan,
    Origin,
    Plan,
    RelativeParam,
    canonical_id,
    compile_query,
)
from crmarena_gym.org.soql._dates import (
    RELATIVE_LITERALS,
    RELATIVE_LITERALS_WITH_N,
    parse_date,
    parse_datetime,
    relative_range,
)
from crmarena_gym.org.soql._errors import SoqlError, positioned_message
from crmarena_gym.org.soql._grammar import SOQL_GRAMMAR
from crmarena_gym.org.soql._parser import decode_string, number_value, parse
from crmarena_gym.org.soql._shapes import DERIVATIONS, Lifted, PlanTemplate, compile_shaped, lift

__all__ = [
    "AGGREGATES",
    "DATE_FUNCTIONS",
    "DERIVATIONS",
    "FIELDS_LIMIT",
    "MAX_CHILD_LEVELS",
    "MAX_CHILD_SUBQUERIES",
    "MAX_NESTING",
    "MAX_OFFSET",
    "MAX_STATEMENT_CHARS",
    "MAX_STRING_CHARS",
    "RELATIVE_LITERALS",
    "RELATIVE_LITERALS_WITH_N",
    "SOQL_GRAMMAR",
    "SQL_FUNCTIONS",
    "URL_PREFIX",
    "Catalog",
    "ChildPlan",
    "Lifted",
    "Origin",
    "Plan",
    "PlanTemplate",
    "RelativeParam",
    "SoqlError",
    "canonical_id",
    "check_statement",
    "compile_query",
    "compile_shaped",
    "decode_string",
    "lift",
    "number_value",
    "parse",
    "parse_date",
    "parse_datetime",
    "positioned_message",
    "relative_range",
    "too_long",
]
