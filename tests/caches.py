"""A private cache for the embedded org and task set, for test modules that use the defaults."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest


def private_default_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """``CRMARENA_GYM_CACHE`` as the run set it (CI points it at its work directory), else a temporary one for the
    module; use as ``pytest.fixture(scope="module", autouse=True, name="default_cache")(private_default_cache)``."""
    cache = Path(os.environ["CRMARENA_GYM_CACHE"]) if "CRMARENA_GYM_CACHE" in os.environ else None
    with pytest.MonkeyPatch.context() as mp:
        if cache is None:
            cache = tmp_path_factory.mktemp("cache")
            mp.setenv("CRMARENA_GYM_CACHE", str(cache))
        yield cache
