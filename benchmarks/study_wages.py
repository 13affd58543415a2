"""Issue 17, Wages (416 users, eps = 1): can a public rule lift UserLevelDPLogistic's default past 0.735?

    OMP_NUM_THREADS=1 python benchmarks/study_wages.py [knobs|variants|threshold|centering|geometry|pairing|all] [--seeds 30]

Every fit is ``bench_panels.ours`` (the estimator at ``max_items_per_user=m``, ``data_norm=sqrt(2)``,
secure noise, delta = 1e-6) on bench_panels.py's split; seeds 0..S-1 (bench_panels.py reads 0..9, so
"first10" is the panels.json reading). Nothing here changes the library: the study only passes
public settings, post-processes released models, or (``variants``, ``centering``) simulates a
mechanism that did not exist yet. The library's own private centring (``centering="auto"``,
linear_model/_centering.py, built from this study) is switched off in every fit here
(``centering=False``), so the study reads as it was run. Results: benchmarks/results/wages_study.md.

* ``knobs``: the public settings of ``user_dp_sgd`` on Wages: horizon x clip at the rule's T = 28,
  steps x horizon, ridge x horizon, noise="float".
* ``variants``: the same DP-GD releases, other post-processing of them (step decay over the last
  steps, tail / exponential averaging of the iterates): ``run_dp_sgd`` replaced in the builder for
  the study only (the releases, their sensitivity and noise are untouched).
* ``threshold``: the intercept. Oracle: the released ``coef_`` with the non-private best
  threshold on the training rows; private: the existing InterceptRefit selection
  (linear_model/_intercept_refit.py) with each user's rows weighted 1 / (its kept rows), so one
  user moves every ``err(t)`` by at most one unit (sensitivity 2^20 weight units), on a basic
  share of epsilon taken from DP-GD.
* ``centering``: the feature columns centred before the fit. Oracle: the training mean;
  simulated DP: the mean of the users' mean rows (norm <= 1, the declared bound less the
  intercept column) plus Gaussian noise of a zCDP share ``s`` (sensitivity 2 under replace-one-user:
  sd = 2 / sqrt(2 s rho) / n_users per coordinate), DP-GD on ``(1 - s) rho`` (float path for the
  mean only); all seven panels at eps 0.5, 1, 2.
* ``geometry``: that centring on Wages at eps 1 and 2 against the declared row share (the rows
  are fitted at ``k R``, k = 0.25 the rule; ``declared_row_scale`` replaced for the study only).
* ``pairing``: centring (s = 0.1) with rows fitted at R / 8 on all seven panels at eps 0.5, 1, 2,
  against the default.
"""

import argparse
import json
import math
import os
import sys
import warnings

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import _real_datasets as R
import bench_panels as B

DELTA = B.DELTA
_DATA = {}


def ours(data, eps, seed, **params):
    """``bench_panels.ours`` without the library's private centring (the study simulates it)."""
    return B.ours(data, eps, seed, **{"centering": False, **params})


def centred_acc(d, mu, sd, seed, eps):
    """Accuracy of a fit on train and test rows shifted by ``mu`` plus ``N(0, sd^2)`` per coordinate
    (the simulated private centre; its noise from seed ``10000 + seed``)."""
    m = mu + sd * np.random.default_rng(10_000 + seed).standard_normal(mu.size)
    return ours(dict(d, X=d["X"] - m, Xt=d["Xt"] - m), eps, seed)


def simulated_split(eps, share, n_users):
    """``(epsilon of the fit, sd of the centre)``: a zCDP share ``share`` of ``rho(eps)`` for the mean of
    ``n_users`` mean rows (sensitivity 2, sd = 2 / sqrt(2 share rho) / n_users), the fit on the rest."""
    from sklearn_dpsco.accounting._calibration import zcdp_epsilon, zcdp_rho

    rho = zcdp_rho(eps, DELTA)
    return zcdp_epsilon(rho * (1.0 - share), DELTA), 2.0 / math.sqrt(2.0 * rho * share) / n_users


def row_share(k):
    """``declared_row_scale`` replaced for the study only: rows fitted at ``k R`` (centred or not)."""
    return lambda data_norm, centred=False: k * float(data_norm)


def ds(key):
    if key not in _DATA:
        _DATA[key] = B.synthetic() if key == "synthetic" else B.load_panel(key)
    return _DATA[key]


def fmt(a):
    a = np.asarray(a, float)
    return f"{a.mean():.4f} ± {a.std():.3f} (first10 {a[:10].mean():.4f} ± {a[:10].std():.3f})"


