"""Compiled forward-backward pass of a hidden Markov model, for sequences of any lengths at once.

One pass per sequence, with no per-step Python: the backward messages are computed
first (each normalised to sum 1, stored as a (T, K) scratch array), then the forward
messages, which need only the current vector, and every posterior is consumed as soon
as it is known -- summed into the per-sequence sufficient statistics that the Fisher
scores need (first-step posterior, expected transition counts, occupancies and the
state-weighted first and second moments of the observations about each state's mean).
Nothing of size ``T x K x K`` or ``T x K x D x D`` is ever stored.

Sequences of different lengths are passed concatenated with their offsets, so ragged
collections are batched without padding. The driver :func:`sequence_statistics`
computes the emission log-densities (BLAS) for chunks of sequences capped in bytes.

The loop is compiled with numba.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from bnfisher._utils.jit import compiled

__all__ = ["log_emissions", "sequence_statistics"]

#: Emission log-densities held at once by :func:`sequence_statistics`, in bytes (one chunk of sequences).
CHUNK_BYTES = 64 << 20
_controller: Any = None  # threadpoolctl's, made on first use


def log_emissions(X: np.ndarray, means: np.ndarray, covariances: np.ndarray, *, block: int = 8192) -> np.ndarray:
    """``log N(x_t | m_k, C_k)`` for every time step and state.

    With ``C_k = L_k L_k^T`` (Cholesky) and ``W_k = L_k^{-1}``, the Mahalanobis term is
    ``|W_k x_t - W_k m_k|^2``: one matrix product of a block of rows with all states'
    ``W_k^T`` side by side, then a product with a block indicator sums the squares.

    Parameters
    ----------
    X : ndarray of shape (..., T, D)
    means : ndarray of shape (K, D)
    covariances : ndarray of shape (K, D, D)
    block : int, default=8192
        Rows per product (bounds the ``block x K D`` work array).

    Returns
    -------
    ndarray of shape (..., T, K)

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(50, 2))
    >>> startprob, transmat = np.full(2, 0.5), np.full((2, 2), 0.5)
    >>> means, covariances = np.zeros((2, 2)), np.stack([np.eye(2)] * 2)
    >>> from bnfisher.hmm import log_emissions
    >>> log_emissions(X, means, covariances).shape
    (50, 2)
    """
    K, D = means.shape
    factors = np.linalg.cholesky(covariances)
    whitening = np.linalg.inv(factors)  # (K, D, D), lower triangular
    stacked = np.ascontiguousarray(np.concatenate(list(whitening.transpose(0, 2, 1)), axis=1))  # (D, K D)
    offsets = np.einsum("kij,kj->ki", whitening, means).ravel()
    constant = -0.5 * D * np.log(2 * np.pi) - np.log(np.diagonal(factors, axis1=1, axis2=2)).sum(axis=1)
    halves = np.kron(np.eye(K), np.full((D, 1), -0.5))  # (K D, K): -1/2 times the sum of each state's squares
    flat = np.ascontiguousarray(X.reshape(-1, D), dtype=np.float64)
    out = np.empty((flat.shape[0], K))
    work = np.empty((min(block, flat.shape[0]), K * D))
    for start in range(0, flat.shape[0], block):
        rows = slice(start, min(start + block, flat.shape[0]))
        z = work[: rows.stop - rows.start]
        np.matmul(flat[rows], stacked, out=z)
        z -= offsets
        np.square(z, out=z)
        np.matmul(z, halves, out=out[rows])
    out += constant
    return out.reshape(X.shape[:-1] + (K,))


@compiled(nogil=True)
def _pass(log_b, X, offsets, startprob, transmat, means, moments, gamma_out,
          log_likelihood, first, xi, occupancy, m1, m2):  # pragma: no cover - compiled; tested through its callers
    """Forward-backward over each sequence ``offsets[i]:offsets[i+1]`` of the rows of ``log_b`` and ``X``.

    ``log_b`` is overwritten (by the scaled emission likelihoods).

    Writes, per sequence ``i``: ``log_likelihood[i]``, ``first[i] = P(s_1 | x)``,
    ``xi[i] = sum_t P(s_t, s_{t+1} | x)``, ``occupancy[i] = sum_t P(s_t | x)`` and, when
    ``moments``, ``m1[i, k] = sum_t P(s_t = k | x) (x_t - m_k)`` and
    ``m2[i, k] = sum_t P(s_t = k | x) (x_t - m_k)(x_t - m_k)^T``. When ``gamma_out``
    has rows, the posteriors are written there too (row for row with ``log_b``).
    """
    K = log_b.shape[1]
    longest = 0
    for i in range(offsets.shape[0] - 1):
        longest = max(longest, offsets[i + 1] - offsets[i])
    beta = np.empty((longest, K))
    work = np.empty((4, K))  # alpha, predicted, weight, gamma
    residual = np.empty(X.shape[1])
    for i in range(offsets.shape[0] - 1):
        start = offsets[i]
        T = offsets[i + 1] - start
        b = log_b[start : start + T]
        shift = _scale(b)
        _backward(b, transmat, beta, work[2])
        log_likelihood[i] = shift + _forward(i, start, b, beta, X, startprob, transmat, means, moments, gamma_out,
                                             first, xi, occupancy, m1, m2, work, residual)


@compiled(nogil=True, inline="always")
def _scale(b):  # pragma: no cover - compiled; tested through its callers
    """Replace log emission likelihoods by likelihoods scaled by their maximum per step; return the log shifts' sum."""
    total = 0.0
    for t in range(b.shape[0]):
        shift = b[t, 0]
        for k in range(1, b.shape[1]):
            shift = max(shift, b[t, k])
        total += shift
        for k in range(b.shape[1]):
            b[t, k] = np.exp(b[t, k] - shift)
    return total


