r"""The level of each window of a monitor: alpha over a horizon of windows, or alpha over every window, ever.

A monitor tests window after window against one reference, and its promise is about all of
them: the chance that *any* window without change raises an alarm.  By Bonferroni's
inequality that chance is at most the sum of the windows' levels, whatever the dependence
between their tests, so a promise is a sequence of levels with a bounded sum.

``"horizon"``
    Every window at ``alpha / horizon``: at most ``alpha`` over ``horizon`` windows (a
    year of weekly windows with the default 52), ``2 alpha`` over two horizons, and so on.
``"unbounded"``
    Window ``k`` (counted from the store's first, ``k = 1, 2, ...``) at

    .. math:: \alpha_k = \alpha \, \frac{h}{(k + h - 1)(k + h)},

    which telescopes, :math:`\sum_{k=1}^{n} \alpha_k = \alpha \, (1 - h / (n + h))`, so the
    sum over every window ever is ``alpha``: an alpha-spending sequence in the sense of
    sequential testing (each window a test of its own, its level fixed before its data are
    seen).  ``h = horizon`` sets the pace: the first window at ``alpha / (h + 1)``, the
    first ``h`` windows spend half of ``alpha``, window ``h`` is tested at about
    ``alpha / (4 h)`` and window ``k >> h`` at about ``alpha h / k^2``.  The price is power
    that falls as the windows accumulate (``benchmarks/monitor_unbounded.py`` measures it).

References
----------
.. [1] Lan, K. K. G. and DeMets, D. L. (1983). Discrete sequential boundaries for clinical
   trials. *Biometrika* 70(3), 659-663 (spending a type I error over looks).
.. [2] Foster, D. P. and Stine, R. A. (2008). alpha-investing: a procedure for sequential
   control of expected false discoveries. *JRSS B* 70(2), 429-444 (an unbounded stream of tests).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bnfisher._utils.validation import check_option, check_positive_int
from bnfisher.exceptions import OptionError

__all__ = ["GUARANTEES", "WindowLevels"]

#: The promises a monitor can keep (``guarantee``).
GUARANTEES = ("horizon", "unbounded")


@dataclass(frozen=True)
class WindowLevels:
    """The level of each window of a monitor, so that its false alarms keep ``alpha``.

    Parameters
    ----------
    alpha : float
        The chance of any false alarm, at most: over ``horizon`` windows, or over every window.
    horizon : int
        Windows the promise spans (``"horizon"``), or the pace of the spending (``"unbounded"``:
        the first ``horizon`` windows spend half of ``alpha``).
    guarantee : {"horizon", "unbounded"}, default="horizon"

    Raises
    ------
    OptionError
        For ``alpha`` outside (0, 1), a ``horizon`` below 1 or another ``guarantee``.

    Examples
    --------
    >>> levels = WindowLevels(0.05, 52, "unbounded")
    >>> levels.levels(1, 2).round(6).tolist(), round(float(levels.spent(52)), 4)
    ([0.000943, 0.000908], 0.025)
    >>> WindowLevels(0.05, 52).levels(53, 1).tolist()
    [0.0009615384615384616]
    """

    alpha: float
    horizon: int
    guarantee: str = "horizon"

    def __post_init__(self):
        if not (isinstance(self.alpha, (int, float)) and 0 < self.alpha < 1):
            raise OptionError(f"`alpha` must be in (0, 1); got {self.alpha!r}.")
        check_positive_int(self.horizon, "horizon")
        check_option(self.guarantee, "guarantee", GUARANTEES)

    @property
    def unbounded(self) -> bool:
        """Whether the promise covers every window, ever."""
        return self.guarantee == "unbounded"

    def levels(self, first: int, count: int) -> np.ndarray:
        """Return the levels of windows ``first, first + 1, ..., first + count - 1`` (counted from 1).

        Parameters
        ----------
        first : int
            The first window's position among every window the monitor has tested, from 1.
        count : int

        Returns
        -------
        ndarray of float, shape (count,)
        """
        if self.guarantee == "horizon":
            return np.full(count, self.alpha / self.horizon)
        k = np.arange(first, first + count, dtype=float)
        return self.alpha * self.horizon / ((k + self.horizon - 1) * (k + self.horizon))

    def spent(self, windows: int) -> float:
        """Return the bound on the chance of a false alarm among the first ``windows`` windows (the levels' sum).

        Parameters
        ----------
        windows : int

        Returns
        -------
        float
        """
        if self.guarantee == "horizon":
            return windows * self.alpha / self.horizon
        return self.alpha * windows / (windows + self.horizon)

    def describe(self) -> str:
        """Return the promise in words, for the verdict, the notes and the dashboard.

        Returns
        -------
        str
        """
        if self.guarantee == "horizon":
            return (f"alpha / horizon = {self.alpha:g} / {self.horizon} = {self.alpha / self.horizon:.3g} per window: "
                    f"the chance of any false alarm over {self.horizon} windows without change is at most "
                    f"{self.alpha:g}")
        return (f"window k of the store at {self.alpha:g} x {self.horizon} / ((k + {self.horizon - 1})(k + "
                f"{self.horizon})): the chance of any false alarm over every window without change, however many, "
                f"is at most {self.alpha:g} (the first {self.horizon} spend half of it)")
