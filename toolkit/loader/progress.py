"""The progress bars of a sync run: one per stream kind, shown only in a terminal or a notebook."""

from __future__ import annotations

import sys

from tqdm.auto import tqdm


def interactive() -> bool:
    """Whether a person is watching: a notebook, or standard error is a terminal."""
    if "ipykernel" in sys.modules:
        return True
    return bool(getattr(sys.stderr, "isatty", lambda: False)())


class Progress:
    """The bars of one run, created on first use (silent when ``show`` is false)."""

    def __init__(self, *, show: bool) -> None:
        self.show = show
        self._bars: dict[str, tqdm] = {}

    def bar(self, name: str) -> tqdm:
        """The progress bar of one stream kind (created on first use; silent when not shown)."""
        if name not in self._bars:
            self._bars[name] = tqdm(desc=name, unit=" rows", disable=not self.show, leave=False, dynamic_ncols=True)
        return self._bars[name]

    def close(self) -> None:
        """Close every bar."""
        for bar in self._bars.values():
            bar.close()
