"""Fisher scores of Gaussian HMMs: forward-backward, the score of every parameter, the information matrix."""

from __future__ import annotations

import numpy as np

from bnfisher.exceptions import DataError
from bnfisher.hmm._forward_backward import sequence_statistics

PARAMETERS = ("startprob", "transmat", "means", "covars")


# --------------------------------------------------------------- sequences
def split_sequences(sequences, lengths=None) -> list:
    """Return a list of (T_i, D) arrays, from a list or from one array and ``lengths`` (hmmlearn style)."""
    if lengths is None:
        if isinstance(sequences, np.ndarray) and sequences.ndim == 2:
            out = [sequences]
        else:
            out = [_real(s, f"Sequence {i}") for i, s in enumerate(sequences)]
    else:
        array = _real(sequences, "The sequences' array")
        lengths = np.asarray(lengths, dtype=np.int64)
        if lengths.sum() != array.shape[0]:
            raise DataError(f"`lengths` sum to {lengths.sum()} but the array has {array.shape[0]} rows.")
        out = np.split(array, np.cumsum(lengths)[:-1])
    out = [_real(s, f"Sequence {i}") for i, s in enumerate(out)]
    for i, s in enumerate(out):
        if s.ndim != 2:
            raise DataError(f"Sequence {i} must be 2-D (T, D); got shape {s.shape}.")
        if s.shape[0] < 2:
            raise DataError(f"Sequence {i} has {s.shape[0]} time step(s); at least 2 are needed.")
        if not np.all(np.isfinite(s)):
            raise DataError(f"Sequence {i} has NaN or infinite values.")
        if s.shape[1] != out[0].shape[1]:
            raise DataError(f"Sequence {i} has {s.shape[1]} channels; sequence 0 has {out[0].shape[1]}.")
    if not out:
        raise DataError("No sequences given.")
    return out


def _real(values, what: str) -> np.ndarray:
    """Return ``values`` as float64, or refuse values that are not numbers, naming ``what`` and one of them."""
    try:
        return np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        flat = np.asarray(values, dtype=object).reshape(-1)
        bad = next((v for v in flat if not _is_number(v)), flat[0] if flat.size else None)
        raise DataError(f"{what} holds a value that is not a number ({bad!r}); the HMM kernel needs real-valued "
                        "observations: encode categories as numbers, or use the Bayesian network kernel for "
                        "categorical data.") from None


def _is_number(value) -> bool:
    try:
        float(value)
    except (TypeError, ValueError):
        return False
    return True


def full_covariances(covars: np.ndarray, covariance_type: str, n_states: int, n_dims: int) -> np.ndarray:
    """Return the (n_states, n_dims, n_dims) covariances from hmmlearn's ``covars_`` (full or diagonal)."""
    if covariance_type == "full":
        return np.asarray(covars, dtype=np.float64).reshape(n_states, n_dims, n_dims)
    diagonal = np.asarray(covars, dtype=np.float64).reshape(n_states, -1)
    if diagonal.shape[1] == n_dims * n_dims:  # hmmlearn's covars_ property gives full matrices
        return diagonal.reshape(n_states, n_dims, n_dims)
    return np.stack([np.diag(d) for d in diagonal])


# --------------------------------------------------------- forward-backward
def forward_backward(X: np.ndarray, startprob: np.ndarray, transmat: np.ndarray, means: np.ndarray,
                     covariances: np.ndarray):
    """Exact posteriors of a Gaussian HMM for one sequence, or a batch of equal-length ones.

    Scaled forward-backward (compiled; see :func:`bnfisher._forward_backward.sequence_statistics`):
    emission likelihoods are divided by their maximum at every step and the messages
    normalised, with the logs kept, so nothing underflows and ``log p(x)`` is exact.

    Parameters
    ----------
    X : ndarray of shape (T, D) or (B, T, D)
    startprob : ndarray of shape (K,)
    transmat : ndarray of shape (K, K)
    means : ndarray of shape (K, D)
    covariances : ndarray of shape (K, D, D)

    Returns
    -------
    log_likelihood : float (or ndarray of shape (B,))
    gamma : ndarray of shape (T, K) (or (B, T, K))
        ``P(s_t = k | x)``.
    xi_sum : ndarray of shape (K, K) (or (B, K, K))
        ``sum_t P(s_t = i, s_{t+1} = j | x)``.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[0.1], [0.2], [3.0], [2.9]])
    >>> ll, gamma, xi = forward_backward(X, np.array([0.5, 0.5]), np.array([[0.9, 0.1], [0.1, 0.9]]),
    ...                                  np.array([[0.0], [3.0]]), np.ones((2, 1, 1)))
    >>> gamma.argmax(axis=1)
    array([0, 0, 1, 1])
    >>> round(float(xi.sum()), 10)  # T - 1 transitions
    3.0
    """
    single = X.ndim == 2
    parts = [X] if single else list(X)
    stats = sequence_statistics(parts, startprob, transmat, means, covariances, moments=False, posteriors=True)
    gamma = stats["gamma"].reshape(len(parts), -1, means.shape[0])
    if single:
        return float(stats["log_likelihood"][0]), gamma[0], stats["xi"][0]
    return stats["log_likelihood"], gamma, stats["xi"]


