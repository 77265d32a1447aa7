from __future__ import annotations

import datetime as dt

import pytest

from crmarena_gym.tools import to_argument_datetime
from crmarena_gym.tools._common import ToolInputError


def test_stored_values_become_tool_arguments() -> None:
    assert to_argument_datetime("2020-12-22T11:03:45.000+0000") == "2020-12-22T11:03:45Z"
    assert to_argument_datetime(" 2024-02-29 ") == "2024-02-29T00:00:00Z"
    assert to_argument_datetime(dt.date(2021, 1, 5)) == "2021-01-05T00:00:00Z"
    assert to_argument_datetime(dt.datetime(2021, 1, 5, 7, 8, 9)) == "2021-01-05T07:08:09Z"
    with pytest.raises(ToolInputError, match="'yesterday'"):
        to_argument_datetime("yesterday")
