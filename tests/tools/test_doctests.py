"""The examples in the tools' docstrings run as written."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = [
    "crmarena_gym.tools",
    "crmarena_gym.tools._calculations",
    "crmarena_gym.tools._common",
    "crmarena_gym.tools._general",
    "crmarena_gym.tools._queries",
    "crmarena_gym.tools._signature",
    "crmarena_gym.tools._tool",
    "crmarena_gym.tools._toolset",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    result = doctest.testmod(importlib.import_module(name))
    assert result.failed == 0