@compiled(nogil=True, inline="always")
def _backward(b, transmat, beta, weight):  # pragma: no cover - compiled; tested through its callers
    """Write the backward messages of one sequence into ``beta[:T]``, each normalised to sum 1."""
    T, K = b.shape
    for k in range(K):
        beta[T - 1, k] = 1.0 / K
    for t in range(T - 2, -1, -1):
        for j in range(K):
            weight[j] = b[t + 1, j] * beta[t + 1, j]
        norm = 0.0
        for a in range(K):
            s = 0.0
            for j in range(K):
                s += transmat[a, j] * weight[j]
            beta[t, a] = s
            norm += s
        for a in range(K):
            beta[t, a] /= norm


@compiled(nogil=True, inline="always")
def _forward(i, start, b, beta, X, startprob, transmat, means, moments, gamma_out, first, xi, occupancy, m1, m2,
             work, residual):  # pragma: no cover - compiled; tested through its callers
    """Run the forward messages of sequence ``i``, adding its statistics; return its scaled log-likelihood."""
    T, K = b.shape
    alpha, predicted, weight, gamma = work[0], work[1], work[2], work[3]
    total = 0.0
    for t in range(T):
        if t == 0:
            for k in range(K):
                predicted[k] = startprob[k]
        else:
            for j in range(K):
                s = 0.0
                for a in range(K):
                    s += alpha[a] * transmat[a, j]
                predicted[j] = s
            # P(s_{t-1} = a, s_t = j | x) = alpha_a A_aj b_j beta_j / sum_j predicted_j b_j beta_j
            z = 0.0
            for j in range(K):
                weight[j] = b[t, j] * beta[t, j]
                z += predicted[j] * weight[j]
            for a in range(K):
                for j in range(K):
                    xi[i, a, j] += alpha[a] * transmat[a, j] * weight[j] / z
        scale = 0.0
        for k in range(K):
            alpha[k] = predicted[k] * b[t, k]
            scale += alpha[k]
        total += np.log(scale)
        norm = 0.0
        for k in range(K):
            alpha[k] /= scale
            gamma[k] = alpha[k] * beta[t, k]
            norm += gamma[k]
        _add_posterior(i, t, start, gamma, norm, X, means, moments, gamma_out, first, occupancy, m1, m2, residual)
    return total


@compiled(nogil=True, inline="always")
def _add_posterior(i, t, start, gamma, norm, X, means, moments, gamma_out, first, occupancy, m1, m2,
                   residual):  # pragma: no cover - compiled; tested through its callers
    """Add step ``t``'s posterior ``gamma / norm`` to sequence ``i``'s occupancy, first state and moments."""
    D = X.shape[1]
    for k in range(gamma.shape[0]):
        g = gamma[k] / norm
        occupancy[i, k] += g
        if t == 0:
            first[i, k] = g
        if gamma_out.shape[0] > 0:
            gamma_out[start + t, k] = g
        if moments:
            for d in range(D):
                residual[d] = X[start + t, d] - means[k, d]
                m1[i, k, d] += g * residual[d]
            for d in range(D):  # the whole square: the inner loop vectorises, twice as fast as a triangle
                gd = g * residual[d]
                for e in range(D):
                    m2[i, k, d, e] += gd * residual[e]