def accs(key, eps, seeds, data=None, **params):
    d = ds(key) if data is None else data
    runs = [ours(d, eps, s, **params) for s in range(seeds)]
    return np.array([r["acc"] for r in runs]), runs[-1]


# ---------------------------------------------------------------------------- knobs
def knobs(seeds, out):
    a, det = accs("Wages", 1.0, seeds)
    T0, beta0, alpha0 = det["steps"], det["momentum"], det["alpha"]
    H0 = T0 / (1.0 - beta0)
    c2 = (math.sqrt(2.0) / 4) ** 2  # settings are read in the units of X / c, c = sqrt(2) / 4
    print(f"default: {fmt(a)}  T={T0} beta={beta0:.3f} H={H0:.1f} alpha_={alpha0:.3g}")
    out["default"] = a.tolist()
    for T, beta in [(T0, beta0), (T0, 0.3), (T0, 0.5), (T0, 0.8), (30, 0.9)]:
        clean, _ = accs("Wages", 1000.0, 1, sgd_iterations=T, sgd_momentum=beta)
        print(f"noise-free (eps = 1000) T={T} beta={beta:.3f}: {clean[0]:.3f}")
        out[f"clean T={T} beta={beta:.3f}"] = clean.tolist()
    for k in (1.0, 1.25, 1.5, 2.0):
        for clip in (0.35, 0.42, 0.5, 0.6, 0.7):
            beta = 1.0 - T0 / (k * H0)
            a, _ = accs("Wages", 1.0, seeds, sgd_iterations=T0, sgd_momentum=beta, sgd_clip=clip)
            print(f"horizon {k:g} H, clip {clip:g}: {fmt(a)}")
            out[f"k={k} clip={clip}"] = a.tolist()
    for T in (7, 10, 14, 20):
        for H in (14, 20, 28, 40):
            if H >= T:
                a, _ = accs("Wages", 1.0, seeds, sgd_iterations=T, sgd_momentum=1.0 - T / H)
                print(f"T={T} H={H}: {fmt(a)}")
                out[f"T={T} H={H}"] = a.tolist()
    for am in (3, 10, 30, 100):
        for k in (1, 2, 4):
            a, _ = accs("Wages", 1.0, seeds, alpha=alpha0 * am / c2, sgd_iterations=T0,
                        sgd_momentum=1.0 - T0 / (k * H0))
            print(f"alpha {am}x the rule, horizon {k} H: {fmt(a)}")
            out[f"alpha x{am} k={k}"] = a.tolist()
    a, _ = accs("Wages", 1.0, seeds, noise="float")
    print(f"noise='float': {fmt(a)}")
    out["float"] = a.tolist()


# ---------------------------------------------------------------------------- variants
_VARIANT = {}


def _run_dp_sgd_variant(user_gradients, plan, rng, *, w0=None, size=None, clipped_sum=None):
    """run_dp_sgd's releases (same draws, same sums), then another use of them (study only)."""
    from sklearn_dpsco._solvers._user_level import _baselines as BL

    chains = 1 if size is None else int(size)
    W = np.tile(np.zeros(plan.n_coef) if w0 is None else np.asarray(w0, dtype=float), (chains, 1))
    W_prev, T = W, plan.iterations
    mode, K, fac = _VARIANT.get("mode"), _VARIANT.get("tail", 0), _VARIANT.get("fac", 0.5)
    total, count, ema = None, 0, None
    for t in range(T):
        V = W if plan.momentum == 0.0 else BL._project(W + plan.momentum * (W - W_prev), plan.radius)
        G = clipped_sum(V) if clipped_sum is not None else BL.clipped_gradient_sum(user_gradients(V), plan.clip)
        noisy = BL._step_draw(plan, rng, chains).release(G)
        step = plan.step
        if mode == "decay" and t >= T - K:
            step = plan.step * fac ** (t - (T - K) + 1)
        elif mode == "linear" and t >= T - K:
            step = plan.step * (T - t) / (K + 1)
        W_prev, W = W, BL._project(V - step * (noisy / plan.n_users + plan.lam * V), plan.radius)
        if mode == "tail" and t >= T - K:
            total, count = (W.copy() if total is None else total + W), count + 1
        if mode == "ema":
            ema = W.copy() if ema is None else fac * ema + (1.0 - fac) * W
    W = total / count if mode == "tail" else (ema if mode == "ema" else W)
    return W[0] if size is None else W


