"""The 16 objects of the CRMArena org, their fields, ids and SQLite layout.

Every other layer (the generator, the query engine, prompts and docs) reads the schema from here.

Example:
    >>> from crmarena_gym.schema import get_object
    >>> get_object("Case").get_relationship("Owner").reference_to
    'User'
"""

from __future__ import annotations

from crmarena_gym.schema._ids import id_checksum, is_valid_id, make_id
from crmarena_gym.schema._objects import (
    CASE_CHANNELS,
    CASE_PRIORITIES,
    CASE_STATUSES,
    HISTORY_FIELDS,
    OBJECTS,
    ORDER_STATUSES,
    ORG_CREATOR_SQL,
    PUBLISH_STATUSES,
    STANDARD_OBJECTS,
    child_relationships,
    get_child_relationship,
    get_object,
    object_for_id,
)
from crmarena_gym.schema._sql import (
    COMPOSITE_INDEXES,
    create_indexes,
    create_tables,
    index_ddl,
    quote_identifier,
    table_ddl,
)
from crmarena_gym.schema._text import schema_text
from crmarena_gym.schema._types import Field, FieldType, SObject

__all__ = [
    "CASE_CHANNELS",
    "CASE_PRIORITIES",
    "CASE_STATUSES",
    "COMPOSITE_INDEXES",
    "HISTORY_FIELDS",
    "OBJECTS",
    "ORDER_STATUSES",
    "ORG_CREATOR_SQL",
    "PUBLISH_STATUSES",
    "STANDARD_OBJECTS",
    "Field",
    "FieldType",
    "SObject",
    "child_relationships",
    "create_indexes",
    "create_tables",
    "get_child_relationship",
    "get_object",
    "id_checksum",
    "index_ddl",
    "is_valid_id",
    "make_id",
    "object_for_id",
    "quote_identifier",
    "schema_text",
    "table_ddl",
]
