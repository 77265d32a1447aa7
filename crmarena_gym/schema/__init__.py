"""The objects of every org kind, their fields, ids and SQLite layout.

Every other layer (the generator, the query engine, prompts and docs) reads the schema from here. The
module-level lookups (``OBJECTS``, ``get_object`` ...) are the service org's (CRMArena's 16 objects); an
:class:`OrgSchema` (``org_schema("b2b")``) answers the same questions for any org kind.

Example:
    >>> from crmarena_gym.schema import get_object
    >>> get_object("Case").get_relationship("Owner").reference_to
    'User'
"""

from __future__ import annotations

from crmarena_gym.schema._ids import id_checksum, is_valid_id, make_id
from crmarena_gym.schema._kinds import (
    DEFAULT_KIND,
    ORG_KINDS,
    ORG_MAINTAINED,
    OrgSchema,
    SchemaDrift,
    check_kind,
    deprecated_column,
    deprecated_description,
    org_schema,
    replacement_of,
)
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
from crmarena_gym.schema._pro import (
    CONTRACT_STATUSES,
    LEAD_STATUSES,
    OPPORTUNITY_STAGES,
    QUOTE_STATUSES,
    STAGE_PROBABILITY,
    TASK_PRIORITIES,
    TASK_STATUSES,
)
from crmarena_gym.schema._sql import (
    COMPOSITE_INDEXES,
    column_affinity,
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
    "CONTRACT_STATUSES",
    "DEFAULT_KIND",
    "HISTORY_FIELDS",
    "LEAD_STATUSES",
    "OBJECTS",
    "OPPORTUNITY_STAGES",
    "ORDER_STATUSES",
    "ORG_CREATOR_SQL",
    "ORG_KINDS",
    "ORG_MAINTAINED",
    "PUBLISH_STATUSES",
    "QUOTE_STATUSES",
    "STAGE_PROBABILITY",
    "STANDARD_OBJECTS",
    "TASK_PRIORITIES",
    "TASK_STATUSES",
    "Field",
    "FieldType",
    "OrgSchema",
    "SObject",
    "SchemaDrift",
    "check_kind",
    "child_relationships",
    "column_affinity",
    "create_indexes",
    "create_tables",
    "deprecated_column",
    "deprecated_description",
    "get_child_relationship",
    "get_object",
    "id_checksum",
    "index_ddl",
    "is_valid_id",
    "make_id",
    "object_for_id",
    "org_schema",
    "quote_identifier",
    "replacement_of",
    "schema_text",
    "table_ddl",
]