def variants(seeds, out):
    from sklearn_dpsco._solvers._builders import _user_logistic as UB

    original = UB.run_dp_sgd
    UB.run_dp_sgd = _run_dp_sgd_variant
    try:
        for cfg in ({}, {"mode": "decay", "tail": 3, "fac": 0.5}, {"mode": "decay", "tail": 5, "fac": 0.7},
                    {"mode": "linear", "tail": 8}, {"mode": "tail", "tail": 4}, {"mode": "ema", "fac": 0.7},
                    {"mode": "ema", "fac": 0.85}):
            _VARIANT.clear()
            _VARIANT.update(cfg)
            a, _ = accs("Wages", 1.0, seeds)
            print(f"{cfg or 'last iterate'}: {fmt(a)}")
            out[json.dumps(cfg)] = a.tolist()
    finally:
        UB.run_dp_sgd = original


# ---------------------------------------------------------------------------- threshold
def _fit(key, eps, seed, X=None):
    from sklearn_dpsco import BudgetAccountant
    from sklearn_dpsco.linear_model import UserLevelDPLogistic

    d = ds(key)
    est = UserLevelDPLogistic(epsilon=eps, delta=DELTA, max_items_per_user=d["m"], random_state=seed, centering=False,
                              data_norm=math.sqrt(2.0), accountant=BudgetAccountant(epsilon=float("inf"), delta=1.0))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(d["X"] if X is None else X, d["y"], d["g"])
    return est


def threshold(seeds, out, key="Wages", eps=1.0):
    from sklearn_dpsco.linear_model._intercept_refit import InterceptRefit

    d = ds(key)
    X, y, g, Xt, yt = d["X"], d["y"], d["g"], d["Xt"], d["yt"]
    _, inv, counts = np.unique(g, return_inverse=True, return_counts=True)
    c = math.sqrt(2.0) / 4  # the fit's rows: (x, c) clipped to c sqrt(2) (declared_row_scale)
    Z = np.hstack([X, np.full((len(X), 1), c)])
    Z *= np.minimum(1.0, c * math.sqrt(2.0) / np.linalg.norm(Z, axis=1))[:, None]
    weights = 1.0 / np.minimum(counts[inv], d["m"])  # every row kept on these panels (m >= count)
    base, oracle = [], []
    for s in range(seeds):
        est = _fit(key, eps, s)
        w, b = est.coef_[0], est.intercept_[0]
        positive = est.classes_[1]
        base.append(np.mean(((Xt @ w + b) > 0) == (yt == positive)))
        scores = X @ w
        grid = np.quantile(scores, np.linspace(0.0, 1.0, 401))
        errors = [np.mean((scores > t) != (y == positive)) for t in grid]
        t = grid[int(np.argmin(errors))]
        oracle.append(np.mean(((Xt @ w) > t) == (yt == positive)))
    print(f"{key} eps={eps} released: {fmt(base)}")
    print(f"{key} eps={eps} released coef_, non-private best threshold (oracle): {fmt(oracle)}")
    out["released"], out["oracle threshold"] = base, oracle
    for share in (0.05, 0.1, 0.15, 0.2):
        res = []
        for s in range(seeds):
            est = _fit(key, eps * (1.0 - share), s)  # basic composition: DP-GD on (1 - share) eps
            w, b = est.coef_[0], est.intercept_[0]
            coef = np.r_[w, b / c]
            refit = InterceptRefit(eps * share, noise="float")
            points = refit.grid(coef, c * math.sqrt(2.0))
            labels = np.where(y == est.classes_[1], 1.0, -1.0)
            index = refit.release_index(Z @ coef, labels, weights, points, np.random.default_rng(1000 + s))
            res.append(np.mean(((Xt @ w + b - points[int(index)]) > 0) == (yt == est.classes_[1])))
        print(f"{key} eps={eps} private refit, share {share}: {fmt(res)}")
        out[f"refit share={share}"] = res


# ---------------------------------------------------------------------------- centering
def _user_means(key):
    d = ds(key)
    X, g = d["X"], d["g"]
    keep = R.first_m_rows(g, d["m"])
    _, inv, counts = np.unique(g[keep], return_inverse=True, return_counts=True)
    means = np.zeros((counts.size, X.shape[1]))
    np.add.at(means, inv, X[keep])
    means /= counts[:, None]
    means *= np.minimum(1.0, 1.0 / np.maximum(np.linalg.norm(means, axis=1), 1e-300))[:, None]
    return means


