from __future__ import annotations

import datetime as dt
import re

import pytest

from crmarena_gym.schema import make_id
from crmarena_gym.tools import to_argument_datetime
from crmarena_gym.tools._common import (
    DATETIME_FORMAT,
    ToolInputError,
    format_datetime,
    is_id_of,
    parse_datetime_argument,
    require_id,
    require_ids,
)


def test_stored_values_become_tool_arguments() -> None:
    assert to_argument_datetime("2020-12-22T11:03:45.000+0000") == "2020-12-22T11:03:45Z"
    assert to_argument_datetime(" 2024-02-29 ") == "2024-02-29T00:00:00Z"
    assert to_argument_datetime(dt.date(2021, 1, 5)) == "2021-01-05T00:00:00Z"
    assert to_argument_datetime(dt.datetime(2021, 1, 5, 7, 8, 9)) == "2021-01-05T07:08:09Z"
    with pytest.raises(ToolInputError, match="'yesterday'"):
        to_argument_datetime("yesterday")


def test_ids_are_checked_once_and_the_failing_item_is_named() -> None:
    agents = [make_id("005", n) for n in range(1, 4)]
    assert require_ids([*agents, agents[0]], "agent_ids", "User") == agents  # repeats dropped, order kept
    for bad, what in [
        (make_id("500", 1), "must be a User id (prefix 005), got a Case id"),
        (agents[0][:-1] + "X", "must be a 15- or 18-character Salesforce id"),
        ("x" * 10_000, "must be a 15- or 18-character Salesforce id, got 'xxx"),
        (7, "must be a 15- or 18-character Salesforce id, got 7"),
    ]:
        assert not is_id_of(bad, "User")
        with pytest.raises(ToolInputError) as raised:
            require_ids([*agents, bad], "agent_ids", "User")
        assert str(raised.value).startswith(f"agent_ids item 3 {what}")
        with pytest.raises(ToolInputError, match="^" + re.escape(f"agent_id {what}")):
            require_id(bad, "agent_id", "User")
    assert is_id_of(agents[0], "User") and is_id_of(agents[0]) and not is_id_of(agents[0], "Case")


def test_datetime_arguments_read_and_write_as_strptime_and_strftime_do() -> None:
    for text in ["2024-02-29T23:59:59Z", "1999-01-01T00:00:00Z", "2023-12-31T12:00:00Z"]:
        assert parse_datetime_argument(text, "end_date") == dt.datetime.strptime(text, DATETIME_FORMAT)
        assert format_datetime(parse_datetime_argument(text, "end_date")) == text
    for bad in ["2023-02-29T00:00:00Z", "2023-01-01T00:00:00Z\n", "2023-01-01", "2023-01-01T00:00:00Z" * 100]:
        with pytest.raises(ToolInputError, match=r"^end_date must be a UTC datetime"):
            parse_datetime_argument(bad, "end_date")
    moment = dt.datetime(2021, 3, 4, 5, 6, 7, 891011)
    assert format_datetime(moment) == moment.strftime(DATETIME_FORMAT) == "2021-03-04T05:06:07Z"
    aware = dt.datetime(2021, 3, 4, 5, 6, 7, tzinfo=dt.UTC)
    assert format_datetime(aware) == aware.strftime(DATETIME_FORMAT)
