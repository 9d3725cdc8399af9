"""Fisher kernel of a Gaussian hidden Markov model for time series.

Each sequence ``x_{1:T}`` is mapped to the gradient (score) of its exact
log-likelihood ``log p(x_{1:T} | w)`` -- computed by the forward algorithm, not a
variational bound -- with respect to the HMM parameters ``w = (pi, A, m_k, C_k)``:

* initial probabilities, softmax-logit form: ``gamma_i(1) - pi_i``
  (raw form ``gamma_i(1) / pi_i``);
* transitions, row-wise softmax logits: ``n_ij - A_ij n_i`` with
  ``n_ij = sum_t xi_ij(t)``, ``n_i = sum_j n_ij`` (raw ``n_ij / A_ij``);
* means: ``C_k^{-1} sum_t gamma_k(t) (x_t - m_k)``;
* covariances: ``G_k = 1/2 C_k^{-1} (S_k - N_k C_k) C_k^{-1}`` with
  ``N_k = sum_t gamma_k(t)``, ``S_k = sum_t gamma_k(t) (x_t - m_k)(x_t - m_k)^T``.
  Full covariances are parametrised by their upper triangle (a symmetric matrix
  has one parameter per pair), so the score is ``G_ii`` on the diagonal and
  ``2 G_ij`` off it; diagonal covariances give ``G_kdd``.

The note this module follows has two slips that are fixed here: its eq. 10 has
the wrong sign for the mean gradient and its eq. 13 an extra factor 1/2.

The kernel is ``s(x)^T s(y)`` (``information="identity"``) or ``s(x)^T I^{-1} s(y)``
with ``I`` the ridge-regularised empirical Fisher information of the training
sequences (``information="empirical"``).
"""

from __future__ import annotations

import numpy as np
from scipy.linalg import cho_factor, cho_solve, solve_triangular

from ._sklearn import BaseEstimator, TransformerMixin, check_is_fitted
from ._validation import check_nonnegative_float, check_option, check_positive_int, check_random_state
from .exceptions import DataError

__all__ = ["HMMFisherKernel", "forward_backward", "hmm_scores", "log_emissions"]

PARAMETERS = ("startprob", "transmat", "means", "covars")



# --------------------------------------------------------------- sequences
def _split(sequences, lengths=None) -> list:
    """Return a list of (T_i, D) arrays, from a list or from one array and ``lengths`` (hmmlearn style)."""
    if lengths is None:
        if isinstance(sequences, np.ndarray) and sequences.ndim == 2:
            out = [sequences]
        else:
            out = [np.asarray(s, dtype=np.float64) for s in sequences]
    else:
        array = np.asarray(sequences, dtype=np.float64)
        lengths = np.asarray(lengths, dtype=np.int64)
        if lengths.sum() != array.shape[0]:
            raise DataError(f"`lengths` sum to {lengths.sum()} but the array has {array.shape[0]} rows.")
        out = np.split(array, np.cumsum(lengths)[:-1])
    out = [np.asarray(s, dtype=np.float64) for s in out]
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


def _full_covariances(covars: np.ndarray, covariance_type: str, n_states: int, n_dims: int) -> np.ndarray:
    if covariance_type == "full":
        return np.asarray(covars, dtype=np.float64).reshape(n_states, n_dims, n_dims)
    diagonal = np.asarray(covars, dtype=np.float64).reshape(n_states, -1)
    if diagonal.shape[1] == n_dims * n_dims:  # hmmlearn's covars_ property gives full matrices
        return diagonal.reshape(n_states, n_dims, n_dims)
    return np.stack([np.diag(d) for d in diagonal])


# --------------------------------------------------------- forward-backward
def log_emissions(X: np.ndarray, means: np.ndarray, covariances: np.ndarray) -> np.ndarray:
    """``log N(x_t | m_k, C_k)`` for every time step and state, shape (..., T, K), via Cholesky factors.

    Parameters
    ----------
    X : ndarray of shape (T, D)
    means : ndarray of shape (K, D)
    covariances : ndarray of shape (K, D, D)

    Returns
    -------
    ndarray of shape (T, K)
    """
    D = X.shape[-1]
    out = np.empty(X.shape[:-1] + (means.shape[0],))
    flat = X.reshape(-1, D)
    for k, (mean, covariance) in enumerate(zip(means, covariances)):
        factor = np.linalg.cholesky(covariance)
        z = solve_triangular(factor, (flat - mean).T, lower=True)
        values = -0.5 * (D * np.log(2 * np.pi) + 2 * np.log(np.diag(factor)).sum() + (z * z).sum(axis=0))
        out[..., k] = values.reshape(X.shape[:-1])
    return out


