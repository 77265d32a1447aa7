"""The task-specific query functions: each reads the org through ``org.query`` or ``org.search``.

They build the same kind of SOQL and SOSL the original's functions send (aggregates, ``GROUP BY``,
``HAVING``, child-to-parent paths, unquoted datetime literals), so running them exercises the query
engine the way an agent's calls do. Windows follow the original benchmark: history rows and issue
counts include both ends; case rows (:func:`get_cases`) include the start and exclude the end.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from crmarena_gym.org import SOSL_RESERVED_CHARACTERS, Org, sosl_escape_refused
from crmarena_gym.tools._common import (
    ToolInputError,
    are_ids_of,
    is_id_of,
    parse_date_argument,
    parse_datetime_argument,
    require_fields,
    require_id,
    require_ids,
    soql_datetime,
    soql_in,
    soql_string,
)
from crmarena_gym.tools._tool import tool_function

__all__ = [
    "get_account_id_by_contact_id",
    "get_agent_handled_cases_by_period",
    "get_agent_transferred_cases_by_period",
    "get_cases",
    "get_email_messages_by_case_id",
    "get_issue_counts",
    "get_issues",
    "get_livechat_transcript_by_case_id",
    "get_non_transferred_case_ids",
    "get_order_item_ids_by_product",
    "get_purchase_history",
    "search_knowledge_articles",
    "search_products",
    "sosl_escape",
]

_OWNER_ASSIGNMENT = "Field__c = 'Owner Assignment'"


def sosl_escape(term: str) -> str:
    """A search term with every one of SOSL's reserved characters escaped: wildcards, quotes and parentheses
    become plain characters. The words AND, OR and AND NOT remain operators (quote them to search for them).

    Example:
        >>> print(sosl_escape("men's trail-runner (v2)"))
        men\\'s trail\\-runner \\(v2\\)
    """
    return "".join("\\" + ch if ch in SOSL_RESERVED_CHARACTERS else ch for ch in term)


def _window(start_date: str, end_date: str) -> tuple[str, str]:
    """The two datetime arguments as SOQL literals, checked and in order."""
    start = parse_datetime_argument(start_date, "start_date")
    end = parse_datetime_argument(end_date, "end_date")
    if start > end:
        raise ToolInputError(f"start_date {start_date!r} is after end_date {end_date!r}")
    return soql_datetime(start), soql_datetime(end)


def _key(record_id: str) -> str:
    """The 15-character form of an id: the org answers with 18 characters whatever it was asked with."""
    return record_id[:15]


def _records(org: Org, soql: str) -> list[dict[str, Any]]:
    return list(org.query(soql)["records"])


def _count_by(org: Org, soql: str, key: str) -> dict[str, int]:
    """``{key value: cnt}`` from an aggregate query that groups by ``key`` and counts as ``cnt``."""
    counts = {r[key]: int(r["cnt"]) for r in _records(org, soql) if r.get(key) is not None}
    return dict(sorted(counts.items()))


@tool_function(kind="query", dependency="independent")
def get_agent_handled_cases_by_period(org: Org, start_date: str, end_date: str) -> dict[str, int]:
    """Count the cases each agent handled in a window: every owner assignment to the agent counts,
    transfers in included.

    Args:
        org: The org to read.
        start_date: Start of the window, YYYY-MM-DDTHH:MM:SSZ (inclusive).
        end_date: End of the window, YYYY-MM-DDTHH:MM:SSZ (inclusive).

    Returns:
        ``{agent User id: number of 'Owner Assignment' history rows naming the agent as the new
        owner, created within the window}``, sorted by agent id.
    """
    start, end = _window(start_date, end_date)
    soql = (
        "SELECT NewValue__c, COUNT(Id) cnt FROM CaseHistory__c"
        f" WHERE {_OWNER_ASSIGNMENT} AND CreatedDate >= {start} AND CreatedDate <= {end}"
        " GROUP BY NewValue__c"
    )
    return _count_by(org, soql, "NewValue__c")


@tool_function(kind="query", dependency="independent")
def get_non_transferred_case_ids(org: Org, start_date: str, end_date: str) -> list[str]:
    """List the cases that were never transferred in a window: those with exactly one owner assignment in it.

    Args:
        org: The org to read.
        start_date: Start of the window, YYYY-MM-DDTHH:MM:SSZ (inclusive).
        end_date: End of the window, YYYY-MM-DDTHH:MM:SSZ (inclusive).

    Returns:
        The Case ids with exactly one 'Owner Assignment' history row created within the window,
        sorted.
    """
    start, end = _window(start_date, end_date)
    soql = (
        "SELECT CaseId__c FROM CaseHistory__c"
        f" WHERE {_OWNER_ASSIGNMENT} AND CreatedDate >= {start} AND CreatedDate <= {end}"
        " GROUP BY CaseId__c HAVING COUNT(Id) = 1"
    )
    return sorted(r["CaseId__c"] for r in _records(org, soql) if r.get("CaseId__c") is not None)


@tool_function(kind="query", dependency="dependent")
def get_agent_transferred_cases_by_period(
    org: Org, start_date: str, end_date: str, qualified_agent_ids: list[str] | None = None
) -> dict[str, int]:
    """Count the transfers each of the given agents made in a window (agents with none are left out);
    a transfer from agent A to agent B counts for A.

    Args:
        org: The org to read.
        start_date: Start of the window, YYYY-MM-DDTHH:MM:SSZ (inclusive).
        end_date: End of the window, YYYY-MM-DDTHH:MM:SSZ (inclusive).
        qualified_agent_ids: The agent (User) ids to count for, for example the output of
            get_qualified_agent_ids_by_case_count; empty or left out: every agent.

    Returns:
        ``{agent id: transfers out}`` for the given agents that made at least one transfer in the
        window, in the order given (agents without a transfer are left out, as in the original, so
        "the fewest transfers" is the fewest among agents who transferred); for every agent, sorted
        by agent id, when no agent is given (the original's "no filter"). A transfer is an 'Owner
        Assignment' history row whose previous owner (OldValue__c) is the agent; the first
        assignment of a case has no previous owner and is not a transfer.
    """
    start, end = _window(start_date, end_date)
    agents = require_ids(qualified_agent_ids or [], "qualified_agent_ids", "User")
    only = f" AND OldValue__c IN {soql_in(agents)}" if agents else ""
    soql = (
        "SELECT OldValue__c, COUNT(Id) cnt FROM CaseHistory__c"
        f" WHERE {_OWNER_ASSIGNMENT} AND OldValue__c != NULL{only}"
        f" AND CreatedDate >= {start} AND CreatedDate <= {end}"
        " GROUP BY OldValue__c"
    )
    counted = _count_by(org, soql, "OldValue__c")
    if not agents:
        return counted
    counts = {_key(agent): n for agent, n in counted.items()}
    return {agent: counts[_key(agent)] for agent in agents if _key(agent) in counts}


def _in_filter(field: str, values: list[str] | None, name: str, object_name: str | None) -> str | None:
    """``field IN (...)``; None when the filter is not given or empty (the original's "no filter")."""
    if not values:
        return None
    ids = list(dict.fromkeys(values)) if object_name is None else require_ids(values, name, object_name)
    return f"{field} IN {soql_in(ids)}"


@tool_function(kind="query", dependency="dependent")
def get_cases(
    org: Org,
    start_date: str | None = None,
    end_date: str | None = None,
    agent_ids: list[str] | None = None,
    case_ids: list[str] | None = None,
    order_item_ids: list[str] | None = None,
    issue_ids: list[str] | None = None,
    statuses: list[str] | None = None,
) -> list[dict[str, Any]]:
    """Fetch the cases matching every given filter (at least one filter is required), with OwnerId,
    CreatedDate, ClosedDate and AccountId.

    Args:
        org: The org to read.
        start_date: Only cases created at or after this moment, YYYY-MM-DDTHH:MM:SSZ (inclusive).
        end_date: Only cases created before this moment, YYYY-MM-DDTHH:MM:SSZ (exclusive).
        agent_ids: Only cases owned by one of these agents (User ids).
        case_ids: Only these cases (Case ids).
        order_item_ids: Only cases about one of these order items (OrderItem ids).
        issue_ids: Only cases filed under one of these issues (Issue__c ids).
        statuses: Only cases in one of these statuses, for example ["Closed"].

    Returns:
        Case records ``{"OwnerId", "CreatedDate", "ClosedDate", "AccountId"}`` in the org's order.
        A filter given as an empty list (``agent_ids=[]``) is no filter, as in the original.
    """
    conditions: list[str | None] = []
    start = parse_datetime_argument(start_date, "start_date") if start_date is not None else None
    end = parse_datetime_argument(end_date, "end_date") if end_date is not None else None
    if start is not None and end is not None and start > end:
        raise ToolInputError(f"start_date {start_date!r} is after end_date {end_date!r}")
    conditions.append(f"CreatedDate >= {soql_datetime(start)}" if start is not None else None)
    conditions.append(f"CreatedDate < {soql_datetime(end)}" if end is not None else None)
    conditions.append(_in_filter("OwnerId", agent_ids, "agent_ids", "User"))
    conditions.append(_in_filter("Id", case_ids, "case_ids", "Case"))
    conditions.append(_in_filter("OrderItemId__c", order_item_ids, "order_item_ids", "OrderItem"))
    conditions.append(_in_filter("IssueId__c", issue_ids, "issue_ids", "Issue__c"))
    conditions.append(_in_filter("Status", statuses, "statuses", None))
    given = [c for c in conditions if c is not None]
    if not given:
        raise ToolInputError(
            "get_cases needs at least one filter: start_date, end_date, or a non-empty agent_ids, case_ids, "
            "order_item_ids, issue_ids or statuses"
        )
    soql = "SELECT OwnerId, CreatedDate, ClosedDate, AccountId FROM Case WHERE " + " AND ".join(given)
    return [
        {
            "OwnerId": r.get("OwnerId"),
            "CreatedDate": r.get("CreatedDate"),
            "ClosedDate": r.get("ClosedDate"),
            "AccountId": r.get("AccountId"),
        }
        for r in org.query(soql)["records"]
    ]


@tool_function(kind="query", dependency="dependent")
def get_shipping_state(org: Org, cases: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Add each case's ShippingState (the state of its customer account) to a list of case records.

    Args:
        org: The org to read.
        cases: Case records, each with an AccountId field (for example the output of get_cases).

    Returns:
        The same records, in the same order, each a copy with ``ShippingState`` added: the
        two-letter state of the account, or null when the case has no account or the account has
        no state.
    """
    require_fields(cases, "cases", ("AccountId",))
    accounts = [c["AccountId"] for c in cases]
    present = [a for a in accounts if a is not None]
    if not are_ids_of(present, "Account"):  # an account's cases come many times over: ids are checked once
        for i, account in enumerate(accounts):
            if account is not None and not is_id_of(account, "Account"):
                require_id(account, f"cases item {i} AccountId", "Account")  # raises, naming the record
    unique = list(dict.fromkeys(present))
    states: dict[str, Any] = {}
    if unique:
        soql = f"SELECT Id, ShippingState FROM Account WHERE Id IN {soql_in(unique)}"
        by_key = {_key(r["Id"]): r.get("ShippingState") for r in _records(org, soql)}
        states = {account: by_key.get(_key(account)) for account in unique}
    return [{**c, "ShippingState": states.get(account)} for c, account in zip(cases, accounts, strict=True)]


@tool_function(kind="query", dependency="independent")
def get_order_item_ids_by_product(org: Org, product_id: str) -> list[str]:
    """List the ids of every order item (purchase line) of a product.

    Args:
        org: The org to read.
        product_id: The product's Product2 id.

    Returns:
        The OrderItem ids, sorted.
    """
    require_id(product_id, "product_id", "Product2")
    soql = f"SELECT Id FROM OrderItem WHERE Product2Id = {soql_string(product_id)}"
    return sorted(r["Id"] for r in _records(org, soql))


@tool_function(kind="query", dependency="dependent")
def get_issue_counts(org: Org, start_date: str, end_date: str, order_item_ids: list[str]) -> dict[str, int]:
    """Count the cases per issue in a window among the cases about the given order items.

    Args:
        org: The org to read.
        start_date: Start of the window on the case's CreatedDate, YYYY-MM-DDTHH:MM:SSZ (inclusive).
        end_date: End of the window on the case's CreatedDate, YYYY-MM-DDTHH:MM:SSZ (inclusive).
        order_item_ids: The OrderItem ids the cases must be about, for example the output of
            get_order_item_ids_by_product.

    Returns:
        ``{Issue__c id: number of cases}`` for the issues that have cases, the most reported first
        (ties by issue id), as the original orders them; ``{}`` when no case matches.
    """
    start, end = _window(start_date, end_date)
    items = require_ids(order_item_ids, "order_item_ids", "OrderItem")
    if not items:
        return {}
    soql = (
        "SELECT IssueId__c, COUNT(Id) cnt FROM Case"
        f" WHERE CreatedDate >= {start} AND CreatedDate <= {end} AND OrderItemId__c IN {soql_in(items)}"
        " GROUP BY IssueId__c"
    )
    counts = _count_by(org, soql, "IssueId__c")
    return dict(sorted(counts.items(), key=lambda item: -item[1]))  # a stable sort: ties stay by id


@tool_function(kind="query", dependency="independent")
def get_account_id_by_contact_id(org: Org, contact_id: str) -> str | list[str] | None:
    """Look up the customer account (AccountId) that a contact belongs to.

    Args:
        org: The org to read.
        contact_id: The Contact id.

    Returns:
        The Account id, or None when the contact has no account; ``[]`` when no contact has that
        id (the original's answer: the empty list of records).
    """
    require_id(contact_id, "contact_id", "Contact")
    rows = _records(org, f"SELECT AccountId FROM Contact WHERE Id = {soql_string(contact_id)}")
    return rows[0].get("AccountId") if rows else []


@tool_function(kind="query", dependency="dependent")
def get_purchase_history(org: Org, account_id: str, purchase_date: str, related_product_ids: list[str]) -> list[str]:
    """List which of the given products an account bought on a given day (activated orders only).

    Args:
        org: The org to read.
        account_id: The customer's Account id, for example the output of get_account_id_by_contact_id.
        purchase_date: The day of the purchase, YYYY-MM-DD or YYYY-MM-DDTHH:MM:SSZ (only the date part counts).
        related_product_ids: The candidate Product2 ids, for example the output of search_products.

    Returns:
        The Product2 ids among ``related_product_ids`` on an order item of an 'Activated' order of
        the account whose EffectiveDate is that day, sorted and without repeats.
    """
    require_id(account_id, "account_id", "Account")
    day = parse_date_argument(purchase_date, "purchase_date")
    products = require_ids(related_product_ids, "related_product_ids", "Product2")
    if not products:
        return []
    soql = (
        "SELECT Product2Id FROM OrderItem"
        f" WHERE Order.AccountId = {soql_string(account_id)} AND Order.EffectiveDate = {day.isoformat()}"
        f" AND Order.Status = 'Activated' AND Product2Id IN {soql_in(products)}"
    )
    return sorted({r["Product2Id"] for r in _records(org, soql) if r.get("Product2Id") is not None})


def _search_term(term: str) -> str:
    """The term as the original writes it into ``FIND {...}``: operators, wildcards, phrases and groups
    as written; only the reserved characters Salesforce would refuse are escaped."""
    text = term.strip()
    if not text:
        raise ToolInputError(f"search_term must contain words to search for, got {term!r}")
    return sosl_escape_refused(text)


def _search_records(org: Org, sosl: str) -> list[dict[str, Any]]:
    return list(org.search(sosl).get("searchRecords") or [])


@tool_function(kind="query", dependency="independent")
def search_knowledge_articles(org: Org, search_term: str) -> list[dict[str, Any]]:
    """Search the published knowledge articles (policies, procedures, product FAQs) for a term.

    Args:
        org: The org to read.
        search_term: What to look for in any field of the articles, as a SOSL search term: an article
            matches when it has any of the words (OR between words), the best matches first; AND
            between words or groups needs both, AND NOT leaves out what follows it, parentheses group,
            double quotes find a phrase, * and ? are wildcards inside or at the end of a word. AND, OR
            and AND NOT are operators in any case (and, or): quote them to search for the words.

    Returns:
        ``[{"Id", "Title", "Content"}]`` for the matching online English articles, in the
        search's order (most relevant first); ``Content`` is the article's body (``FAQ_Answer__c``).
        The search is the original's, ``FIND {term} IN ALL FIELDS RETURNING Knowledge__kav(Id, Title,
        FAQ_Answer__c WHERE PublishStatus = 'Online' AND Language = 'en_US')``; a reserved character it
        would refuse is escaped instead.
    """
    sosl = (
        f"FIND {{{_search_term(search_term)}}} IN ALL FIELDS RETURNING Knowledge__kav"
        "(Id, Title, FAQ_Answer__c WHERE PublishStatus = 'Online' AND Language = 'en_US')"
    )
    return [
        {"Id": r.get("Id"), "Title": r.get("Title"), "Content": r.get("FAQ_Answer__c")}
        for r in _search_records(org, sosl)
    ]


@tool_function(kind="query", dependency="independent")
def search_products(org: Org, search_term: str) -> list[str]:
    """Search the products (names and descriptions) for a term and return the ids of the matching products.

    Args:
        org: The org to read.
        search_term: What to look for in any field of the products, as a SOSL search term: every word
            must appear (AND between words); OR between words or groups takes either, AND NOT leaves
            out what follows it, parentheses group, double quotes find a phrase, * and ? are wildcards
            inside or at the end of a word. AND, OR and AND NOT are operators in any case (and, or):
            quote them to search for the words.

    Returns:
        The matching Product2 ids, in the search's order (most relevant first). The search is the
        original's, ``FIND {term} IN ALL FIELDS RETURNING Product2(Id, Name, Description)``; a reserved
        character it would refuse (``'``, ``-``, ``&``, ...) is escaped instead.
    """
    sosl = f"FIND {{{_search_term(search_term)}}} IN ALL FIELDS RETURNING Product2(Id, Name, Description)"
    return [r["Id"] for r in _search_records(org, sosl) if r.get("Id") is not None]


@tool_function(kind="query", dependency="independent")
def get_issues(org: Org) -> list[dict[str, Any]]:
    """List every issue type that cases are filed under, with its Id and Name.

    Args:
        org: The org to read.

    Returns:
        ``[{"Id", "Name"}]`` for every Issue__c record, in the org's order (as the original lists them).
    """
    return [{"Id": r.get("Id"), "Name": r.get("Name")} for r in _records(org, "SELECT Id, Name FROM Issue__c")]


def _by_case(org: Org, case_id: str, fields: Iterable[str], obj: str, parent: str, order: str) -> list[dict[str, Any]]:
    require_id(case_id, "case_id", "Case")
    names = list(fields)
    rows = _records(org, f"SELECT {', '.join(names)} FROM {obj} WHERE {parent} = {soql_string(case_id)}")
    return sorted(({f: r.get(f) for f in names} for r in rows), key=lambda r: r[order] or "")


@tool_function(kind="query", dependency="independent")
def get_livechat_transcript_by_case_id(org: Org, case_id: str) -> list[dict[str, Any]]:
    """Fetch the live chat transcripts of a case, with the full chat text.

    Args:
        org: The org to read.
        case_id: The Case id.

    Returns:
        ``[{"Body", "EndTime"}]``, oldest chat first; ``[]`` when the case had no chat.
    """
    return _by_case(org, case_id, ("Body", "EndTime"), "LiveChatTranscript", "CaseId", "EndTime")


@tool_function(kind="query", dependency="independent")
def get_email_messages_by_case_id(org: Org, case_id: str) -> list[dict[str, Any]]:
    """Fetch the emails exchanged about a case.

    Args:
        org: The org to read.
        case_id: The Case id.

    Returns:
        ``[{"Subject", "TextBody", "FromAddress", "ToAddress", "MessageDate"}]``, oldest first;
        ``[]`` when the case has no email.
    """
    fields = ("Subject", "TextBody", "FromAddress", "ToAddress", "MessageDate")
    return _by_case(org, case_id, fields, "EmailMessage", "ParentId", "MessageDate")
