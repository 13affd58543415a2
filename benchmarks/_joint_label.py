"""Study prototypes (NOT library mechanisms): the label bound released JOINTLY with the label centre
(``joint_target``) or with the row bound (``joint_row_target``, the proposal of benchmarks/results/label_atoms.md,
"Follow-up", section 4: ``U(r, t) = min(u_row(r), u_upper(t))`` over the pairs of the unsigned grid, the centre
released before as now). Below: the centre version.

One selection over the pairs ``(c, t)`` of the centre's signed grid and the bound's unsigned grid, with utility
``U(c, t) = min(u_c(c), u_t(c, t))``: ``u_c`` the centre's median utility over y (the library's quantile
utility), ``u_t(c, .)`` the upper rule's level-``q`` utility over ``|y - c|`` (ties at 0). Each has sensitivity 1
under replace-one neighbours (for a fixed pair, one row moves one value), so their minimum has sensitivity 1, and
permute-and-flip (report-noisy-max with exponential noise, its equivalent form) over the pairs at ``epsilon_c +
epsilon_t`` is (epsilon_c + epsilon_t)-DP: the same pure total as the two separate releases (delta = 0 only: at
delta > 0 the zCDP reading of one mechanism at the sum is larger than the two parts').

Why: a pair is selected only when BOTH utilities are near their best, so each estimate sees the joint rank budget
``n (epsilon_c + epsilon_t)`` instead of its own part (the competing pairs multiply the candidates by the number
of near-best cells of the other coordinate: a few ranks). Plugged into ``ScalePlan.release`` by ``install()``
for a label-bound target whose ``values`` is :func:`joint_marker`.
"""

import dataclasses
import math

import numpy as np

import sklearn_dpsco.linear_model._auto_scales as A


def joint_marker(data, released):  # never called: the marker of a jointly released bound
    raise AssertionError("released jointly")


def _utility(counts, n, q):
    k = min(n, max(1, math.ceil(q * n)))
    counts = np.array(counts, dtype=np.int64)
    counts[..., -1] = n
    below = np.concatenate([np.zeros(counts.shape[:-1] + (1,), np.int64), counts[..., :-1]], axis=-1)
    return -np.maximum(np.maximum(below - (k - 1), k - counts), 0)


def joint_utility(y, cpts, tpts, q=0.8):
    """``U[i, j] = min(u_c(cpts[i]), u_t(cpts[i], tpts[j]))`` (int64)."""
    ys = np.sort(np.asarray(y, float))
    n = ys.size
    uc = _utility(np.searchsorted(ys, cpts, side="right"), n, 0.5)
    hi = np.searchsorted(ys, cpts[:, None] + tpts[None, :], side="right")
    lo = np.searchsorted(ys, cpts[:, None] - tpts[None, :], side="left")
    ut = _utility(hi - lo, n, q)
    return np.minimum(uc[:, None], ut)


def release(y, cpts, tpts, eps, rng, q=0.8):
    """``(c, t)`` by permute-and-flip over the pairs (report-noisy-max with Exp(1) noise on eps U / 2)."""
    U = joint_utility(y, cpts, tpts, q)
    score = 0.5 * eps * (U - U.max()) + rng.exponential(size=U.shape)
    i, j = np.unravel_index(int(np.argmax(score)), U.shape)
    return float(cpts[i]), float(tpts[j])


def pf_pmf_grouped(gaps):
    """Permute-and-flip's exact law with gaps grouped by value (study_centre_tail.pf_pmf, multiplicities)."""
    from numpy.polynomial.legendre import leggauss

    t, w = leggauss(700)
    t, w = 0.5 * (t + 1), 0.5 * w
    g, inv, mult = np.unique(np.asarray(gaps, float).ravel(), return_inverse=True, return_counts=True)
    p = np.exp(-g)
    logs = np.log1p(-np.outer(p, t))  # (groups, nodes)
    total = (mult[:, None] * logs).sum(0)
    per = p * (np.exp(total[None, :] - logs) @ w)
    per = per / (per * mult).sum()
    return per[inv].reshape(np.shape(gaps))


_orig_release = A.ScalePlan.release


def _release(self, data, rng):
    if self.targets[-1].values is not joint_marker or len(self.targets) < 2 or self.targets[-2].name != "label_center":
        return _orig_release(self, data, rng)
    floor = float(self.grid.points[self.grid.points > 0][0])
    rows = A.every_kth_row(data, self.stride)
    out = {}
    parts, mechs = self.parts, self.mechanisms()
    for target, mech in zip(self.targets[:-2], mechs[:-2]):
        values = A.finite(target.values(rows, dict(out)))
        out[target.name] = target.margin * max(mech.release(np.abs(values), rng), floor)
    bound = self.targets[-1]
    eps = parts[-2].epsilon + parts[-1].epsilon
    c, t = release(A.finite(rows[1][0]), self.signed_grid.points, self.grid.points, eps, rng, bound.q)
    out["label_center"] = c
    out["label_bound"] = bound.margin * max(t, floor)
    return out, self.event


def install():
    A.ScalePlan.release = _release


def joint_target(weight, q=0.8, margin=1.5):
    return dataclasses.replace(A.LABEL_UPPER, q=q, margin=margin, weight=weight, values=joint_marker)


# ------------------------------------------------------------------------------------ row bound x label bound
def joint_row_marker(data, released):  # never called: the bound released jointly with the row bound
    raise AssertionError("released jointly with the row bound")


def release_row_bound(norms, devs, grid, eps, rng, q=0.8):
    """``(r, t)`` by permute-and-flip over the pairs of the unsigned grid, utility ``min(u_row(r), u_t(t))``: the
    row norms' median utility and the deviations' level-``q`` utility (each sensitivity 1, so is the minimum)."""
    from sklearn_dpsco._mechanisms._quantile import QuantileMechanism

    ur = np.array(QuantileMechanism(0.5, 1.0, grid).utility(norms), dtype=np.int64)
    ut = np.array(QuantileMechanism(q, 1.0, grid).utility(devs), dtype=np.int64)
    U = np.minimum(ur[:, None], ut[None, :])
    score = 0.5 * eps * (U - U.max()) + rng.exponential(size=U.shape)
    i, j = np.unravel_index(int(np.argmax(score)), U.shape)
    return float(grid.points[i]), float(grid.points[j])


def _release_rows(self, data, rng):
    names = [t.name for t in self.targets]
    if self.targets[-1].values is not joint_row_marker or names[0] != "row_bound":
        return _release(self, data, rng)
    floor = float(self.grid.points[self.grid.points > 0][0])
    rows = A.every_kth_row(data, self.stride)
    out = {}
    parts, mechs = self.parts, self.mechanisms()
    for target, mech in zip(self.targets[1:-1], mechs[1:-1]):  # the centre (signed: used as is)
        out[target.name] = mech.release(A.finite(target.values(rows, dict(out))), rng)
    row, bound = self.targets[0], self.targets[-1]
    norms = np.abs(A.finite(row.values(rows, {})))
    devs = A.finite(A.centre_deviations(rows, out))
    r, t = release_row_bound(norms, devs, self.grid, parts[0].epsilon + parts[-1].epsilon, rng, bound.q)
    out = {"row_bound": row.margin * max(r, floor), **out, "label_bound": bound.margin * max(t, floor)}
    return out, self.event


def install_rows():
    A.ScalePlan.release = _release_rows


def joint_row_target(weight, q=0.8, margin=1.5):
    return dataclasses.replace(A.LABEL_UPPER, q=q, margin=margin, weight=weight, values=joint_row_marker)