def hmm_scores(X: np.ndarray, startprob: np.ndarray, transmat: np.ndarray, means: np.ndarray,
               covariances: np.ndarray, covariance_type: str = "full", parameters=PARAMETERS,
               form: str = "logit") -> np.ndarray:
    """Score vector ``d log p(X | w) / d w`` of one sequence, blocks in ``parameters`` order.

    Parameters
    ----------
    X : ndarray of shape (T, D)
    startprob, transmat, means, covariances
        HMM parameters (``covariances`` as full (K, D, D) matrices).
    covariance_type : {"full", "diag"}
        ``"diag"`` differentiates with respect to the K x D variances only.
    parameters : sequence of str
        Blocks among ``"startprob", "transmat", "means", "covars"``.
    form : {"logit", "raw"}
        Softmax-logit gradients for ``pi`` and ``A`` (they respect the simplex), or
        raw partial derivatives ``gamma_i(1) / pi_i`` and ``n_ij / A_ij``.

    Returns
    -------
    ndarray of shape (n_parameters,)

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(50, 2))
    >>> startprob, transmat = np.full(2, 0.5), np.full((2, 2), 0.5)
    >>> means, covariances = np.zeros((2, 2)), np.stack([np.eye(2)] * 2)
    >>> from bnfisher.hmm import hmm_scores
    >>> scores = hmm_scores(X, startprob, transmat, means, covariances)
    >>> bool(np.isfinite(scores).all())
    True
    """
    stats = sequence_statistics([X], startprob, transmat, means, covariances, moments=needs_moments(parameters))
    return scores_from_statistics(stats, startprob, transmat, means, covariances, covariance_type, parameters,
                                   form)[0]


def needs_moments(parameters) -> bool:
    """Whether the blocks need the state-weighted moments (the mean and covariance scores do)."""
    return "means" in parameters or "covars" in parameters


def scores_from_statistics(stats: dict, startprob, transmat, means, covariances, covariance_type, parameters,
                            form) -> np.ndarray:
    """Score vectors of all sequences, shape (n, n_parameters), from :func:`sequence_statistics` output."""
    n, K = stats["first"].shape
    D = means.shape[1]
    blocks = []
    for name in parameters:
        if name == "startprob":
            first = stats["first"]
            with np.errstate(divide="ignore", invalid="ignore"):  # raw form at pi_i = 0 is undefined: 0
                raw = np.where(startprob > 0, first / startprob, 0.0)
            blocks.append(first - startprob if form == "logit" else raw)
        elif name == "transmat":
            xi = stats["xi"]
            visits = xi.sum(axis=2, keepdims=True)
            with np.errstate(divide="ignore", invalid="ignore"):  # raw form at A_ij = 0 is undefined: 0
                raw = np.where(transmat > 0, xi / transmat, 0.0)
            blocks.append((xi - transmat * visits if form == "logit" else raw).reshape(n, K * K))
        elif name == "means":
            # C_k^{-1} sum_t gamma_k(t) (x_t - m_k)
            blocks.append(np.einsum("kde,nke->nkd", np.linalg.inv(covariances), stats["m1"]).reshape(n, K * D))
        elif name == "covars":
            occupancy = stats["occupancy"][:, :, None]
            if covariance_type == "diag":
                variance = np.diagonal(covariances, axis1=1, axis2=2)
                spread = np.diagonal(stats["m2"], axis1=2, axis2=3)
                # d/d sigma^2: 1/2 sum_t gamma (r^2 / sigma^4 - 1 / sigma^2)
                blocks.append((0.5 * (spread / variance**2 - occupancy / variance)).reshape(n, K * D))
            else:
                inverse = np.linalg.inv(covariances)
                excess = stats["m2"] - occupancy[..., None] * covariances
                gradient = 0.5 * np.einsum("kab,nkbc,kcd->nkad", inverse, excess, inverse)
                # Upper-triangle parametrisation: off-diagonal entries appear twice in C.
                rows, cols = np.triu_indices(D)
                blocks.append((np.where(rows == cols, 1.0, 2.0) * gradient[:, :, rows, cols]).reshape(n, -1))
        else:
            raise DataError(f"Unknown parameter block {name!r}; use {PARAMETERS}.")
    return np.concatenate(blocks, axis=1)


