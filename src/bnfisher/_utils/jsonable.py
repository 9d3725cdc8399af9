"""JSON text of the results (private): valid JSON always, a figure not measured (NaN) or infinite as null."""

from __future__ import annotations

import json
import math

import numpy as np

__all__ = ["json_ready", "json_text"]


def json_ready(value):
    """Return ``value`` with every NaN or infinite number as None: JSON has neither.

    Parameters
    ----------
    value : dict, list, tuple, float or anything ``json.dumps`` takes

    Returns
    -------
    The same structure, lists for tuples.

    Examples
    --------
    >>> json_ready({"initial": float("nan"), "values": (1.0, float("inf")), "k": 2})
    {'initial': None, 'values': [1.0, None], 'k': 2}
    """
    if isinstance(value, dict):
        return {key: json_ready(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_ready(item) for item in value]
    if isinstance(value, (float, np.floating)):
        return float(value) if math.isfinite(value) else None
    return value


def json_text(content, *, indent: int = 1) -> str:
    """Return ``content`` as JSON text that every JSON parser reads (:func:`json_ready`; numpy numbers as floats).

    Examples
    --------
    >>> json_text({"p": float("nan")}, indent=None)
    '{"p": null}'
    """
    return json.dumps(json_ready(content), indent=indent, default=float, allow_nan=False)
