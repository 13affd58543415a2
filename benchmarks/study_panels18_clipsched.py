"""Issue 17 (panels18), a simulation: a public decreasing clip schedule for user_dp_sgd (not a mechanism of the library).

``OMP_NUM_THREADS=1 python benchmarks/study_panels18_clipsched.py --sched lin0.5 --panels baseball --out <jsonl>``

Each step ``t`` of DP-GD clips the users' mean gradients at ``C f(t)`` and adds float Gaussian noise of std
``sigma f(t)`` (every step keeps its Gaussian ratio ``2C f(t) / (sigma f(t))``, so the T steps compose to the
same mu as the plan's). Both arms (``f = 1``, the plan's own steps, and the schedule) run in this simulation on
the same noise draws (paired), on the float path; ``--diag`` prints, at eps = 1000 (its own rules), the median and 90 % quantile
of the users' mean-gradient norms over the clip at every step. Schedules: ``lin<a>`` = ``1 - a t / (T - 1)``,
``cos<a>`` = ``1 - a (1 - cos(pi t / (T - 1))) / 2``. With ``--secure`` (the library's secure releases, drawn
in the same order): ``secure`` = the library's run, ``mcool<a>`` / ``scool<a>`` = momentum / step cooldowns over
the last ``a`` of the steps (post-processing of the same releases).
"""

import argparse
import contextlib
import json
import os
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_panels as B  # noqa: E402
import study_panels17 as S  # noqa: E402
import study_panels18 as P  # noqa: E402


def schedule(name, T):
    t = np.arange(T) / max(T - 1, 1)
    if name == "flat":
        return np.ones(T)
    if name.startswith("lin"):
        return 1.0 - float(name[3:]) * t
    if name.startswith("cos"):
        return 1.0 - float(name[3:]) * (1.0 - np.cos(np.pi * t)) / 2.0
    raise ValueError(name)


def cooldown(name, T):
    """``mcool<a>`` / ``scool<a>``: over the last ``a`` of the steps the momentum / the step falls linearly to 0 /
    to 0.3 of itself (post-processing of the released sums: the releases, their noise and the event are the
    plan's own)."""
    k = max(int(round(float(name[5:]) * T)), 1)
    f = np.ones(T)
    f[T - k:] = np.linspace(1.0, 0.0 if name.startswith("mcool") else 0.3, k + 1)[1:]
    return f


def secure_run(sched_name):
    """The library's DP-GD loop (the secure releases, drawn in the same order), with a public per-step momentum
    or step factor; ``flat`` is the library's run exactly."""
    from sklearn_dpsco._solvers._user_level import _baselines as BL

    def run(problem, plan, rng):
        data = problem.data
        T = plan.iterations
        mom = cooldown(sched_name, T) if sched_name.startswith("mcool") else np.ones(T)
        stp = cooldown(sched_name, T) if sched_name.startswith("scool") else np.ones(T)
        W = np.zeros((1, plan.n_coef))
        W_prev = W
        for t in range(T):
            beta = plan.momentum * mom[t]
            V = W if beta == 0.0 else BL._project(W + beta * (W - W_prev), plan.radius)
            G = BL.clipped_mean_gradient_sum(data, V, plan.clip)
            noisy = BL._step_draw(plan, rng, 1).release(G)
            W_prev, W = W, BL._project(V - plan.step * stp[t] * (noisy / plan.n_users + plan.lam * V), plan.radius)
        return W[0]

    return run


def simulated_run(sched_name, diag=None):
    from sklearn_dpsco._solvers._user_level import _baselines as BL

    if sched_name.startswith(("mcool", "scool", "secure")):
        return secure_run(sched_name)

    def run(problem, plan, rng):
        data = problem.data
        f = schedule(sched_name, plan.iterations)
        W = np.zeros((1, plan.n_coef))
        W_prev = W
        for t in range(plan.iterations):
            V = W if plan.momentum == 0.0 else BL._project(W + plan.momentum * (W - W_prev), plan.radius)
            if diag is not None:
                g = BL.user_mean_gradients(data, V)[0]
                norms = np.linalg.norm(g, axis=1) / plan.clip
                diag.append((t, float(np.median(norms)), float(np.quantile(norms, 0.9))))
            G = BL.clipped_mean_gradient_sum(data, V, plan.clip * f[t])
            noisy = G + rng.normal(0.0, plan.sigma * f[t], size=G.shape)
            W_prev, W = W, BL._project(V - plan.step * (noisy / plan.n_users + plan.lam * V), plan.radius)
        return W[0]

    return run


@contextlib.contextmanager
def patched_runner(sched_name, diag=None):
    import sklearn_dpsco._solvers._builders._user_logistic as BU

    # SchedulePlan reads the module's _run_dp_sgd when user_dp_sgd builds it: patch the module global
    with S.patched(BU, "_run_dp_sgd", simulated_run(sched_name, diag)):
        yield


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--sched", default="flat,lin0.5")
    p.add_argument("--enc", default="scaled,raw,scaledbare")
    p.add_argument("--eps", default="1")
    p.add_argument("--seeds", type=int, default=10)
    p.add_argument("--panels", default="baseball")
    p.add_argument("--diag", action="store_true")
    p.add_argument("--secure", action="store_true", help="the default (secure) noise path: mcool / scool / secure")
    p.add_argument("--out")
    a = p.parse_args(argv)
    datasets = {k: (B.synthetic() if k == "synthetic" else P.fresh_panel(k) if k in P.FRESH else B.load_panel(k))
                for k in a.panels.split(",")}
    t0 = time.perf_counter()
    fh = open(a.out, "a") if a.out else None
    for enc in a.enc.split(","):
        for eps in [float(e) for e in a.eps.split(",")]:
            for key, ds in datasets.items():
                if enc != "raw" and ds["X"] is None:
                    continue
                params = {} if a.secure else {"noise": "float"}
                if enc in ("raw", "scaledbare"):
                    params["data_norm"] = None
                if a.diag:
                    diag = []
                    with patched_runner("flat", diag), warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        B.ours(ds, 1000.0, 0, raw=enc == "raw", **params)
                    print(enc, key, " ".join(f"{t}:{m:.2f}/{q:.2f}" for t, m, q in diag[::3]))
                    continue
                for name in a.sched.split(","):
                    accs = []
                    with patched_runner(name), warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        for s in range(a.seeds):
                            accs.append(B.ours(ds, eps, s, raw=enc == "raw", **params)["acc"])
                    rec = {"variant": name, "enc": enc, "panel": key, "eps": eps, "acc": accs}
                    if fh:
                        fh.write(json.dumps(rec) + "\n")
                        fh.flush()
                    print(f"{name:8s} {enc:10s} eps={eps:g} {key:9s} {np.mean(accs):.3f} ± {np.std(accs):.3f} "
                          f"({time.perf_counter() - t0:.0f}s)", flush=True)


if __name__ == "__main__":
    main()