# ------------------------------------------------------- complete-data information
def _duplication(D: int) -> np.ndarray:
    """``vec(C) = Dup @ theta`` for a symmetric C parametrised by its upper triangle (``np.triu_indices`` order)."""
    rows, cols = np.triu_indices(D)
    index = np.empty((D, D), dtype=np.intp)
    index[rows, cols] = np.arange(rows.size)
    index[cols, rows] = np.arange(rows.size)
    dup = np.zeros((D * D, rows.size))
    dup[np.arange(D * D), index.ravel()] = 1.0
    return dup


def complete_information(startprob, transmat, covariances, occupancy, visits, covariance_type="full",
                         parameters=PARAMETERS) -> list:
    """Return the expected complete-data Fisher information of every score block (logit parametrisation).

    With the hidden states observed the log-likelihood separates, so the information is
    block diagonal:

    * initial logits: ``diag(pi) - pi pi^T`` (one initial state per sequence);
    * transition logits, row ``i``: ``v_i (diag(A_i) - A_i A_i^T)``, ``v_i`` the expected visits of ``i``
      before the last step;
    * means of state ``k``: ``N_k C_k^{-1}``, ``N_k`` the expected occupancy;
    * covariances of state ``k`` (upper triangle): ``N_k / 2 Dup^T (C_k^{-1} kron C_k^{-1}) Dup``
      (diagonal: ``N_k / (2 sigma^4)``).

    Parameters
    ----------
    startprob : ndarray of shape (K,)
    transmat : ndarray of shape (K, K)
    covariances : ndarray of shape (K, D, D)
    occupancy : ndarray of shape (K,)
        Expected ``sum_t P(s_t = k)`` per sequence (e.g. averaged over the training sequences).
    visits : ndarray of shape (K,)
        Expected ``sum_{t < T} P(s_t = k)`` per sequence.
    covariance_type : {"full", "diag"}
    parameters : sequence of str

    Returns
    -------
    list of ndarray
        One square matrix per score block, in the order of :func:`hmm_scores` (per state
        for the mean and covariance blocks).

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(50, 2))
    >>> startprob, transmat = np.full(2, 0.5), np.full((2, 2), 0.5)
    >>> means, covariances = np.zeros((2, 2)), np.stack([np.eye(2)] * 2)
    >>> from bnfisher.hmm import complete_information
    >>> blocks = complete_information(startprob, transmat, covariances, occupancy=np.full(2, 25.0),
    ...                               visits=np.full(2, 24.5))
    >>> [block.shape for block in blocks][:2]
    [(2, 2), (2, 2)]
    """
    K, D = covariances.shape[0], covariances.shape[1]
    out = []
    for name in parameters:
        if name == "startprob":
            out.append(np.diag(startprob) - np.outer(startprob, startprob))
        elif name == "transmat":
            out.extend(visits[i] * (np.diag(transmat[i]) - np.outer(transmat[i], transmat[i])) for i in range(K))
        elif name == "means":
            out.extend(occupancy[k] * np.linalg.inv(covariances[k]) for k in range(K))
        elif name == "covars":
            for k in range(K):
                if covariance_type == "diag":
                    out.append(np.diag(occupancy[k] / (2 * np.diag(covariances[k]) ** 2)))
                else:
                    inverse = np.linalg.inv(covariances[k])
                    dup = _duplication(D)
                    out.append(0.5 * occupancy[k] * dup.T @ np.kron(inverse, inverse) @ dup)
    return out


def floor_covariances(covariances: np.ndarray, floor: float) -> np.ndarray:
    """Raise every eigenvalue of every covariance to at least ``floor`` (symmetrised)."""
    values, vectors = np.linalg.eigh(0.5 * (covariances + np.swapaxes(covariances, 1, 2)))
    return np.einsum("kij,kj,klj->kil", vectors, np.maximum(values, floor), vectors)


def inverse_root(matrix: np.ndarray) -> np.ndarray:
    """Symmetric ``M^{+1/2}``: the pseudo-inverse square root (logit blocks have a null direction)."""
    values, vectors = np.linalg.eigh(matrix)
    keep = values > 1e-12 * max(values.max(), 1e-300)
    scaled = np.where(keep, 1.0 / np.sqrt(np.where(keep, values, 1.0)), 0.0)
    return (vectors * scaled) @ vectors.T
