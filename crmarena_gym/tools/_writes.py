"""The record tools of act mode: read, create, update and delete a record, as a Salesforce user can through the
REST API.

They write to the episode's :class:`~crmarena_gym.org.OrgSession` (the one implementation of Salesforce's
write semantics, which the served org uses too): required fields, restricted picklists, references,
read-only fields and lengths are checked, and a refusal answers ``Error: CODE: message`` as the REST API
answers ``errorCode`` and ``message``. On an org that is not a session (a read-only embedded org, or a
live org an environment must not change) they refuse, saying so: an environment gives them only to
episodes that own a session (act mode). ``get_record`` reads the record a change is about (the new case a task
sets up), so that a toolset without queries (``functions``) can read it: no task function does.
"""

from __future__ import annotations

from typing import Any

from crmarena_gym.org import Org, OrgSession
from crmarena_gym.tools._common import ToolInputError
from crmarena_gym.tools._tool import tool_function

__all__ = ["WRITE_TOOL_NAMES", "create_record", "delete_record", "get_record", "update_record"]


def _session(org: Org) -> OrgSession:
    if not isinstance(org, OrgSession):
        raise ToolInputError(
            "this org is read-only: the write tools need an episode's own session (an act-mode environment)"
        )
    return org


def _fields(fields: dict[str, Any], name: str) -> dict[str, Any]:
    if not fields:
        raise ToolInputError(f'{name}() needs at least one field in \'fields\', e.g. {{"Status": "Closed"}}')
    return fields


@tool_function(kind="write", dependency="independent")
def get_record(org: Org, sobject: str, record_id: str, fields: list[str] | None = None) -> dict[str, Any]:
    """Read one record by its Id: every field, or only those listed.

    Args:
        sobject: The object's API name, e.g. "Case".
        record_id: The record's Id.
        fields: The fields to read by API name, e.g. ["Subject", "Description"]; every field when omitted.

    Returns:
        The record's field values by API name, with its "attributes" (type and url), as a query's record.
    """
    return _session(org).get(sobject, record_id, fields or None)


@tool_function(kind="write", dependency="independent")
def create_record(org: Org, sobject: str, fields: dict[str, Any]) -> dict[str, Any]:
    """Create a record of an object with the given field values.

    Args:
        sobject: The object's API name, e.g. "Case" or "Task".
        fields: The new record's field values by API name, e.g. {"Subject": "Call back", "WhatId": "006..."}.

    Returns:
        The new record's id: {"id": "...", "success": true}.
    """
    new_id = _session(org).create(sobject, _fields(fields, "create_record"))
    return {"id": new_id, "success": True}


@tool_function(kind="write", dependency="independent")
def update_record(org: Org, sobject: str, record_id: str, fields: dict[str, Any]) -> dict[str, Any]:
    """Change field values of one record (a null value clears the field).

    Args:
        sobject: The object's API name, e.g. "Case".
        record_id: The record's Id.
        fields: The fields to change by API name, e.g. {"OwnerId": "005..."}.

    Returns:
        {"id": record_id, "success": true}.
    """
    _session(org).update(sobject, record_id, _fields(fields, "update_record"))
    return {"id": record_id, "success": True}


@tool_function(kind="write", dependency="independent")
def delete_record(org: Org, sobject: str, record_id: str) -> dict[str, Any]:
    """Delete one record (it goes to the recycle bin; related records follow Salesforce's rules).

    Args:
        sobject: The object's API name, e.g. "Task".
        record_id: The record's Id.

    Returns:
        {"id": record_id, "success": true}.
    """
    _session(org).delete(sobject, record_id)
    return {"id": record_id, "success": True}


#: The record tools' names, in the order a toolset lists them.
WRITE_TOOL_NAMES: tuple[str, ...] = ("get_record", "create_record", "update_record", "delete_record")
