"""The HMM job: the Fisher kernel of a Gaussian HMM between sequences read from a ``.npz`` archive."""

from __future__ import annotations

import io
import os

import numpy as np

from bnfisher.data.io import write_bytes
from bnfisher.exceptions import DataError

__all__ = ["hmm_gram_file", "read_sequences"]


def read_sequences(path: str | os.PathLike) -> tuple:
    """Read sequences from a ``.npz`` archive: ``X`` and ``lengths``, or one array per sequence.

    Parameters
    ----------
    path : str or path-like

    Returns
    -------
    sequences : ndarray or list of ndarray
    lengths : ndarray or None

    Raises
    ------
    DataError
        For a file that is not a ``.npz`` archive (a ``.npy`` array is named as such).
    """
    try:
        loaded = np.load(path, allow_pickle=False)
    except (ValueError, OSError, EOFError) as exc:
        raise DataError(f"Cannot read {os.fspath(path)!r} as a .npz archive of sequences: {exc}") from None
    if isinstance(loaded, np.ndarray):
        raise DataError(f"{os.fspath(path)!r} is one array (.npy); give a .npz archive with X and lengths, or one "
                        "array per sequence (numpy.savez).")
    with loaded as archive:
        if "X" in archive and "lengths" in archive:
            return archive["X"], archive["lengths"]
        return [archive[name] for name in archive.files], None


def hmm_gram_file(sequences_path, output, **kernel_options) -> str:
    """Fit a Gaussian HMM to the sequences, write their Fisher kernel (``.npy``) to ``output``, say what was done.

    Parameters
    ----------
    sequences_path : str or path-like
        A ``.npz`` archive (:func:`read_sequences`).
    output : str or path-like
        Written exactly as given (NumPy ``.npy`` format), atomically.
    **kernel_options
        Options of :class:`bnfisher.sklearn.HMMFisherKernel` (``n_states``, ``covariance_type``, ...).

    Returns
    -------
    str
        The fit's log-likelihoods and the file written.
    """
    sequences, lengths = read_sequences(sequences_path)
    from bnfisher.sklearn.hmm import HMMFisherKernel  # scikit-learn, an optional extra: loaded when used

    kernel = HMMFisherKernel(**kernel_options).fit(sequences, lengths=lengths)
    gram = kernel.gram(sequences, lengths_a=lengths)
    buffer = io.BytesIO()
    np.save(buffer, gram)
    write_bytes(output, buffer.getvalue())  # exactly the path given (np.save would append .npy)
    return (f"HMM with {kernel.n_states} states: log-likelihood {kernel.log_likelihood_:.6g} "
            f"(starts: {', '.join(f'{v:.6g}' for v in kernel.init_log_likelihoods_)})\n"
            f"Wrote the {gram.shape[0]} x {gram.shape[1]} Fisher kernel to {output} (NumPy .npy format)")
