"""Facts about the original benchmark, as its documentation and data state them (independent of our code)."""

from __future__ import annotations

import functools
import json

from tests.conftest import require_shared

#: Record-id key prefixes listed in ORIGINAL.md section 4.
ORIGINAL_PREFIXES = {
    "User": "005",
    "Account": "001",
    "Contact": "003",
    "Case": "500",
    "Order": "801",
    "OrderItem": "802",
    "Product2": "01t",
    "Knowledge__kav": "ka0",
    "Issue__c": "a1M",
    "CaseHistory__c": "a1N",
    "LiveChatTranscript": "570",
    "EmailMessage": "02s",
}


@functools.cache
def original_row_counts() -> dict[str, int]:
    """The original org's row count per table, from the data beside the checkout."""
    sample = json.loads((require_shared() / "org_rows_sample.json").read_text())
    return dict(sample["sqlite_schema_row_counts"])
