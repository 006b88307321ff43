"""Reference figures for test/review/raters.test.ts, computed once and committed as raters-vectors.json.

Fleiss' kappa by statsmodels; Krippendorff's alpha by the coincidence-matrix method of the `krippendorff`
package (reimplemented here with NumPy, as that package's reference algorithm), checked on Krippendorff's
own published example. Run: python raters-reference.py > raters-vectors.json (numpy, statsmodels)."""

import json

import numpy as np
from statsmodels.stats.inter_rater import aggregate_raters, fleiss_kappa

NAN = float("nan")


def alpha(reliability, level):
    """reliability: coders x units, NaN where missing."""
    data = np.asarray(reliability, dtype=float)
    values = np.unique(data[~np.isnan(data)])
    index = {v: i for i, v in enumerate(values)}
    k = len(values)
    o = np.zeros((k, k))
    for unit in data.T:
        present = [index[v] for v in unit if not np.isnan(v)]
        m = len(present)
        if m < 2:
            continue
        for a in range(m):
            for b in range(m):
                if a != b:
                    o[present[a], present[b]] += 1 / (m - 1)
    n_c = o.sum(axis=1)
    n = n_c.sum()
    d = np.zeros((k, k))
    for c in range(k):
        for e in range(k):
            if level == "nominal":
                d[c, e] = 0.0 if c == e else 1.0
            elif level == "interval":
                d[c, e] = (values[c] - values[e]) ** 2
            else:
                lo, hi = min(c, e), max(c, e)
                d[c, e] = (n_c[lo : hi + 1].sum() - (n_c[c] + n_c[e]) / 2) ** 2
    observed = (o * d).sum()
    expected = (np.outer(n_c, n_c) * d).sum()
    return float(1 - (n - 1) * observed / expected)


def units_of(reliability):
    data = np.asarray(reliability, dtype=float)
    return [[float(v) for v in unit if not np.isnan(v)] for unit in data.T]


def case(name, reliability):
    units = units_of(reliability)
    out = {
        "name": name,
        "units": units,
        "alpha_nominal": alpha(reliability, "nominal"),
        "alpha_ordinal": alpha(reliability, "ordinal"),
        "alpha_interval": alpha(reliability, "interval"),
    }
    if all(len(u) == len(units[0]) for u in units):
        table, _ = aggregate_raters(np.asarray(units, dtype=float))
        out["fleiss_kappa"] = float(fleiss_kappa(table, method="fleiss"))
    return out


# Krippendorff (2011), "Computing Krippendorff's alpha-reliability": 4 coders, 12 units, some missing.
krippendorff_example = [
    [1, 2, 3, 3, 2, 1, 4, 1, 2, NAN, NAN, NAN],
    [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, NAN, 3],
    [NAN, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, NAN],
    [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, NAN],
]

# Fleiss (1971) as usually tabulated: 10 subjects, 14 raters, 5 categories (counts per category).
fleiss_counts = [
    [0, 0, 0, 0, 14],
    [0, 2, 6, 4, 2],
    [0, 0, 3, 5, 6],
    [0, 3, 9, 2, 0],
    [2, 2, 8, 1, 1],
    [7, 7, 0, 0, 0],
    [3, 2, 6, 3, 0],
    [2, 5, 3, 2, 2],
    [6, 5, 2, 1, 0],
    [0, 2, 2, 3, 7],
]
fleiss_units = [[float(c + 1) for c, n in enumerate(row) for _ in range(n)] for row in fleiss_counts]
fleiss_reliability = np.array(fleiss_units).T

# Three reviewers grading 40 items from 1 to 5, seeded: each near a true grade, some one off.
rng = np.random.default_rng(48)
truth = rng.integers(1, 6, 40)
three = np.clip(truth + rng.choice([-1, 0, 0, 0, 1], size=(3, 40)), 1, 5).astype(float)
# A fourth reviewer on every other item: varying reviewers per item.
fourth = np.where(np.arange(40) % 2 == 0, np.clip(truth + rng.choice([-1, 0, 1], 40), 1, 5), NAN)
four = np.vstack([three, fourth])

print(
    json.dumps(
        [
            case("krippendorff-2011", krippendorff_example),
            case("fleiss-1971", fleiss_reliability),
            case("three-reviewers", three),
            case("three-or-four-reviewers", four),
        ],
        indent=1,
    )
)
