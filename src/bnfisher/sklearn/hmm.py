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

The kernel is ``s(x)^T I^{-1} s(y)`` with ``I`` the expected complete-data Fisher
information, closed form per block (``information="complete"``, the default), the
centred, Ledoit-Wolf shrunk empirical information of the training sequences
(``"empirical"``), or the identity (``"identity"``).

The posteriors come from a compiled forward-backward pass
(:func:`bnfisher.hmm.sequence_statistics`) that takes sequences of any lengths at once and
keeps only the per-sequence sums the scores need.
"""

from __future__ import annotations

import warnings

import numpy as np
from scipy.linalg import block_diag

from bnfisher._utils.validation import check_nonnegative_float, check_option, check_positive_int, check_random_state
from bnfisher.exceptions import DataError
from bnfisher.hmm import sequence_statistics
from bnfisher.hmm.scores import (
    PARAMETERS,
    complete_information,
    full_covariances,
    inverse_root,
    needs_moments,
    scores_from_statistics,
    split_sequences,
)
from bnfisher.hmm.starts import fit_starts
from bnfisher.sklearn._base import BaseEstimator, TransformerMixin, check_is_fitted


# ----------------------------------------------------------------- estimator
class HMMFisherKernel(TransformerMixin, BaseEstimator):
    """Fisher-score features and kernel of a Gaussian HMM fitted to sequences.

    Parameters
    ----------
    n_states : int, default=3
    covariance_type : {"full", "diag"}, default="full"
    parameters : "all" or sequence of str, default="all"
        Score blocks among ``"startprob", "transmat", "means", "covars"``.
    information : {"complete", "identity", "empirical"}, default="complete"
        ``"complete"``: the natural-gradient kernel ``s^T I^{-1} s`` with ``I`` the
        expected *complete-data* Fisher information (closed form per block,
        :func:`complete_information`, at the training sequences' expected state
        occupancies): no p x p matrix is estimated from few sequences, and every
        block is in units of its own information.  Needs ``form="logit"``.
        ``"identity"``: the practical kernel ``s^T s``.  ``"empirical"``: whiten by
        the centred empirical covariance of the training scores with Ledoit-Wolf
        shrinkage (plus ``ridge * trace / p``); a warning says when there are fewer
        training sequences than features.
    normalize : {"blocks", None, "l2", "standardize"}, default="blocks"
        ``"blocks"``: scale every parameter block (initial, transitions, means,
        covariances) so its mean squared norm on the training sequences is 1, so
        each kind of difference weighs the same.  ``"l2"``: unit-length feature
        vectors.  ``"standardize"``: z-score every feature with the training
        sequences' mean and sd.  All are fitted in ``fit`` only.
    n_init : int, default=5
        HMM fits from different starts (k-means, random observations as means, and
        perturbations of the leading start); the best log-likelihood is kept.
        Starts in which a state collapses on fewer than ``D + 1`` expected points,
        or whose fit fails, are rejected.
    check_every : int or None, default=10
        The starts run side by side, ``check_every`` EM iterations at a time; a
        start is abandoned when, gaining per iteration what it gained in its last
        ``check_every`` iterations until ``n_iter``, it would still end more than 5
        nats below the leading start (:mod:`bnfisher.hmm.starts`).  None runs every
        start to the end.
    n_iter : int, default=100
        EM iterations of a start that is not abandoned.
    tol : float, default=1e-3
    ridge : float, default=1e-3
    form : {"logit", "raw"}, default="logit"
    min_covar : float, default=1e-3
        Covariance floor, relative to the mean variance of the channels: added to
        every covariance in every EM step (hmmlearn's ``min_covar``), so the fit,
        ``log_likelihood_`` and the features use the same covariances.
    progress : bool, default=False
        A tqdm bar over the starts.
    random_state : None or int

    Attributes
    ----------
    model_ : hmmlearn.hmm.GaussianHMM
        The best fitted HMM.
    log_likelihood_ : float
        Its total log-likelihood on the training sequences (forward algorithm, the
        features' covariances).
    init_log_likelihoods_ : list of float
        The log-likelihood reached from every start: of a finished start (``-inf``:
        rejected), or the one an abandoned start had reached when it was abandoned.
    block_sizes_ : list of int
        Length of every score block (per state for means and covariances).
    occupancy_, visits_ : ndarray of shape (n_states,)
        Expected state occupancy and visits before the last step, per training
        sequence: the counts behind ``information="complete"``.
    whitening_ : ndarray of shape (n_features_out, n_features_out) or None
        ``I^{-1/2}`` applied to the raw scores: block diagonal for ``"complete"``,
        Ledoit-Wolf for ``"empirical"``, None for ``"identity"``.
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

    References
    ----------
    .. [1] Jaakkola & Haussler (1999). Exploiting generative models in discriminative
       classifiers. NIPS 11.
    .. [2] Ledoit & Wolf (2004). A well-conditioned estimator for large-dimensional
       covariance matrices. J. Multivariate Analysis 88, 365-411.
    """

    def __init__(self, *, n_states: int = 3, covariance_type: str = "full", parameters="all",
                 information: str = "complete", normalize="blocks", n_init: int = 5, check_every: int | None = 10,
                 n_iter: int = 100, tol: float = 1e-3, ridge: float = 1e-3, form: str = "logit",
                 min_covar: float = 1e-3, progress: bool = False, random_state=None):
        self.min_covar = min_covar
        self.progress = progress
        self.n_states = n_states
        self.covariance_type = covariance_type
        self.parameters = parameters
        self.information = information
        self.normalize = normalize
        self.n_init = n_init
        self.check_every = check_every
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

    def _fit_hmm(self, X: np.ndarray, lengths: list, rng: np.random.Generator):
        try:
            import hmmlearn  # noqa: F401
            from threadpoolctl import threadpool_limits  # a scikit-learn dependency
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise ImportError("Fitting needs hmmlearn: pip install 'bnfisher[hmm]'.") from exc
        n_init = check_positive_int(self.n_init, "n_init")
        check_every = None if self.check_every is None else check_positive_int(self.check_every, "check_every")
        D = X.shape[1]
        try:
            # One OpenMP thread for scikit-learn's k-means inside hmmlearn's initialisation: on a few thousand
            # points threads gain nothing, and on a loaded machine their busy-waiting made fits 10x slower.
            with threadpool_limits(limits=1):
                model, value, values, collapsed = fit_starts(
                    X, lengths, n_states=check_positive_int(self.n_states, "n_states"),
                    covariance_type=self.covariance_type, n_init=n_init, check_every=check_every, n_iter=self.n_iter,
                    tol=self.tol, min_covar=self.min_covar, rng=rng,
                    progress=self.progress)
        except ValueError:
            raise DataError(f"Every one of the {n_init} HMM fits failed. Use fewer states (`n_states`) or more "
                            "data.") from None
        if collapsed:
            warnings.warn(f"In every one of the {n_init} HMM fits a state collapsed on fewer than {D + 1} points "
                          "(outliers?); the best of them is kept, with its covariance floored by `min_covar`. "
                          "Consider fewer states (`n_states`) or removing outliers.", UserWarning, stacklevel=3)
        return model, value, values

    def _check_params(self) -> None:
        check_option(self.covariance_type, "covariance_type", ("full", "diag"))
        check_option(self.information, "information", ("complete", "identity", "empirical"))
        check_option(self.normalize, "normalize", ("blocks", None, "l2", "standardize"))
        check_option(self.form, "form", ("logit", "raw"))
        if self.information == "complete" and self.form != "logit":
            raise DataError("information='complete' is the information of the logit parametrisation; use "
                            "form='logit' (or information='identity').")
        check_positive_int(self.n_iter, "n_iter")
        check_nonnegative_float(self.tol, "tol")
        check_nonnegative_float(self.ridge, "ridge", strictly_positive=True)
        check_nonnegative_float(self.min_covar, "min_covar", strictly_positive=True)

    def _whitening(self, scores: np.ndarray, occupancy, visits, blocks):
        """Return the whitening matrix of the chosen information (None for the identity)."""
        if self.information == "complete":
            matrices = complete_information(self.startprob_, self.transmat_, self.covariances_, occupancy, visits,
                                            self.covariance_type, blocks)
            return block_diag(*[inverse_root(m) for m in matrices])
        if self.information == "empirical":
            return self._empirical_whitening(scores)
        return None

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
        self._check_params()
        blocks = self._blocks()
        parts = split_sequences(sequences, lengths)
        X = np.vstack(parts)
        constant = np.flatnonzero(np.ptp(X, axis=0) == 0)
        if constant.size:
            raise DataError(f"Channel {int(constant[0])} is constant over all sequences; a Gaussian HMM needs "
                            "variation in every channel (drop it, or add noise).")
        rng = check_random_state(self.random_state)
        self.model_, self.log_likelihood_, self.init_log_likelihoods_ = self._fit_hmm(X, [len(p) for p in parts], rng)
        K, D = self.model_.means_.shape
        self.startprob_ = np.array(self.model_.startprob_)
        self.transmat_ = np.array(self.model_.transmat_)
        self.means_ = np.array(self.model_.means_)
        self.covariances_ = full_covariances(self.model_.covars_, self.covariance_type, K, D)
        scores, occupancy, visits = self._raw_scores(parts, statistics=True)
        self.n_features_in_ = D
        self.n_features_out_ = scores.shape[1]
        width = D * (D + 1) // 2 if self.covariance_type == "full" else D
        sizes = {"startprob": [K], "transmat": [K] * K, "means": [D] * K, "covars": [width] * K}
        self.block_sizes_ = [size for name in blocks for size in sizes[name]]
        self.occupancy_, self.visits_ = occupancy, visits
        self.whitening_ = self._whitening(scores, occupancy, visits, blocks)
        scores = self._whiten(scores)
        self.block_scale_ = None
        if self.normalize == "blocks":
            kinds = [name for name in blocks for _ in sizes[name]]
            self.block_scale_ = _block_scale(scores, self.block_sizes_, kinds)
        if self.normalize == "standardize":
            self.mean_ = scores.mean(axis=0)
            self.scale_ = scores.std(axis=0)
            self.scale_[self.scale_ == 0] = 1.0
        return self

    def _whiten(self, scores: np.ndarray) -> np.ndarray:
        """Apply ``I^{-1/2}`` (``whitening_``): complete-data or empirical information; identity: nothing."""
        return scores if self.whitening_ is None else scores @ self.whitening_

    def _empirical_whitening(self, scores: np.ndarray) -> np.ndarray:
        """``I^{-1/2}`` from the centred training scores, Ledoit-Wolf shrunk, plus the ridge."""
        n, p = scores.shape
        if n < p:
            warnings.warn(f"information='empirical' estimates a {p} x {p} information matrix from {n} sequences; "
                          "it is shrunk (Ledoit-Wolf) but poorly determined. information='complete' needs no "
                          "estimate.", UserWarning, stacklevel=3)
        from sklearn.covariance import ledoit_wolf

        information, _ = ledoit_wolf(scores, assume_centered=False)
        information += self.ridge * (np.trace(information) / p + 1e-12) * np.eye(p)
        return inverse_root(information)

    def _raw_scores(self, parts: list, statistics: bool = False):
        # One compiled pass over all sequences, whatever their lengths (chunks capped in bytes).
        parameters = (self.startprob_, self.transmat_, self.means_, self.covariances_)
        stats = sequence_statistics(parts, *parameters, moments=needs_moments(self._blocks()))
        scores = scores_from_statistics(stats, *parameters, self.covariance_type, self._blocks(), self.form)
        if statistics:
            # per-sequence averages: occupancy sum_t P(s_t = k), visits before the last step sum_j xi_kj
            return scores, stats["occupancy"].mean(axis=0), stats["xi"].sum(axis=2).mean(axis=0)
        return scores

    def transform(self, sequences, lengths=None) -> np.ndarray:
        """One Fisher-score feature vector per sequence, shape (n_sequences, n_features_out).

        Parameters
        ----------
        sequences : list of ndarray or ndarray
        lengths : sequence of int, optional

        Returns
        -------
        ndarray of shape (n_sequences, n_features_out)
        """
        check_is_fitted(self, "model_")
        parts = split_sequences(sequences, lengths)
        if parts[0].shape[1] != self.n_features_in_:
            raise DataError(f"Sequences have {parts[0].shape[1]} channels; the HMM was fitted with "
                             f"{self.n_features_in_}.")
        features = self._whiten(self._raw_scores(parts))
        if self.normalize == "blocks":
            features = features * self.block_scale_
        elif self.normalize == "standardize":
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
        ndarray of shape (n_sequences,)
        """
        check_is_fitted(self, "model_")
        return sequence_statistics(split_sequences(sequences, lengths), self.startprob_, self.transmat_, self.means_,
                                   self.covariances_, moments=False)["log_likelihood"]


def _block_scale(scores: np.ndarray, block_sizes: list, kinds: list) -> np.ndarray:
    """Return each column's scale: each kind of parameter (all states together) gets mean squared norm 1."""
    ends = np.cumsum(block_sizes)
    starts = ends - np.array(block_sizes)
    scale = np.ones(scores.shape[1])
    for name in dict.fromkeys(kinds):
        columns = np.concatenate([np.arange(a, b) for a, b, kind in zip(starts, ends, kinds) if kind == name])
        energy = float(np.mean(np.sum(scores[:, columns] ** 2, axis=1)))
        scale[columns] = 1.0 / np.sqrt(energy) if energy > 0 else 1.0
    return scale
