"""
Missing values: the marginalized kernel
=======================================

A missing cell is neither dropped nor imputed: the kernel *marginalizes* it (Sec. 8 of the paper),
``K(x, x') = Σ P(h | x) P(h' | x') K(z, z')``, which with the exact feature map is the inner product of
the rows' *expected* embeddings.  Here 10% of the cells of a *nursery* sample are hidden at random and
the kernel of the incomplete rows is set against the kernel of the same rows complete.
"""

# %%
# Hide 10% of the cells
# ---------------------
import matplotlib.pyplot as plt
import numpy as np

import bnfisher as bf
from bnfisher.datasets import load

rng = np.random.default_rng(0)
complete = load("nursery").sample(2000, random_state=0).reset_index(drop=True)
holes = complete.copy()
mask = rng.random(holes.shape) < 0.10
for j, column in enumerate(holes.columns):
    holes.loc[mask[:, j], column] = np.nan
print(f"{mask.sum()} cells missing; {mask.any(axis=1).sum()} of {len(holes)} rows incomplete")

# %%
# Learn with structural EM, then the kernel
# -----------------------------------------
# ``learn`` sees the missing cells and runs structural EM (``network.learning_`` says what it did).
network = bf.learn(holes, "chow-liu")
print(network.learning_)
kernel = bf.FisherKernel(network)

# %%
# Marginalized against complete
# -----------------------------
# Kernel values between 300 rows, computed once from the complete rows and once from the incomplete
# rows (their expected embeddings).  Pairs of complete rows lie on the diagonal; a missing cell pulls
# its row's values towards what the network expects.
rows = slice(0, 300)
K_complete = kernel.gram(complete.iloc[rows])
K_holes = kernel.gram(holes.iloc[rows])
incomplete = mask[rows].any(axis=1)
pair_incomplete = incomplete[:, None] | incomplete[None, :]
upper = np.triu_indices(300, 1)
fig, ax = plt.subplots(figsize=(5.5, 5))
ax.scatter(K_complete[upper][~pair_incomplete[upper]], K_holes[upper][~pair_incomplete[upper]], s=3,
           label="both rows complete", alpha=0.5)
ax.scatter(K_complete[upper][pair_incomplete[upper]], K_holes[upper][pair_incomplete[upper]], s=3,
           label="a row with a missing cell", alpha=0.5)
lims = [K_complete[upper].min(), K_complete[upper].max()]
ax.plot(lims, lims, color="black", linewidth=0.8)
ax.set_xlabel("K(x, x') from the complete rows")
ax.set_ylabel("marginalized K(x, x') from the incomplete rows")
ax.legend(fontsize=8)
fig.tight_layout()
plt.show()

# %%
# The same holds for whole data sets: the MMD² between the incomplete table and the complete one comes
# from expected count tables.  Set it beside the MMD² between two random halves of the complete table.
print(f"MMD² incomplete vs complete:         {kernel.mmd(holes, complete):.4f}")
print(f"MMD² two random halves (complete): {kernel.mmd(complete.iloc[:1000], complete.iloc[1000:]):.4f}")
