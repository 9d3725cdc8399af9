"""
Time series: groups that differ in state persistence
====================================================

``HMMFisherKernel`` fits a Gaussian hidden Markov model to every sequence of a group and maps each
sequence to its Fisher score (the gradient of its log-likelihood), whitened by the complete-data Fisher
information.  Two groups of sequences that differ *only* in how long the hidden states persist separate
in that space, although their means and covariances are the same.  (Needs the ``[hmm]`` extra.)
"""

# %%
import matplotlib.pyplot as plt
import numpy as np
from sklearn.decomposition import PCA

from bnfisher.sklearn import HMMFisherKernel

rng = np.random.default_rng(0)
K, D, T = 3, 2, 400
means = rng.normal(scale=1.5, size=(K, D))


def sequence(stay):
    """One sequence of a K-state Gaussian HMM whose states persist with probability ``stay``."""
    transition = np.full((K, K), (1 - stay) / (K - 1)) + np.eye(K) * (stay - (1 - stay) / (K - 1))
    states = np.empty(T, dtype=int)
    states[0] = rng.integers(K)
    for t in range(1, T):
        states[t] = rng.choice(K, p=transition[states[t - 1]])
    return means[states] + rng.normal(size=(T, D))


sequences = [sequence(0.97) for _ in range(20)] + [sequence(0.85) for _ in range(20)]
group = np.repeat([0, 1], 20)

# %%
# Fisher scores, then two principal components
kernel = HMMFisherKernel(n_states=K, n_init=2, random_state=0).fit(sequences)
features = kernel.transform(sequences)
print(features.shape, "features; kernel matrix:", kernel.gram(sequences).shape if hasattr(kernel, "gram") else "")
coordinates = PCA(2).fit_transform(features)
fig, ax = plt.subplots(figsize=(5.5, 4.5))
for value, name in ((0, "states persist (0.97)"), (1, "states switch (0.85)")):
    ax.scatter(*coordinates[group == value].T, label=name)
ax.set_xlabel("first principal component of the Fisher scores")
ax.set_ylabel("second")
ax.legend(fontsize=8)
fig.tight_layout()
plt.show()
