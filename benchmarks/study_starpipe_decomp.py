"""Issue 16 decomposition (benchmarks/results/starpipe.md): per set, model, epsilon, 10 seeds paired against the bare
estimator: ``bare07`` the bare estimator at 0.7 epsilon (the model's share in the pipeline before the hand-over),
``pipe`` the default pipeline, ``pipe_keep`` the pipeline with the model's own column rules kept after a releasing
scaler (``_column_settings`` patched to ``{}``). Run with the code before the hand-over (main 6a302af..fb8714d):

    OMP_NUM_THREADS=1 python benchmarks/study_starpipe_decomp.py Star,Treatment,SLID
"""
import sys, warnings, numpy as np
sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parent))
import study_starpipe as S, bench_fresh as F
import sklearn_dpsco.preprocessing._pipeline as P
orig = P._column_settings
sets = sys.argv[1].split(",")
for key in sets:
    task, Xtr, ytr, Xte, yte = S.load(key)
    for model in S.MODELS[task]:
        for eps in (0.5, 1.0, 2.0):
            res = {}
            for arm in ("bare", "bare07", "pipe", "pipe_keep"):
                sc = []
                for seed in range(10):
                    if arm.startswith("bare"):
                        est = F.ours(model, eps * (0.7 if arm == "bare07" else 1.0), seed)
                    else:
                        est = F.ours(model, eps, seed, pipe=True)
                    P._column_settings = orig if arm == "pipe" else (lambda *a, **k: {})
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore"); est.fit(Xtr, ytr)
                    sc.append(F.score(task, yte, est.predict(Xte)))
                res[arm] = np.array(sc)
            P._column_settings = orig
            b = res["bare"]
            print(key, model, eps, " ".join(f"{a}={res[a].mean():.3f}({(res[a]-b).mean():+.3f}±{(res[a]-b).std(ddof=1)/np.sqrt(10):.3f})" for a in res), flush=True)
