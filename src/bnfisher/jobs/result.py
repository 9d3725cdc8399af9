"""What every job's result shares: JSON and HTML from its ``to_dict`` (computed once, rendered many ways)."""

from __future__ import annotations

import os

from bnfisher._utils.jsonable import json_text
from bnfisher.data.io import write_text

__all__ = ["JobResult", "TextResult"]


class TextResult:
    """Base of every job's result: ``print`` shows ``to_text()``, ``repr`` one line, the verdict.

    Subclasses define ``verdict()`` and ``to_text()``.
    """

    def __str__(self) -> str:
        return self.to_text()

    def __repr__(self) -> str:
        # One line, the verdict: the dataclass default would print every table and array the result holds.
        return f"<{type(self).__name__}: {self.verdict()}>"

    def verdict(self) -> str:  # pragma: no cover - every result defines it
        """Return the result in one sentence.

        Returns
        -------
        str
        """
        raise NotImplementedError

    def to_text(self) -> str:  # pragma: no cover - every result defines it
        """Return the result as text (what ``print`` shows).

        Returns
        -------
        str
        """
        raise NotImplementedError


class JobResult(TextResult):
    """Base of the jobs' reports: ``to_json`` and ``to_html`` from ``to_dict``, written to a path on request.

    Subclasses define ``verdict()``, ``to_text()`` (what ``print`` shows), ``to_dict()`` (the content),
    ``_figures()`` (PNG bytes by name) and ``_title()``.
    """

    def to_dict(self) -> dict:  # pragma: no cover - every result defines it
        """Return the result as JSON-serialisable content.

        Returns
        -------
        dict
        """
        raise NotImplementedError

    def _figures(self) -> dict:  # pragma: no cover - every result defines it
        raise NotImplementedError

    def _title(self) -> str:  # pragma: no cover - every result defines it
        raise NotImplementedError

    def to_json(self, path: str | os.PathLike | None = None) -> str:
        """Return the result as JSON text; also written to ``path`` when given (atomically).

        Parameters
        ----------
        path : str or path-like, optional

        Returns
        -------
        str
        """
        return _written(json_text(self.to_dict()), path)

    def to_html(self, path: str | os.PathLike | None = None) -> str:
        """Return the self-contained HTML report; also written to ``path`` when given.

        Parameters
        ----------
        path : str or path-like, optional

        Returns
        -------
        str
        """
        from bnfisher.viz.report import render_html

        return _written(render_html(self.to_dict(), self._figures(), title=self._title()), path)


def _written(text: str, path) -> str:
    """Write ``text`` to ``path`` (atomically) when a path is given; return it."""
    if path is not None:
        write_text(path, text)
    return text
