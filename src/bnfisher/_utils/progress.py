"""Progress bars for long work (private): tqdm on a terminal, nothing in a log file.

tqdm redraws its bar with carriage returns; written to a file or a pipe those frames
fill the log.  ``disable=None`` lets tqdm draw only when stderr is a terminal.
"""

from __future__ import annotations

__all__ = ["progress_bar"]


def progress_bar(iterable=None, **options):
    """Return a tqdm bar that is silent unless stderr is a terminal.

    Parameters
    ----------
    iterable : iterable, optional
    **options
        tqdm's options (``desc``, ``unit``, ``total``, ``leave``, ...).

    Returns
    -------
    tqdm.tqdm
    """
    from tqdm.auto import tqdm

    options.setdefault("disable", None)  # None: only on a terminal
    return tqdm(iterable, **options)