def _one_blas_thread():
    """Return a context with one BLAS thread.

    The emission products are small; on a loaded machine, BLAS threads' busy-waiting made them
    3-6x slower. threadpoolctl comes with scikit-learn; without it, nothing changes. Its
    controller is made once: finding the libraries reads the process's memory map (ms).
    """
    global _controller
    if _controller is None:
        try:
            from threadpoolctl import ThreadpoolController

            _controller = ThreadpoolController()
        except ImportError:  # pragma: no cover - depends on the environment
            _controller = False
    if _controller is False:  # pragma: no cover - depends on the environment
        from contextlib import nullcontext

        return nullcontext()
    return _controller.limit(limits=1, user_api="blas")


def sequence_statistics(parts: list, startprob: np.ndarray, transmat: np.ndarray, means: np.ndarray,
                        covariances: np.ndarray, *, moments: bool = True, posteriors: bool = False,
                        chunk_bytes: int = CHUNK_BYTES) -> dict:
    """Exact posteriors of a Gaussian HMM summed per sequence, for a list of sequences of any lengths.

    Parameters
    ----------
    parts : list of ndarray of shape (T_i, D)
        The sequences (validated by the caller), each with at least one step.
    startprob : ndarray of shape (K,)
    transmat : ndarray of shape (K, K)
    means : ndarray of shape (K, D)
    covariances : ndarray of shape (K, D, D)
        Full covariance matrices (positive definite).
    moments : bool, default=True
        Also return the state-weighted moments ``m1`` and ``m2`` (the mean and covariance scores need them).
    posteriors : bool, default=False
        Also return every step's posterior, ``gamma`` of shape (sum T_i, K).
    chunk_bytes : int, default=CHUNK_BYTES
        Consecutive sequences share one emission array of at most this many bytes (a longer sequence gets
        one of its own): memory is ``O(K * max(T_i))`` beyond the input and the outputs.

    Returns
    -------
    dict of ndarray
        ``log_likelihood`` (n,), ``first`` (n, K) = ``P(s_1 = k | x)``, ``xi`` (n, K, K) =
        ``sum_t P(s_t = i, s_{t+1} = j | x)``, ``occupancy`` (n, K) = ``sum_t P(s_t = k | x)``; with
        ``moments``, ``m1`` (n, K, D) and ``m2`` (n, K, D, D), the posterior-weighted first and second
        moments of ``x_t - m_k`` (``m2`` symmetric); with ``posteriors``, ``gamma``.

    Examples
    --------
    >>> import numpy as np
    >>> parts = [np.random.default_rng(0).normal(size=(t, 1)) for t in (5, 8)]
    >>> stats = sequence_statistics(parts, np.array([0.5, 0.5]), np.full((2, 2), 0.5), np.array([[-1.0], [1.0]]),
    ...                             np.ones((2, 1, 1)))
    >>> stats["occupancy"].sum(axis=1)   # each step's posterior sums to one
    array([5., 8.])
    """
    n, K, D = len(parts), means.shape[0], means.shape[1]
    startprob, transmat, means = (np.ascontiguousarray(a, dtype=np.float64) for a in (startprob, transmat, means))
    out = {"log_likelihood": np.zeros(n), "first": np.zeros((n, K)), "xi": np.zeros((n, K, K)),
           "occupancy": np.zeros((n, K))}
    m1 = np.zeros((n, K, D) if moments else (n, K, 0))
    m2 = np.zeros((n, K, D, D) if moments else (n, K, 0, 0))
    lengths = np.array([len(p) for p in parts], dtype=np.int64)
    gamma = np.empty((lengths.sum() if posteriors else 0, K))
    ends = np.cumsum(lengths)
    per_chunk = max(1, chunk_bytes // (8 * K))  # rows of log_b per chunk
    first = 0
    with _one_blas_thread():
        while first < n:
            # consecutive sequences while their steps fit the budget (at least one sequence)
            last = max(first + 1, int(np.searchsorted(ends, ends[first] - lengths[first] + per_chunk, side="right")))
            rows = slice(ends[first] - lengths[first], ends[last - 1])
            X = parts[first] if last == first + 1 else np.concatenate(parts[first:last])
            X = np.ascontiguousarray(X, dtype=np.float64)
            offsets = np.concatenate([[0], np.cumsum(lengths[first:last])])
            chunk = slice(first, last)
            _pass(log_emissions(X, means, covariances), X, offsets, startprob, transmat, means, moments,
                  gamma[rows] if posteriors else gamma, out["log_likelihood"][chunk], out["first"][chunk],
                  out["xi"][chunk], out["occupancy"][chunk], m1[chunk], m2[chunk])
            first = last
    if moments:
        out["m1"], out["m2"] = m1, m2
    if posteriors:
        out["gamma"] = gamma
    return out
