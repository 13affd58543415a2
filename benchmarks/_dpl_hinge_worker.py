"""diffprivlib side of benchmarks/bench_hinge.py — runs in the peer library's own venv.

Usage: ``/work/venv_dpl/bin/python _dpl_hinge_worker.py data.npz out.json``. The .npz
holds the very arrays the main benchmark uses (``X_train``, ``y_train``, ``X_test``,
``y_test``, ``epsilons``, ``seeds``, ``data_norm``); the JSON maps each epsilon to
the test accuracies (one per seed) and the mean fit time.
"""

import json
import sys
import time
import warnings

import numpy as np
from diffprivlib.models import LogisticRegression


def main(path_in, path_out):
    z = np.load(path_in)
    out = {}
    for eps in z["epsilons"]:
        accs, times = [], []
        for seed in z["seeds"]:
            clf = LogisticRegression(epsilon=float(eps), data_norm=float(z["data_norm"]), random_state=int(seed))
            t0 = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # diffprivlib warns when it clips rows above data_norm
                clf.fit(z["X_train"], z["y_train"])
            times.append(time.perf_counter() - t0)
            accs.append(float(clf.score(z["X_test"], z["y_test"])))
        out[repr(float(eps))] = {"acc": accs, "time": float(np.mean(times))}
    with open(path_out, "w") as f:
        json.dump(out, f)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
