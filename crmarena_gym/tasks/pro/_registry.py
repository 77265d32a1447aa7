"""The registry of CRMArena-Pro categories: every ``crmarena_gym.tasks.pro.<name>`` module's ``CATEGORY``."""

from __future__ import annotations

import importlib

from crmarena_gym.tasks.pro._category import Category
from crmarena_gym.tasks.pro._spec import PRO_CATEGORY_NAMES, get_pro_spec


def pro_category(key: str) -> Category:
    """The behaviour of a Pro category given its name or abbreviation.

    Raises:
        KeyError: No category is called ``key``.
        NotImplementedError: The category is specified but this version has no generator for it; the message
            says which categories have one.
    """
    spec = get_pro_spec(key)
    try:
        module = importlib.import_module(f"crmarena_gym.tasks.pro.{spec.name}")
    except ModuleNotFoundError as err:
        if err.name != f"crmarena_gym.tasks.pro.{spec.name}":
            raise
        raise NotImplementedError(
            f"CRMArena-Pro category {spec.name!r} has no generator in this version; "
            f"the categories with one: {', '.join(implemented_categories())}"
        ) from None
    category = module.CATEGORY
    if category.name != spec.name:
        raise RuntimeError(f"module crmarena_gym.tasks.pro.{spec.name} defines category {category.name!r}")
    return category


def implemented_categories() -> tuple[str, ...]:
    """The Pro categories whose module exists, in the order of Pro's file."""
    return tuple(name for name in PRO_CATEGORY_NAMES if importlib.util.find_spec(f"crmarena_gym.tasks.pro.{name}"))
