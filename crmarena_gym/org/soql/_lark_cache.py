"""lark's LALR parsers kept in the cache directory, so that a new process loads the tables, not builds them.

Building the SOQL parser's tables takes about 35 ms of CPU in every process (the CLI, each test worker,
each Ray worker, each server); loading them saved takes about 5 ms. A parser is saved in the cache
directory (:func:`~crmarena_gym.org.cache_dir`) under a key that covers everything it is built from: the
grammar's text, the options, lark's version and Python's. The file holds that key in full and the
SHA-256 of the saved tables, and is used only when both agree; a parser of another grammar or another
lark is never loaded, and a damaged, truncated or foreign file is built again and replaced. Files are
written to a temporary name and renamed, so that a process never reads another's half-written file. A
cache that cannot be written (read-only, full) costs only the build.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import pickle
import sys
import tempfile
from pathlib import Path
from typing import Any

import lark

_MAGIC = b"crmarena-gym lark parser 1\n"


def parser_key(grammar: str, options: dict[str, Any]) -> str:
    """The SHA-256 (hex) of all a parser is built from: grammar, options, lark's and Python's versions."""
    source = json.dumps([grammar, sorted(options.items()), lark.__version__, list(sys.version_info[:2])])
    return hashlib.sha256(source.encode("utf-8", "surrogatepass")).hexdigest()


def cached_parser(grammar: str, directory: Path, **options: Any) -> lark.Lark:
    """``lark.Lark(grammar, **options)``, loaded from ``directory`` when saved there, else built and saved.

    Args:
        grammar: The grammar's text.
        directory: Where parsers are kept (created if missing).
        options: lark's options; ``parser`` must be ``"lalr"`` (lark saves only LALR parsers).
    """
    key = parser_key(grammar, options)
    path = directory / f"lark-parser-{key[:16]}.pickle"
    loaded = _load(path, key)
    if loaded is not None:
        return loaded
    parser = lark.Lark(grammar, **options)
    _save(parser, path, key)
    return parser


def _load(path: Path, key: str) -> lark.Lark | None:
    """The parser saved at ``path`` under ``key``, or None (no file, another key, damaged)."""
    try:
        data = path.read_bytes()
    except OSError:
        return None
    head = _MAGIC + key.encode("ascii") + b"\n"
    if not data.startswith(head):
        return None
    digest, _, tables = data[len(head) :].partition(b"\n")
    if digest != hashlib.sha256(tables).hexdigest().encode("ascii"):
        return None
    try:
        return lark.Lark.load(io.BytesIO(tables))
    except Exception:  # tables lark cannot read back: built again by the caller
        return None


def _save(parser: lark.Lark, path: Path, key: str) -> None:
    """Save ``parser`` at ``path`` (atomically); a cache that cannot be written is left as it is."""
    buffer = io.BytesIO()
    try:
        parser.save(buffer)
    except (pickle.PicklingError, TypeError, AttributeError):  # pragma: no cover - lark could not serialise it
        return
    tables = buffer.getvalue()
    data = _MAGIC + key.encode("ascii") + b"\n" + hashlib.sha256(tables).hexdigest().encode("ascii") + b"\n" + tables
    tmp: str | None = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".part", dir=path.parent)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
        tmp = None
    except OSError:
        pass
    finally:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass


__all__ = ["cached_parser", "parser_key"]
