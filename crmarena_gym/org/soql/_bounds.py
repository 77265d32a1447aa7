"""Bounds on a SOQL statement checked before it is parsed: its length, its nesting, its string literals.

Salesforce refuses a statement longer than 100,000 characters (``MALFORMED_QUERY: SOQL statements can not
be longer than 100000 characters``) and a string longer than 4,000 characters in a WHERE clause (SOQL and
SOSL Limits). It documents no bound on nesting, but a deeply nested statement is refused as too complex
(``QUERY_TOO_COMPLICATED``); ours are refused before the parser and the compiler recurse through them, and
before SQLite's own parser, whose stack holds only a few dozen levels of parenthesised expressions. The
check reads the text once (a regular expression over its string literals, parentheses and ``NOT``s), so
that a hostile statement costs no more than its length.

The number of conditions is bounded by the length alone: the compiler groups a long run of ``AND``s or
``OR``s so that SQLite's expression tree stays shallow (see ``_compiler``), and thousands of conditions are
answered, as Salesforce answers them.
"""

from __future__ import annotations

import re

from crmarena_gym.org.soql._errors import SoqlError, malformed

#: Most characters of a SOQL statement (Salesforce's default).
MAX_STATEMENT_CHARS = 100_000
#: Most characters of a string literal in a WHERE (or HAVING) clause, as its value (after escapes).
MAX_STRING_CHARS = 4_000
#: Most levels of nesting: parentheses (conditions, function calls, IN lists, subqueries) and a run of NOTs.
MAX_NESTING = 16

_TOKENS = re.compile(r"'(?:[^'\\]|\\.)*'|[()]|(?<![A-Za-z0-9_])[Nn][Oo][Tt](?![A-Za-z0-9_])", re.S)
_ESCAPE = re.compile(r"\\u[0-9a-fA-F]{4}|\\.", re.S)


def too_long(text: str) -> SoqlError:
    """Salesforce's refusal of a statement over :data:`MAX_STATEMENT_CHARS`."""
    return malformed(text, None, f"SOQL statements can not be longer than {MAX_STATEMENT_CHARS} characters")


def check_statement(text: str) -> None:
    """Refuse ``text`` if it is longer, more deeply nested or holds a longer string than SOQL allows.

    Raises:
        SoqlError: ``MALFORMED_QUERY`` for a statement over :data:`MAX_STATEMENT_CHARS` characters or a
            string over :data:`MAX_STRING_CHARS`; ``QUERY_TOO_COMPLICATED`` past :data:`MAX_NESTING` levels.

    Example:
        >>> check_statement("SELECT Id FROM Case WHERE (Status = 'New' OR NOT (Priority = 'High'))")
        >>> try:
        ...     check_statement("SELECT Id FROM Case WHERE " + "(" * 20 + "Status = 'New'" + ")" * 20)
        ... except SoqlError as err:
        ...     print(err.code)
        QUERY_TOO_COMPLICATED
    """
    if len(text) > MAX_STATEMENT_CHARS:
        raise too_long(text)
    depth = nots = 0
    after_not = -1  # where the last NOT ended
    for m in _TOKENS.finditer(text):
        token = m.group()
        start = m.start()
        if token == "(":
            depth += 1
            nots = 0
        elif token == ")":
            depth -= 1
            nots = 0
        elif token[0] == "'":
            nots = 0
            body = token[1:-1]
            if len(body) > MAX_STRING_CHARS and len(_ESCAPE.sub("x", body)) > MAX_STRING_CHARS:
                raise malformed(
                    text,
                    start,
                    f"String literal too long: a string in a WHERE clause can't exceed {MAX_STRING_CHARS:,} "
                    f"characters (this one has {len(_ESCAPE.sub('x', body)):,})",
                )
            continue
        else:  # NOT: a run of them nests (NOT NOT x), one after anything else starts a new run
            nots = nots + 1 if text[after_not:start].isspace() else 1
            after_not = m.end()
        if depth + nots > MAX_NESTING:
            raise SoqlError(
                "QUERY_TOO_COMPLICATED",
                f"Query is too complicated: it nests parentheses and NOTs more than {MAX_NESTING} levels deep. "
                "Write the conditions with fewer levels (a long run of ANDs or ORs needs none).",
                text,
                start,
            )
