"""``python -m toolkit.warehouse.write_dictionary [PATH]``: write the warehouse's data dictionary (default
``docs/warehouse.md``) from the comments of a new, empty warehouse (see :mod:`toolkit.warehouse.dictionary`)."""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from .dictionary import read_dictionary, render_markdown
from .store import Warehouse


def build_document() -> str:
    """The Markdown dictionary of a new, empty warehouse made by this version (created in a temporary directory)."""
    with tempfile.TemporaryDirectory() as tmp, Warehouse(Path(tmp) / "dictionary.duckdb") as wh:
        dictionary = read_dictionary(wh.con)
    return render_markdown(dictionary)


def main(argv: list[str] | None = None) -> int:
    """Write the document to the path given (default docs/warehouse.md); returns the exit code."""
    args = sys.argv[1:] if argv is None else argv
    target = Path(args[0]) if args else Path("docs/warehouse.md")
    target.write_text(build_document(), encoding="utf-8")
    print(f"wrote {target}")
    return 0


__all__ = ["build_document", "main"]


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
