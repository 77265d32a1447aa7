"""The SOQL grammar, for lark's LALR parser.

The text lives in a Python module so that the package needs no data files. Keywords are
case-insensitive, as in SOQL. ``AND`` and ``OR`` cannot be mixed at one level without parentheses:
the grammar has no rule for it, so ``a AND b OR c`` fails at ``OR``, as Salesforce's parser does.
Relative date literals (``TODAY``, ``LAST_N_DAYS:7``) parse as names with an optional ``:n`` and are
checked later, so that an unknown one is reported by name.

Each optional clause of ``select`` is a rule of its own (``_where: [where_clause]``), inlined into the
tree: written as ten ``[...]`` in one rule, lark expands them into 1,024 alternatives (1,116 rules, close
to a second of CPU to build in every process); as separate rules the same language takes 113 rules and the
tree keeps one child, or ``None``, per clause.
"""

from __future__ import annotations

SOQL_GRAMMAR = r"""
start: select

select: SELECT select_list FROM from_name _alias _using _where _with _group _having _order _limit _offset _for
_alias: [NAME]
_using: [using_clause]
_where: [where_clause]
_with: [with_clause]
_group: [group_clause]
_having: [having_clause]
_order: [order_clause]
_limit: [limit_clause]
_offset: [offset_clause]
_for: [for_clause]

select_list: select_item ("," select_item)*
select_item: expr [NAME]             -> item
           | LPAR select RPAR        -> child_subquery
           | TYPEOF NAME typeof_when+ [ELSE field_list] END -> typeof
typeof_when: WHEN NAME THEN field_list
field_list: field ("," field)*

from_name: NAME ["." NAME]
using_clause: USING SCOPE NAME
with_clause: WITH NAME
for_clause: FOR (VIEW | REFERENCE)

?expr: field | func
field: NAME ("." NAME)*
func: NAME LPAR [expr] RPAR

where_clause: WHERE condition
having_clause: HAVING condition
group_clause: GROUP BY expr ("," expr)*
            | GROUP BY (ROLLUP | CUBE) LPAR expr ("," expr)* RPAR -> group_sets
order_clause: ORDER BY order_item ("," order_item)*
order_item: expr [ASC | DESC] [NULLS (FIRST | LAST)]
limit_clause: LIMIT INT
offset_clause: OFFSET INT

?condition: unary | and_cond | or_cond
and_cond: unary (AND unary)+
or_cond: unary (OR unary)+
?unary: not_cond | LPAR condition RPAR -> paren | predicate
not_cond: NOT unary

?predicate: expr OP literal            -> compare
          | expr LIKE literal          -> like
          | expr [NOT] IN LPAR in_body RPAR -> in_
          | expr (INCLUDES | EXCLUDES) LPAR literal ("," literal)* RPAR -> includes

?in_body: literal ("," literal)*       -> in_values
        | select                       -> in_select

literal: STRING | NUMBER | DATETIME | DATE | TRUE | FALSE | NULL | date_literal
date_literal: NAME [COLON INT]

SELECT: "SELECT"i
TYPEOF: "TYPEOF"i
WHEN: "WHEN"i
THEN: "THEN"i
ELSE: "ELSE"i
END: "END"i
USING: "USING"i
SCOPE: "SCOPE"i
WITH: "WITH"i
FOR: "FOR"i
VIEW: "VIEW"i
REFERENCE: "REFERENCE"i
ROLLUP: "ROLLUP"i
CUBE: "CUBE"i
FROM: "FROM"i
WHERE: "WHERE"i
HAVING: "HAVING"i
GROUP: "GROUP"i
ORDER: "ORDER"i
BY: "BY"i
ASC: "ASC"i
DESC: "DESC"i
NULLS: "NULLS"i
FIRST: "FIRST"i
LAST: "LAST"i
LIMIT: "LIMIT"i
OFFSET: "OFFSET"i
AND: "AND"i
OR: "OR"i
NOT: "NOT"i
IN: "IN"i
LIKE: "LIKE"i
INCLUDES: "INCLUDES"i
EXCLUDES: "EXCLUDES"i
TRUE: "TRUE"i
FALSE: "FALSE"i
NULL: "NULL"i
LPAR: "("
RPAR: ")"
COLON: ":"

OP: "=" | "!=" | "<>" | "<=" | ">=" | "<" | ">"
NAME: /[A-Za-z_][A-Za-z0-9_]*/i
DATETIME.4: /\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:?\d{2})/i
DATE.3: /\d{4}-\d{2}-\d{2}/
NUMBER.2: /[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?/
INT: /\d+/
STRING: /'(?:[^'\\]|\\.)*'/s

%ignore /\s+/
"""
