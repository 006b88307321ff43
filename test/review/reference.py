"""Reference agreement figures for test/review: scikit-learn, SciPy and NumPy on the same pairs.

Reads {"judge": [...], "human": [...], "resamples": n, "seed": s, "items": [...]?} on stdin; writes the figures as
JSON. With "items" (each pair's item), the bootstrap draws items and each drawn item brings all its pairs."""

import json
import sys

import numpy as np
from scipy.stats import pearsonr, spearmanr
from sklearn.metrics import cohen_kappa_score, confusion_matrix

data = json.load(sys.stdin)
judge = np.array(data["judge"], dtype=float)
human = np.array(data["human"], dtype=float)
labels = sorted(set(judge.tolist()) | set(human.tolist()))
rng = np.random.default_rng(data["seed"])
n = len(judge)
items = data.get("items") or list(range(n))
clusters = {}
for k, item in enumerate(items):
    clusters.setdefault(item, []).append(k)
groups = list(clusters.values())
kappas = []
for _ in range(data["resamples"]):
    drawn = rng.integers(0, len(groups), len(groups))
    idx = np.array([k for g in drawn for k in groups[g]])
    a, b = judge[idx], human[idx]
    if len(set(a.tolist()) | set(b.tolist())) > 1:
        kappas.append(cohen_kappa_score(a, b))
out = {
    "percent_agreement": float(np.mean(judge == human)),
    "kappa": float(cohen_kappa_score(judge, human)),
    "weighted_kappa": float(cohen_kappa_score(judge, human, weights="quadratic")),
    "pearson": float(pearsonr(judge, human)[0]),
    "spearman": float(spearmanr(judge, human)[0]),
    "mae": float(np.mean(np.abs(judge - human))),
    "labels": labels,
    "confusion": confusion_matrix(judge, human, labels=labels).tolist(),
    "kappa_interval": [float(np.percentile(kappas, 2.5)), float(np.percentile(kappas, 97.5))],
}
print(json.dumps(out))
