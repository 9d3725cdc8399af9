"""Multi-start fitting of a Gaussian HMM, abandoning hopeless starts.

The starts run side by side, ``check_every`` EM iterations at a time.  After each
round, a start is abandoned when even its recent gain per iteration, kept up to
``n_iter`` iterations, would leave it more than ``MARGIN`` nats below the leading
start: EM's gains shrink as it converges, so that straight line is optimistic.
Starts that converge or reach ``n_iter`` iterations are finished.  A finished
start in which a state collapsed (fewer than ``D + 1`` expected points) is
rejected, and the best abandoned start is then finished in its place.

EM is run by hmmlearn (``GaussianHMM.fit`` in pieces: a piece continues from
the parameters the previous one left).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from bnfisher._utils.progress import progress_bar
from bnfisher.hmm._forward_backward import sequence_statistics
from bnfisher.hmm.scores import floor_covariances, full_covariances

__all__ = ["MARGIN", "fit_starts"]

MARGIN = 5.0
"""Nats below the leading start within which a start may still end (see the module docstring)."""


@dataclass
class _Start:
    """One start: its model, the log-likelihoods of its EM iterations so far, and whether it is finished."""

    model: Any
    history: list = field(default_factory=list)
    finished: bool = False
    failed: bool = False

    @property
    def iterations(self) -> int:
        return len(self.history)

    @property
    def value(self) -> float:
        return self.history[-1] if self.history and not self.failed else -np.inf


def _hopeful(start: _Start, lead: float, window: int, n_iter: int) -> bool:
    """Whether the start, gaining per iteration what it gained lately, could come within MARGIN of ``lead``."""
    h = start.history
    if start.failed or not h:
        return False
    span = min(window, len(h) - 1)
    gain = (h[-1] - h[-1 - span]) / span if span > 0 else np.inf
    return h[-1] + max(gain, 0.0) * (n_iter - len(h)) >= lead - MARGIN


class _Fitter:
    """EM in pieces on one data set: new starts, their continuation, and the verdict on a finished start."""

    def __init__(self, X: np.ndarray, lengths: list, *, n_states: int, covariance_type: str, n_iter: int,
                 tol: float, min_covar: float, bar=None):
        self.X, self.lengths, self.K, self.D = X, lengths, n_states, X.shape[1]
        self.covariance_type, self.n_iter, self.tol, self.bar = covariance_type, n_iter, tol, bar
        self.floor = min_covar * float(np.var(X, axis=0).mean())
        self.pooled = np.cov(X.T).reshape(self.D, self.D) + self.floor * np.eye(self.D)
        self.parts = np.split(X, np.cumsum(lengths)[:-1])

    def _covars(self, full: np.ndarray) -> np.ndarray:
        # Full matrices in hmmlearn's layout for this covariance type.
        return full if self.covariance_type == "full" else np.array([np.diag(c) for c in full])

    def _floored(self, model: Any) -> np.ndarray:
        return floor_covariances(full_covariances(model.covars_, self.covariance_type, self.K, self.D), self.floor)

    def new(self, kind: str, seed: int, leader: Any) -> _Start:
        """Return a start of ``kind`` ("kmeans", "random" or "perturb" of ``leader``'s model)."""
        from hmmlearn.hmm import GaussianHMM

        K, D = self.K, self.D
        model = GaussianHMM(n_components=K, covariance_type=self.covariance_type, tol=self.tol, random_state=seed,
                            min_covar=self.floor, init_params="stmc" if kind == "kmeans" else "")
        local = np.random.default_rng(seed)
        if kind == "random":
            # K distinct observations as means, the pooled covariance for every state, sticky transitions:
            # complements the k-means start, which can merge states.
            off = 0.1 / max(K - 1, 1)
            model.startprob_ = np.full(K, 1.0 / K)
            model.transmat_ = np.full((K, K), off) + np.eye(K) * (0.9 - off)
            model.means_ = self.X[local.choice(len(self.X), size=K, replace=False)]
            model.covars_ = self._covars(np.stack([self.pooled] * K))
        elif kind == "perturb":
            # The leading start with its means moved by half a pooled sd and its transitions smoothed.
            model.startprob_ = np.array(leader.startprob_)
            model.transmat_ = 0.8 * np.array(leader.transmat_) + 0.2 / K
            model.means_ = leader.means_ + 0.5 * local.normal(size=(K, D)) * np.sqrt(np.diag(self.pooled))
            model.covars_ = self._covars(self._floored(leader))
        return _Start(model)

    def advance(self, start: _Start, budget: int) -> None:
        """Continue EM from the start's parameters up to ``budget`` iterations in all."""
        if start.finished or start.iterations >= budget:
            return
        model = start.model
        model.n_iter = model.monitor_.n_iter = budget - start.iterations  # the monitor keeps its own copy
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # hmmlearn warns about non-monotone EM steps
                model.fit(self.X, self.lengths)
            model.init_params = ""  # the next piece continues from here
            start.history.extend(model.monitor_.history)
            last = start.history[-2:]
            converged = len(last) == 2 and last[1] - last[0] < self.tol
            start.finished = (converged or start.iterations >= self.n_iter
                              or not np.all(np.isfinite(model.transmat_)))
        except (np.linalg.LinAlgError, ValueError):
            start.failed = start.finished = True
        if self.bar is not None:
            self.bar.update(model.n_iter)

    def judge(self, start: _Start) -> tuple[float, float]:
        """Return ``(score, value)``: the log-likelihood with floored covariances, score -inf if a state collapsed."""
        model = start.model
        if start.failed or not np.all(np.isfinite(model.transmat_)):
            return -np.inf, -np.inf
        try:
            # The floor as eigenvalues too: hmmlearn can leave a collapsed state's covariance singular.
            covariances = self._floored(model)
            model.covars_ = self._covars(covariances)
            stats = sequence_statistics(self.parts, model.startprob_, model.transmat_, model.means_, covariances,
                                        moments=False)
        except (np.linalg.LinAlgError, ValueError):
            return -np.inf, -np.inf
        value = float(stats["log_likelihood"].sum())
        # A state on fewer than D + 1 expected points has a degenerate covariance: reject the start.
        return (value if stats["occupancy"].sum(axis=0).min() >= self.D + 1 else -np.inf), value


def _kind(index: int, leader: _Start | None) -> str:
    if index == 0:
        return "kmeans"
    if leader is not None and leader.value > -np.inf and index % 3 == 2:
        return "perturb"
    return "random" if index % 2 == 1 else "kmeans"


def _run_starts(fitter: _Fitter, n_init: int, step: int, n_iter: int, rng) -> list:
    """Start ``n_init`` fits (each from the leader so far, or afresh), then advance the hopeful ones to the end."""
    starts: list[_Start] = []
    for index in range(n_init):
        seed = int(rng.integers(2**31 - 1))
        leader = max(starts, key=lambda s: s.value, default=None)
        start = fitter.new(_kind(index, leader), seed, leader.model if leader is not None else None)
        fitter.advance(start, step)
        starts.append(start)
    alive, budget = [s for s in starts if not s.finished], step
    while alive:
        lead = max(s.value for s in starts)
        alive = [s for s in alive if _hopeful(s, lead, step, n_iter)]
        budget += step
        for start in alive:
            fitter.advance(start, budget)
        alive = [s for s in alive if not s.finished]
    return starts


def _judged(fitter: _Fitter, starts: list, n_iter: int) -> dict:
    """Judge the finished starts; while none is accepted, finish the best abandoned one and judge it."""
    order = sorted(range(len(starts)), key=lambda i: starts[i].value, reverse=True)
    verdicts = {i: fitter.judge(starts[i]) for i in order if starts[i].finished}
    for i in order:
        if any(np.isfinite(score) for score, _ in verdicts.values()):
            break
        if i not in verdicts:
            fitter.advance(starts[i], n_iter)
            verdicts[i] = fitter.judge(starts[i])
    return verdicts


def fit_starts(X: np.ndarray, lengths: list, *, n_states: int, covariance_type: str, n_init: int,
               check_every: int | None, n_iter: int, tol: float, min_covar: float, rng: np.random.Generator,
               progress: bool = False):
    """Fit a Gaussian HMM from ``n_init`` starts, abandoning hopeless ones; return the best.

    Parameters
    ----------
    X : ndarray of shape (sum T_i, D)
        The sequences, stacked.
    lengths : list of int
        Their lengths.
    n_states, covariance_type, n_init, n_iter, tol
        As in :class:`~bnfisher.sklearn.HMMFisherKernel`.
    check_every : int or None
        EM iterations between the checks for hopeless starts; None runs every start to the end.
    min_covar : float
        Covariance floor relative to the channels' mean variance.
    rng : numpy.random.Generator
        Draws one seed per start.
    progress : bool, default=False
        A tqdm bar counting EM iterations.

    Returns
    -------
    model : hmmlearn.hmm.GaussianHMM
        The best accepted fit, covariances floored.
    log_likelihood : float
        Its log-likelihood (forward algorithm, floored covariances).
    start_values : list of float
        Per start: the log-likelihood of a finished start (``-inf`` when rejected or failed), or the one an
        abandoned start had reached.
    collapsed : bool
        True when every start collapsed a state and the best of them was kept.

    Raises
    ------
    ValueError
        When every start fails.
    """
    bar = progress_bar(desc="HMM starts", unit="EM iteration", leave=False) if progress else None
    fitter = _Fitter(X, lengths, n_states=n_states, covariance_type=covariance_type, n_iter=n_iter, tol=tol,
                     min_covar=min_covar, bar=bar)
    step = n_iter if check_every is None else min(check_every, n_iter)
    starts = _run_starts(fitter, n_init, step, n_iter, rng)
    verdicts = _judged(fitter, starts, n_iter)
    if bar is not None:
        bar.close()
    accepted = [i for i, (score, _) in verdicts.items() if np.isfinite(score)]
    collapsed = not accepted
    if collapsed:
        accepted = [i for i, (_, value) in verdicts.items() if np.isfinite(value)]
        if not accepted:
            raise ValueError(f"Every one of the {n_init} HMM fits failed.")
    best = max(accepted, key=lambda i: verdicts[i][1])
    values = [verdicts[i][0] if i in verdicts else starts[i].value for i in range(n_init)]
    return starts[best].model, verdicts[best][1], values, collapsed