def centering(seeds, out):

    d = ds("Wages")
    mu = d["X"].mean(axis=0)
    for sd in (0.0, 0.05, 0.1):
        rng = np.random.default_rng(5)
        res = []
        for s in range(seeds):
            m = mu + sd * rng.standard_normal(mu.size)
            res.append(ours(dict(d, X=d["X"] - m, Xt=d["Xt"] - m), 1.0, s)["acc"])
        print(f"Wages eps=1 centred at the training mean + N(0, {sd}^2) per coordinate: {fmt(res)}")
        out[f"Wages oracle sd={sd}"] = res
    for key in list(B.PANELS) + ["synthetic"]:
        d = ds(key)
        means = _user_means(key)
        n, mu = means.shape[0], means.mean(axis=0)
        for eps in (1.0, 0.5, 2.0):
            for share in (0.0, 0.05, 0.1):
                e_fit, sd = simulated_split(eps, share, n) if share else (eps, 0.0)
                runs = [centred_acc(d, mu, sd, s, e_fit) if share else ours(d, eps, s) for s in range(seeds)]
                res, solver = [r["acc"] for r in runs], runs[-1]["solver"]
                print(f"{key:9s} eps={eps:<4g} share={share:<5g} {solver:12s} mean sd {sd:.3f}: {fmt(res)}", flush=True)
                out[f"{key}|{eps:g}|{share:g}"] = res


def geometry(seeds, out):
    """Simulated private centring (share 0.1) against the declared row share (DECLARED_ROW_SHARE = 0.25), Wages."""
    import sklearn_dpsco.linear_model._user_logistic as UL

    d = ds("Wages")
    means = _user_means("Wages")
    n, mu, share = means.shape[0], means.mean(axis=0), 0.1
    original = UL.declared_row_scale
    try:
        for eps in (1.0, 2.0):
            e_fit, sd = simulated_split(eps, share, n)
            for k in (0.125, 0.25, 0.35, 0.5):
                UL.declared_row_scale = row_share(k)  # study only
                for centre in (False, True):
                    res = [(centred_acc(d, mu, sd, s, e_fit) if centre else ours(d, eps, s))["acc"]
                           for s in range(seeds)]
                    print(f"Wages eps={eps:g} row share {k:g} centred={centre}: {fmt(res)}", flush=True)
                    out[f"{eps:g}|{k:g}|{centre}"] = res
    finally:
        UL.declared_row_scale = original


def pairing(seeds, out):
    """Simulated private centring (share 0.1) with rows fitted at R / 8 on every panel, against the default."""
    import sklearn_dpsco.linear_model._user_logistic as UL

    original = UL.declared_row_scale
    share = 0.1
    try:
        for key in list(B.PANELS) + ["synthetic"]:
            d = ds(key)
            means = _user_means(key)
            n, mu = means.shape[0], means.mean(axis=0)
            for eps in (1.0, 0.5, 2.0):
                e_fit, sd = simulated_split(eps, share, n)
                UL.declared_row_scale = original
                base = [ours(d, eps, s) for s in range(seeds)]
                UL.declared_row_scale = row_share(0.125)  # study only
                a0 = np.array([r["acc"] for r in base])
                a = np.array([centred_acc(d, mu, sd, s, e_fit)["acc"] for s in range(seeds)])
                se = math.sqrt(a.var(ddof=1) / a.size + a0.var(ddof=1) / a0.size)
                print(f"{key:9s} eps={eps:<4g} {base[0]['solver']:12s} default {fmt(a0)} | centred, R/8: {fmt(a)} | "
                      f"gap {a.mean() - a0.mean():+.3f} ± {se:.3f}", flush=True)
                out[f"{key}|{eps:g}|default"], out[f"{key}|{eps:g}|centred R/8"] = a0.tolist(), a.tolist()
    finally:
        UL.declared_row_scale = original


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("study", nargs="?", default="all", choices=["knobs", "variants", "threshold", "centering", "geometry", "pairing", "all"])
    parser.add_argument("--seeds", type=int, default=30)
    parser.add_argument("--out", default=os.path.join(HERE, "results", "wages_study.json"))
    args = parser.parse_args(argv)
    studies = ["knobs", "variants", "threshold", "centering", "geometry", "pairing"] if args.study == "all" else [args.study]
    results = {}
    if os.path.exists(args.out):
        with open(args.out) as fh:
            results = json.load(fh)
    for name in studies:
        print(f"## {name} ({args.seeds} seeds)", flush=True)
        results[name] = {}
        globals()[name](args.seeds, results[name])
        with open(args.out, "w") as fh:
            json.dump(results, fh, indent=1)


if __name__ == "__main__":
    main()
