"""One voice for every command: its name before each message, and the same exit codes.

Exit codes (``crmarena-gym --help`` lists them):

- 0: done.
- 1: the command ran and what it was asked failed (the org refused the query, writing failed part-way,
  an experiment's cells stopped).
- 2: refused before doing anything: bad arguments or input (an unknown task, a missing file, a bad spec,
  a run that cannot start).
- 128 + N: stopped by signal N (130 for Ctrl-C); 141 when the reader of the output went away.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TextIO

from crmarena_gym._console import did_you_mean as near_miss

__all__ = ["EXIT_CODES", "FAILED", "PORT_HINT", "REFUSED", "at_least_one", "did_you_mean", "fail"]

FAILED = 1
REFUSED = 2
#: What to do about a port another program holds (every server command says the same).
PORT_HINT = "choose another port with --port, or --port 0 for a free one"
EXIT_CODES = (
    "exit codes: 0 done; 1 ran and failed (a refused query, a failed write); 2 refused before doing anything "
    "(bad arguments or input); 128+N stopped by signal N (130: Ctrl-C)"
)


def fail(command: str, message: str, code: int = REFUSED, file: TextIO | None = None) -> int:
    """Print ``crmarena-gym COMMAND: message`` on standard error (or ``file``); return ``code``.

    Example:
        >>> import io
        >>> err = io.StringIO()
        >>> fail("tasks", "no instance has idx 7", file=err), err.getvalue()
        (2, 'crmarena-gym tasks: no instance has idx 7\\n')
    """
    print(f"crmarena-gym {command}: {message}", file=file or sys.stderr)
    return code


def at_least_one(text: str) -> int:
    """An argparse type: a whole number of at least 1 (argparse names the flag with the message).

    Example:
        >>> at_least_one("3")
        3
        >>> at_least_one("0")
        Traceback (most recent call last):
        ...
        argparse.ArgumentTypeError: must be at least 1, got 0
    """
    import argparse

    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def did_you_mean(path: Path) -> str:
    """`` (did you mean 'runs/oracle'?)`` when a sibling's name is close to the missing ``path``'s, else nothing.

    Example:
        >>> import tempfile
        >>> root = Path(tempfile.mkdtemp())
        >>> (root / "oracle").mkdir()
        >>> did_you_mean(root / "oracl") == f" (did you mean {str(root / 'oracle')!r}?)", did_you_mean(root / "zz")
        (True, '')
    """
    try:
        siblings = [p.name for p in (path.parent if str(path.parent) else Path(".")).iterdir()]
    except OSError:
        return ""
    return near_miss(path.name, siblings, show=lambda name: str(path.with_name(name)))
