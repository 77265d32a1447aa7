"""The evaluation run's progress bar (``tqdm``: on a terminal, in a notebook, and in piped logs)."""

from __future__ import annotations

from typing import TextIO

from crmarena_gym._console import progress_bar

__all__ = ["ProgressBar"]


class ProgressBar:
    """Episodes done, rate, time left and the running mean reward of the episodes run in this process.

    Args:
        total: Episodes in the run (those already done when resuming included).
        done: Episodes already done.
        stream: Where to draw (default: stderr).
        enabled: Draw at all (default: yes, also when ``stream`` is a pipe or a file; ``--no-progress`` turns
            it off).

    Example:
        >>> import io
        >>> out = io.StringIO()
        >>> bar = ProgressBar(4, stream=out)
        >>> bar.update(1.0); bar.update(0.0); bar.close()
        >>> last = out.getvalue().splitlines()[-1]  # piped: one line per update
        >>> last.startswith("eval:"), "2/4" in last, "reward=0.500" in last
        (True, True, True)
    """

    def __init__(self, total: int, *, done: int = 0, stream: TextIO | None = None, enabled: bool | None = None) -> None:
        self.enabled = True if enabled is None else enabled
        self.bar = progress_bar(total, "eval", stream=stream, enabled=self.enabled, initial=done, unit="ep")
        self._reward = 0.0
        self._counted = 0

    def update(self, reward: float) -> None:
        """Count one finished episode with its reward, and redraw (at most as often as ``tqdm`` redraws)."""
        self._counted += 1
        self._reward += reward
        self.bar.set_postfix(reward=f"{self._reward / self._counted:.3f}", refresh=False)
        self.bar.update(1)

    def close(self) -> None:
        """Draw the final state and end the line."""
        self.bar.close()
