from __future__ import annotations

from crmarena_gym.envs import render_error, render_query_result, result_rows


def test_rows_drop_attributes_and_all_null_columns() -> None:
    result = {
        "totalSize": 2,
        "done": True,
        "records": [
            {"attributes": {"type": "Case"}, "Id": "500A", "ClosedDate": None, "Owner": {"Name": "Ann"}, "X": None},
            {"attributes": {"type": "Case"}, "Id": "500B", "ClosedDate": "2021-01-01T00:00:00.000+0000", "X": None},
        ],
    }
    assert result_rows(result) == [
        {"Id": "500A", "ClosedDate": None, "Owner": {"Name": "Ann"}},
        {"Id": "500B", "ClosedDate": "2021-01-01T00:00:00.000+0000"},
    ]
    expected = "Salesforce instance output: " + str(result_rows(result))
    assert render_query_result(result) == expected
    assert render_query_result({"totalSize": 7, "records": []}) == "Salesforce instance output: []"
    assert render_query_result({"searchRecords": [{"attributes": {}, "Id": "ka0"}]}, "json") == (
        'Salesforce instance output: [{"Id": "ka0"}]'
    )
    shown = render_error("INVALID_FIELD", "No such column")
    assert shown == "Salesforce instance output: INVALID_FIELD: No such column"
