"""Words in the outputs (private)."""

from __future__ import annotations

__all__ = ["counted"]


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """Return ``n`` and the noun, plural unless ``n`` is 1.

    Parameters
    ----------
    n : int
    noun : str
    plural : str, optional
        Default: ``noun + "s"``.

    Returns
    -------
    str

    Examples
    --------
    >>> counted(1, "arc"), counted(3, "arc"), counted(1, "family", "families"), counted(0, "family", "families")
    ('1 arc', '3 arcs', '1 family', '0 families')
    """
    return f"{n} {noun if n == 1 else plural or noun + 's'}"
