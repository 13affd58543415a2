"""diffprivlib side of benchmarks/run_all.py — runs in the peer library's own venv.

Usage: ``/work/venv_dpl/bin/python _dpl_run_all.py jobs.json out.json``.

``jobs.json`` is a list of jobs ``{"key", "path", "model", "params", "epsilons", "seeds"}``; the
.npz at ``path`` holds the very arrays run_all.py fits its own estimators on (``X``, ``y``,
``X_test``). ``model`` is ``"logistic"`` or ``"linear"`` (diffprivlib's LogisticRegression /
LinearRegression) and ``params`` their public parameters (``data_norm``; ``bounds_X``,
``bounds_y``; ``fit_intercept``; ``epsilon_scale`` multiplies epsilon, for group privacy).

For every (epsilon, seed) the output records the test predictions, the coefficients, the fit
time and every warning diffprivlib raised during the fit (category and message, deduplicated),
so the caller can report data-derived bounds, clipping and convergence warnings, and NaNs.
"""

import json
import sys
import time
import warnings

import numpy as np


def _model(kind, epsilon, seed, params):
    from diffprivlib.models import LinearRegression, LogisticRegression

    fit_intercept = bool(params.get("fit_intercept", True))
    if kind == "logistic":
        return LogisticRegression(epsilon=epsilon, data_norm=params.get("data_norm"), fit_intercept=fit_intercept,
                                  random_state=seed)
    if kind == "linear":
        bx, by = params.get("bounds_X"), params.get("bounds_y")
        return LinearRegression(epsilon=epsilon, bounds_X=None if bx is None else tuple(bx),
                                bounds_y=None if by is None else tuple(by), fit_intercept=fit_intercept,
                                random_state=seed)
    raise ValueError(kind)


def _warmup():
    """One small fit of each model first, so one-off import costs do not land in the first timing."""
    rng = np.random.default_rng(0)
    X = rng.uniform(-0.5, 0.5, (200, 3))
    y = (X[:, 0] > 0).astype(int)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _model("logistic", 1.0, 0, {"data_norm": 1.0}).fit(X, y)
        _model("linear", 1.0, 0, {"bounds_X": (-1, 1), "bounds_y": (-1, 1)}).fit(X, X[:, 0])


def run_job(job):
    z = np.load(job["path"])
    X, y, Xt = z["X"], z["y"], z["X_test"]
    params = job["params"]
    out = []
    for eps in job["epsilons"]:
        for seed in job["seeds"]:
            model = _model(job["model"], float(eps) * float(params.get("epsilon_scale", 1.0)), int(seed), params)
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                t0 = time.perf_counter()
                try:
                    model.fit(X, y)
                    secs = time.perf_counter() - t0
                    error = None
                except Exception as err:  # recorded, never hidden: the report lists failures
                    secs = time.perf_counter() - t0
                    error = f"{type(err).__name__}: {str(err)[:200]}"
            seen = []
            for w in caught:
                text = f"{w.category.__name__}: {' '.join(str(w.message).split())[:240]}"
                if text not in seen:
                    seen.append(text)
            rec = {"epsilon": float(eps), "seed": int(seed), "time": secs, "warnings": seen, "error": error}
            if error is None:
                with np.errstate(all="ignore"):
                    pred = np.asarray(model.predict(Xt), dtype=float)
                rec["pred"] = [float(v) if np.isfinite(v) else None for v in pred]
                coef = np.ravel(model.coef_).astype(float)
                rec["coef"] = [float(v) if np.isfinite(v) else None for v in coef]
                rec["intercept"] = float(np.ravel(model.intercept_)[0]) if np.size(model.intercept_) else 0.0
            out.append(rec)
    return out


def main(path_in, path_out):
    with open(path_in) as fh:
        jobs = json.load(fh)
    _warmup()
    results = {job["key"]: run_job(job) for job in jobs}
    with open(path_out, "w") as fh:
        json.dump(results, fh)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
