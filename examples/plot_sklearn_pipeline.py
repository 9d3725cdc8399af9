"""
The Fisher embedding in a scikit-learn pipeline
===============================================

``FisherEmbedding`` is a scikit-learn transformer: ``fit`` learns the network, ``transform`` returns
the exact sparse feature map, so a linear model on it is a kernel machine with the Fisher kernel at
linear cost in the rows.  Here it is cross-validated on *nursery* beside a one-hot encoding, in the
same pipeline and folds.
"""

# %%
import matplotlib.pyplot as plt
import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import StratifiedKFold, cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder

from bnfisher.datasets import load
from bnfisher.sklearn import FisherEmbedding

data = load("nursery").sample(4000, random_state=0)
X, y = data.drop(columns="class"), data["class"].astype(str)
folds = StratifiedKFold(5, shuffle=True, random_state=0)
pipelines = {
    "Fisher embedding + LR": make_pipeline(FisherEmbedding(structure="chow-liu"), LogisticRegression(max_iter=2000)),
    "one-hot + LR": make_pipeline(OneHotEncoder(handle_unknown="ignore"), LogisticRegression(max_iter=2000)),
}
scores = {name: cross_val_score(pipeline, X, y, cv=folds) for name, pipeline in pipelines.items()}
for name, values in scores.items():
    print(f"{name:24s} accuracy {values.mean():.3f} ± {values.std(ddof=1):.3f}")

# %%
# Five folds, the same for both
fig, ax = plt.subplots(figsize=(6, 3))
for position, values in enumerate(scores.values()):
    ax.scatter(values, np.full(values.size, position), s=30)
    ax.errorbar(values.mean(), position, xerr=values.std(ddof=1), fmt="|", color="black", markersize=18)
ax.set_yticks(range(len(scores)), list(scores))
ax.set_xlabel("5-fold cross-validated accuracy")
ax.set_ylim(-0.7, len(scores) - 0.3)
fig.tight_layout()
plt.show()