def forward_backward(X: np.ndarray, startprob: np.ndarray, transmat: np.ndarray, means: np.ndarray,
                     covariances: np.ndarray):
    """Exact posteriors of a Gaussian HMM for one sequence, or a batch of equal-length ones.

    Scaled forward-backward: each step's emission likelihoods are divided by their
    maximum and each forward vector by its sum, with the logs of both kept, so
    nothing underflows and ``log p(x)`` is exact.  A batch runs the time loop once
    for all its sequences.

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
    """
    single = X.ndim == 2
    X = X[None] if single else X
    log_b = log_emissions(X, means, covariances)  # (B, T, K)
    shift = log_b.max(axis=2, keepdims=True)
    b = np.exp(log_b - shift)
    B, T, K = b.shape
    alpha = np.empty((B, T, K))
    scale = np.empty((B, T))
    a = startprob * b[:, 0]
    scale[:, 0] = a.sum(axis=1)
    alpha[:, 0] = a / scale[:, :1]
    for t in range(1, T):
        a = (alpha[:, t - 1] @ transmat) * b[:, t]
        scale[:, t] = a.sum(axis=1)
        alpha[:, t] = a / scale[:, t, None]
    beta = np.empty((B, T, K))
    beta[:, -1] = 1.0
    for t in range(T - 2, -1, -1):
        beta[:, t] = (b[:, t + 1] * beta[:, t + 1]) @ transmat.T / scale[:, t + 1, None]
    gamma = alpha * beta
    gamma /= gamma.sum(axis=2, keepdims=True)
    # xi_t(i, j) = alpha_t(i) A_ij b_{t+1}(j) beta_{t+1}(j) / c_{t+1}, summed over t in one product.
    weighted = b[:, 1:] * beta[:, 1:] / scale[:, 1:, None]
    xi_sum = transmat * np.einsum("bti,btj->bij", alpha[:, :-1], weighted)
    log_likelihood = np.log(scale).sum(axis=1) + shift[..., 0].sum(axis=1)
    if single:
        return float(log_likelihood[0]), gamma[0], xi_sum[0]
    return log_likelihood, gamma, xi_sum


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
    """
    _, gamma, xi_sum = forward_backward(X, startprob, transmat, means, covariances)
    return _scores_from_posteriors(X, gamma, xi_sum, startprob, transmat, means, covariances, covariance_type,
                                   parameters, form)


def _scores_from_posteriors(X, gamma, xi_sum, startprob, transmat, means, covariances, covariance_type,
                            parameters, form) -> np.ndarray:
    blocks = []
    for name in parameters:
        if name == "startprob":
            first = gamma[0]
            blocks.append(first - startprob if form == "logit" else first / startprob)
        elif name == "transmat":
            visits = xi_sum.sum(axis=1, keepdims=True)
            with np.errstate(divide="ignore", invalid="ignore"):  # raw form at A_ij = 0 is undefined: 0
                raw = np.where(transmat > 0, xi_sum / transmat, 0.0)
            blocks.append((xi_sum - transmat * visits if form == "logit" else raw).ravel())
        elif name == "means":
            for k in range(means.shape[0]):
                residual = gamma[:, k] @ (X - means[k])
                blocks.append(cho_solve(cho_factor(covariances[k]), residual))
        elif name == "covars":
            D = X.shape[1]
            rows, cols = np.triu_indices(D)
            for k in range(means.shape[0]):
                centred = X - means[k]
                occupancy = gamma[:, k].sum()
                if covariance_type == "diag":
                    variance = np.diag(covariances[k])
                    spread = gamma[:, k] @ (centred**2)
                    # d/d sigma^2: 1/2 sum_t gamma (r^2 / sigma^4 - 1 / sigma^2)
                    blocks.append(0.5 * (spread / variance**2 - occupancy / variance))
                else:
                    inverse = np.linalg.inv(covariances[k])
                    spread = (centred * gamma[:, k, None]).T @ centred
                    gradient = 0.5 * inverse @ (spread - occupancy * covariances[k]) @ inverse
                    # Upper-triangle parametrisation: off-diagonal entries appear twice in C.
                    blocks.append(np.where(rows == cols, 1.0, 2.0) * gradient[rows, cols])
        else:
            raise DataError(f"Unknown parameter block {name!r}; use {PARAMETERS}.")
    return np.concatenate([np.atleast_1d(b) for b in blocks])


# ----------------------------------------------------------------- estimator
class HMMFisherKernel(TransformerMixin, BaseEstimator):
    """Fisher-score features and kernel of a Gaussian HMM fitted to sequences.

    Parameters
    ----------
    n_states : int, default=3
    covariance_type : {"full", "diag"}, default="full"
    parameters : "all" or sequence of str, default="all"
        Score blocks among ``"startprob", "transmat", "means", "covars"``.
    information : {"identity", "empirical"}, default="identity"
        ``"identity"``: the practical kernel ``s^T s``.  ``"empirical"``: whiten by
        the empirical Fisher information of the training sequences (ridge
        ``ridge * trace / p`` added), so the kernel approximates ``s^T I^{-1} s``.
    normalize : {None, "l2", "standardize"}, default=None
        Scale each feature vector to unit length, or z-score every feature with
        the training sequences' mean and sd (fitted in ``fit`` only).
    n_init : int, default=5
        HMM fits from different starts (k-means++ and random); the best
        log-likelihood is kept.
    n_iter : int, default=100
        EM iterations per start.
    tol : float, default=1e-3
    ridge : float, default=1e-3
    form : {"logit", "raw"}, default="logit"
    random_state : None or int

    Attributes
    ----------
    model_ : hmmlearn.hmm.GaussianHMM
        The best fitted HMM.
    log_likelihood_ : float
        Its total log-likelihood on the training sequences.
    init_log_likelihoods_ : list of float
        The log-likelihood reached from every start.
    startprob_, transmat_, means_, covariances_ : ndarray
        Its parameters (covariances as full matrices).
    n_features_out_ : int

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> sequences = [rng.normal(size=(100, 2)) + (i % 2) for i in range(6)]
    >>> kernel = HMMFisherKernel(n_states=2, n_init=2, random_state=0).fit(sequences)
    >>> kernel.transform(sequences).shape
    (6, 16)
    """

    def __init__(self, *, n_states: int = 3, covariance_type: str = "full", parameters="all",
                 information: str = "identity", normalize=None, n_init: int = 5, n_iter: int = 100,
                 tol: float = 1e-3, ridge: float = 1e-3, form: str = "logit", random_state=None):
        self.n_states = n_states
        self.covariance_type = covariance_type
        self.parameters = parameters
        self.information = information
        self.normalize = normalize
        self.n_init = n_init
        self.n_iter = n_iter
        self.tol = tol
        self.ridge = ridge
        self.form = form
        self.random_state = random_state

    def _blocks(self) -> tuple:
        if self.parameters == "all":
            return PARAMETERS
        blocks = tuple(self.parameters)
        for name in blocks:
            check_option(name, "parameters", PARAMETERS)
        if not blocks:
            raise DataError("`parameters` must name at least one block.")
        return blocks

    def _fit_hmm(self, X: np.ndarray, lengths: list):
        try:
            from hmmlearn.hmm import GaussianHMM
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise ImportError("Fitting needs hmmlearn: pip install 'bnfisher[hmm]'.") from exc
        rng = check_random_state(self.random_state)
        K = check_positive_int(self.n_states, "n_states")
        best, scores = None, []
        for start in range(check_positive_int(self.n_init, "n_init")):
            seed = int(rng.integers(2**31 - 1))
            model = GaussianHMM(n_components=K, covariance_type=self.covariance_type, n_iter=self.n_iter,
                                tol=self.tol, random_state=seed, init_params="stmc" if start % 2 == 0 else "")
            if start % 2 == 1:
                # Random start: K distinct observations as means, the pooled covariance for every state,
                # sticky transitions.  Complements hmmlearn's k-means start, which can merge states.
                local = np.random.default_rng(seed)
                model.startprob_ = np.full(K, 1.0 / K)
                model.transmat_ = np.full((K, K), 0.1 / max(K - 1, 1)) + np.eye(K) * (0.9 - 0.1 / max(K - 1, 1))
                model.means_ = X[local.choice(len(X), size=K, replace=False)]
                pooled = np.cov(X.T).reshape(X.shape[1], X.shape[1]) + 1e-6 * np.eye(X.shape[1])
                model.covars_ = (np.stack([pooled] * K) if self.covariance_type == "full"
                                 else np.tile(np.diag(pooled), (K, 1)))
            import warnings

            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # hmmlearn warns about non-monotone EM steps
                model.fit(X, lengths)
            score = float(model.score(X, lengths))
            scores.append(score)
            if best is None or score > best[0]:
                best = (score, model)
        return best[1], best[0], scores

    def fit(self, sequences, y=None, lengths=None):
        """Fit the HMM (best of ``n_init`` starts) and the feature normalisers; returns self.

        Parameters
        ----------
        sequences : list of ndarray of shape (T_i, D), or ndarray of shape (sum T_i, D)
        y : ignored
        lengths : sequence of int, optional
            Sequence lengths when ``sequences`` is one stacked array (hmmlearn style).

        Returns
        -------
        self
        """
        check_option(self.covariance_type, "covariance_type", ("full", "diag"))
        check_option(self.information, "information", ("identity", "empirical"))
        check_option(self.normalize, "normalize", (None, "l2", "standardize"))
        check_option(self.form, "form", ("logit", "raw"))
        check_positive_int(self.n_iter, "n_iter")
        check_nonnegative_float(self.tol, "tol")
        check_nonnegative_float(self.ridge, "ridge", strictly_positive=True)
        self._blocks()
        parts = _split(sequences, lengths)
        X = np.vstack(parts)
        constant = np.flatnonzero(np.ptp(X, axis=0) == 0)
        if constant.size:
            raise DataError(f"Channel {int(constant[0])} is constant over all sequences; a Gaussian HMM needs "
                            "variation in every channel (drop it, or add noise).")
        try:
            self.model_, self.log_likelihood_, self.init_log_likelihoods_ = self._fit_hmm(X, [len(p) for p in parts])
        except np.linalg.LinAlgError as exc:
            raise DataError(f"The HMM fit degenerated ({exc}): a state collapsed on too few points. Use fewer "
                            "states (`n_states`) or more data.") from None
        K, D = self.model_.means_.shape
        self.startprob_ = np.array(self.model_.startprob_)
        self.transmat_ = np.array(self.model_.transmat_)
        self.means_ = np.array(self.model_.means_)
        self.covariances_ = _full_covariances(self.model_.covars_, self.covariance_type, K, D)
        scores = self._raw_scores(parts)
        self.n_features_in_ = D
        self.n_features_out_ = scores.shape[1]
        self.whitening_ = None
        if self.information == "empirical":
            information = scores.T @ scores / len(scores)
            information += self.ridge * (np.trace(information) / len(information) + 1e-12) * np.eye(len(information))
            values, vectors = np.linalg.eigh(information)
            self.whitening_ = vectors / np.sqrt(values)  # s^T W W^T s = s^T I^{-1} s
            scores = scores @ self.whitening_
        if self.normalize == "standardize":
            self.mean_ = scores.mean(axis=0)
            self.scale_ = scores.std(axis=0)
            self.scale_[self.scale_ == 0] = 1.0
        return self

    def _raw_scores(self, parts: list) -> np.ndarray:
        # Sequences of equal length share one batched forward-backward (one time loop for all).
        out: list = [None] * len(parts)
        by_length: dict = {}
        for i, s in enumerate(parts):
            by_length.setdefault(s.shape[0], []).append(i)
        parameters = (self.startprob_, self.transmat_, self.means_, self.covariances_)
        for members in by_length.values():
            for first in range(0, len(members), 64):  # bounded memory per batch
                group = members[first : first + 64]
                batch = np.stack([parts[i] for i in group])
                _, gamma, xi_sum = forward_backward(batch, *parameters)
                for row, i in enumerate(group):
                    out[i] = _scores_from_posteriors(parts[i], gamma[row], xi_sum[row], *parameters,
                                                     self.covariance_type, self._blocks(), self.form)
        return np.stack(out)

    def transform(self, sequences, lengths=None) -> np.ndarray:
        """One Fisher-score feature vector per sequence, shape (n_sequences, n_features_out_).

        Parameters
        ----------
        sequences : list of ndarray or ndarray
        lengths : sequence of int, optional

        Returns
        -------
        ndarray of shape (n_sequences, n_features_out_)
        """
        check_is_fitted(self, "model_")
        parts = _split(sequences, lengths)
        if parts[0].shape[1] != self.n_features_in_:
            raise DataError(f"Sequences have {parts[0].shape[1]} channels; the HMM was fitted with "
                             f"{self.n_features_in_}.")
        features = self._raw_scores(parts)
        if self.whitening_ is not None:
            features = features @ self.whitening_
        if self.normalize == "standardize":
            features = (features - self.mean_) / self.scale_
        elif self.normalize == "l2":
            norms = np.linalg.norm(features, axis=1, keepdims=True)
            features = features / np.where(norms > 0, norms, 1.0)
        return features

    def gram(self, A, B=None, lengths_a=None, lengths_b=None) -> np.ndarray:
        """Kernel matrix between two collections of sequences (``B`` defaults to ``A``).

        Parameters
        ----------
        A, B : list of ndarray or ndarray
            Sequences (``B`` defaults to ``A``).
        lengths_a, lengths_b : sequence of int, optional

        Returns
        -------
        ndarray of shape (n_sequences_A, n_sequences_B)
        """
        FA = self.transform(A, lengths_a)
        FB = FA if B is None else self.transform(B, lengths_b)
        return FA @ FB.T

    def score_sequences(self, sequences, lengths=None) -> np.ndarray:
        """Exact log-likelihood of every sequence under the fitted HMM (forward algorithm).

        Parameters
        ----------
        sequences : list of ndarray or ndarray
        lengths : sequence of int, optional

        Returns
        -------
        ndarray of shape (n_sequences, n_features_out_)
        """
        return np.array([forward_backward(s, self.startprob_, self.transmat_, self.means_, self.covariances_)[0]
                         for s in _split(sequences, lengths)])
