"""The ``Org`` interface that every backend implements, and its one error type."""

from __future__ import annotations

import abc
import datetime as dt
from typing import Any

#: Error codes that backends raise, as Salesforce names them.
ERROR_CODES = frozenset(
    {
        "MALFORMED_QUERY",
        "MALFORMED_SEARCH",
        "INVALID_SEARCH",
        "INVALID_FIELD",
        "INVALID_TYPE",
        "INVALID_QUERY_FILTER_OPERATOR",
        "NUMBER_OUTSIDE_VALID_RANGE",
        "NOT_FOUND",
        "QUERY_TIMEOUT",
        "QUERY_TOO_COMPLICATED",
        "INVALID_SESSION_ID",
        "INVALID_LOGIN",
        "REQUEST_LIMIT_EXCEEDED",
        "SERVER_UNAVAILABLE",
        "UNKNOWN_EXCEPTION",
        # Writes (an OrgSession, the served org's REST API)
        "MALFORMED_ID",
        "ENTITY_IS_DELETED",
        "REQUIRED_FIELD_MISSING",
        "INVALID_OR_NULL_FOR_RESTRICTED_PICKLIST",
        "INVALID_FIELD_FOR_INSERT_UPDATE",
        "INVALID_CROSS_REFERENCE_KEY",
        "FIELD_INTEGRITY_EXCEPTION",
        "INVALID_EMAIL_ADDRESS",
        "STRING_TOO_LONG",
        "JSON_PARSER_ERROR",
        "STORAGE_LIMIT_EXCEEDED",
        "INVALID_OPERATION",
    }
)


class OrgError(Exception):
    """A query or search the org refused or could not answer.

    Attributes:
        code: The Salesforce error code, for example ``"MALFORMED_QUERY"``.
        message: Salesforce's wording of the problem, naming the offending token, field or object.

    Example:
        >>> err = OrgError("INVALID_TYPE", "sObject type 'Foo' is not supported.")
        >>> str(err)
        "INVALID_TYPE: sObject type 'Foo' is not supported."
    """

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.code, self.message))


def check_max_records(max_records: object) -> int:
    """``max_records`` if it is a positive integer, else a ValueError that quotes it."""
    if isinstance(max_records, bool) or not isinstance(max_records, int) or max_records < 1:
        raise ValueError(f"max_records must be a positive integer, got {max_records!r}")
    return max_records


class Org(abc.ABC):
    """A Salesforce org that answers SOQL queries and SOSL searches.

    Results have the shape that simple-salesforce's ``query_all`` and ``search`` return, so code
    written against one backend works against every other one.
    """

    @abc.abstractmethod
    def query(self, soql: str) -> dict[str, Any]:
        """Run a SOQL query and return every row.

        Returns:
            ``{"totalSize": int, "done": True, "records": [...]}``; each record carries
            ``attributes`` (``type`` and ``url``), parent relationships as nested records,
            datetimes as ``2020-12-22T11:00:00.000+0000`` and dates as ``2020-12-22``.

        Raises:
            OrgError: The query is malformed, names an unknown object or field, or timed out.
        """

    @abc.abstractmethod
    def search(self, sosl: str) -> dict[str, Any]:
        """Run a SOSL search.

        Returns:
            ``{"searchRecords": [...]}``, records shaped as in :meth:`query`.

        Raises:
            OrgError: The search is malformed or names an unknown object or field.
        """

    def query_head(self, soql: str, max_records: int) -> dict[str, Any]:
        """Run a SOQL query and return only its first ``max_records`` rows, with the count of all.

        For callers that show a bounded part of a result (the environment's observations): the
        embedded org shapes no record beyond the first ``max_records`` and a live org stops fetching
        batches once it has them, so a query matching millions of rows costs what its head costs. This
        default runs :meth:`query` and keeps the head.

        Returns:
            ``{"totalSize": every row's count, "done": whether ``records`` holds every row,
            "records": the first rows}``, records shaped as in :meth:`query`; as Salesforce answers a
            query whose rows do not fit in one batch (without ``nextRecordsUrl``).

        Raises:
            OrgError: As :meth:`query`.
            ValueError: ``max_records`` is not a positive integer.
        """
        check_max_records(max_records)
        result = self.query(soql)
        records = result["records"]
        return {"totalSize": result["totalSize"], "done": len(records) <= max_records, "records": records[:max_records]}

    def describe(self, object_name: str) -> dict[str, Any]:
        """Describe one object as Salesforce's REST ``sobjects/<name>/describe`` does.

        Returns:
            ``{"name", "label", "keyPrefix", "fields": [...], "childRelationships": [...], ...}``.

        Raises:
            OrgError: NOT_FOUND for an object the org does not have.
            NotImplementedError: The backend cannot describe objects.
        """
        raise NotImplementedError(f"{type(self).__name__} cannot describe objects")

    @property
    def today(self) -> dt.date | None:
        """The date that relative date literals (``TODAY``, ``LAST_N_DAYS:n``) resolve against."""
        return None

    def with_today(self, today: dt.date | str | None) -> Org:
        """A view of this org whose relative date literals resolve against ``today``.

        The view shares the backend's resources (connection, caches) with this org, so that many
        environments, each with its own task date, can use one org without copying it.

        Args:
            today: A ``datetime.date``, an ISO date string (``"2023-04-01"``) or None for the
                backend's own notion of today.

        Raises:
            NotImplementedError: The backend cannot move its date (a live org lives in real time).
        """
        raise NotImplementedError(f"{type(self).__name__} cannot resolve dates against a chosen day")

    def declared(self) -> Org:
        """This org as the environment's provided task functions read it: objects and fields by the names
        their kind declares, whatever schema drift renamed.

        A perturbed org's drift (``crmarena_gym.datagen.perturb_org``) renames custom fields and objects and
        migrates standard fields to new custom ones (the standard field stays, emptied) as an admin would;
        the task functions are the org's maintained API, kept working through the change (they query through
        the drift map: a migrated field's declared name reads its replacement's values), while an agent's own
        SOQL and SOSL must use the fields the schema and describe give. An org that has not drifted (and a live
        org, whose drift we cannot know) is its own declared view.
        """
        return self

    def close(self) -> None:  # noqa: B027 - optional hook, a no-op by default
        """Release the backend's resources."""

    def __enter__(self) -> Org:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
