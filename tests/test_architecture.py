"""The layers import only downward: schema -> datagen -> org -> tools -> tasks -> users -> envs -> wrappers -> chat ->
policies -> eval (and rl) -> integrations (the LLM-trainer adapters), with cli on top."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "crmarena_gym"
# Rank of each subpackage; a module may import only subpackages of lower or equal rank (its own peers
# of equal rank excepted: eval and rl are independent of each other).
RANK = {
    "schema": 0,
    "datagen": 1,
    "org": 2,
    "tools": 3,
    "tasks": 4,
    "users": 5,
    "envs": 6,
    "wrappers": 7,
    "chat": 8,
    "policies": 9,
    "eval": 10,
    "rl": 10,
    "integrations": 11,
    "cli": 12,
}


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):  # lazy imports inside functions count too
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
    return found


def _modules() -> list[tuple[str, Path]]:
    return [
        (path.relative_to(PACKAGE).parts[0], path)
        for path in sorted(PACKAGE.rglob("*.py"))
        if len(path.relative_to(PACKAGE).parts) > 1
    ]


def test_every_subpackage_has_a_rank() -> None:
    subpackages = {p.name for p in PACKAGE.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert subpackages <= set(RANK), subpackages - set(RANK)


@pytest.mark.parametrize(
    ("layer", "path"), _modules(), ids=lambda v: str(v.relative_to(PACKAGE)) if isinstance(v, Path) else v
)
def test_no_upward_imports(layer: str, path: Path) -> None:
    for module in _imports(path):
        parts = module.split(".")
        if parts[0] != "crmarena_gym" or len(parts) < 2 or parts[1] not in RANK:
            continue
        target = parts[1]
        if target == layer:
            continue
        assert RANK[target] < RANK[layer], f"{path.relative_to(PACKAGE)} ({layer}) imports {module} ({target})"


@pytest.mark.parametrize(
    "name",
    ["_console.py", "_files.py", "_json.py", "_llm.py", "_memory.py", "_net.py", "_secrets.py", "_signals.py"],
)
def test_shared_utilities_import_no_layer(name: str) -> None:
    layers = {m.split(".")[1] for m in _imports(PACKAGE / name) if m.startswith("crmarena_gym.")}
    assert not layers & set(RANK), f"{name} sits below every layer but imports {layers & set(RANK)}"
