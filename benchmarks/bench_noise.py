"""Cost of secure noise: sampler throughput and the cost of one release (float vs secure).

Run against the installed package, from outside the source root::

    python benchmarks/bench_noise.py            # full tables (~1 minute)
    python benchmarks/bench_noise.py --quick    # fewer repetitions
    python benchmarks/bench_noise.py --rst doc/privacy/bench_noise_results.inc

Prints three tables (doc/privacy/secure_noise.rst quotes them):

1. bit generators: nanoseconds per 64-bit word, OS entropy vs PCG64;
2. samplers: samples per second of each noise law, float vs exact/hardened,
   seeded PCG64 and OS entropy;
3. one release at d in {10, 100, 1000}: building the mechanism (calibration,
   grid; "cold" without the calibration cache, i.e. the first fit at a given
   (epsilon, delta), and "cached") plus one noisy release -- the per-fit cost
   of output perturbation -- float vs secure, with ratios.
"""

import argparse
import sys
import time

import numpy as np

from sklearn_dpsco import _mechanisms
from sklearn_dpsco._mechanisms import _grid as sn
from sklearn_dpsco._fast._csprng import OSEntropyBitGenerator
from sklearn_dpsco._mechanisms import GaussianMechanism, L2LaplaceMechanism, LaplaceMechanism, l2_laplace_noise


def best_time(fn, repeat, number=1):
    """Best wall time of ``number`` calls, over ``repeat`` repetitions (seconds per call)."""
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        best = min(best, (time.perf_counter() - t0) / number)
    return best


TABLES = []


def table(title, header, rows):
    TABLES.append((title, header, rows))
    widths = [max(len(str(h)), *(len(str(r[i])) for r in rows)) for i, h in enumerate(header)]
    print(f"\n{title}")
    print("  ".join(str(h).rjust(w) for h, w in zip(header, widths)))
    print("  ".join("-" * w for w in widths))
    for r in rows:
        print("  ".join(str(c).rjust(w) for c, w in zip(r, widths)))


def bench_bit_generators(repeat):
    n = 1_000_000
    rows = []
    for name, bg in (("PCG64 (seeded)", np.random.PCG64(0)), ("OSEntropyBitGenerator", OSEntropyBitGenerator())):
        t = best_time(lambda: bg.random_raw(n), repeat)
        rows.append((name, f"{t / n * 1e9:.1f}", f"{n / t / 1e6:.1f}"))
    table("Bit generators: 64-bit words", ["generator", "ns/word", "Mwords/s"], rows)


def bench_samplers(repeat):
    n = 200_000
    t_lap = 2**40 + 1  # a Laplace mechanism's discrete scale in grid units
    s2_gauss = 2**60 + 1  # a Gaussian mechanism's sigma^2 in grid units
    d = 10
    rows = []
    for rng_name, make in (("pcg64", lambda: np.random.default_rng(0)),
                           ("os", lambda: np.random.Generator(OSEntropyBitGenerator()))):
        rng = make()
        cases = [
            ("Laplace", "float", lambda: rng.laplace(0.0, 1.0, n), n),
            ("Laplace", "exact discrete", lambda: sn.discrete_laplace(rng, (t_lap, 1), n), n),
            ("Gaussian", "float", lambda: rng.normal(0.0, 1.0, n), n),
            ("Gaussian", "exact discrete", lambda: sn.discrete_gaussian(rng, (s2_gauss, 1), n), n),
            (f"l2-Laplace d={d} (vectors)", "float", lambda: l2_laplace_noise(rng, 1.0, d, n // d), n // d),
            (f"l2-Laplace d={d} (vectors)", "hardened",
             lambda: sn.hardened_l2_laplace_noise(rng, 1.0, d, n // d), n // d),
        ]
        base = {}
        for law, path, fn, count in cases:
            t = best_time(fn, repeat)
            rate = count / t
            if path == "float":
                base[law] = rate
            rows.append((rng_name, law, path, f"{rate / 1e6:.2f}", f"{t / count * 1e9:.0f}",
                         f"{base[law] / rate:.1f}x" if path != "float" else "1.0x"))
    table("Samplers (one sample = one coordinate; l2-Laplace: one vector)",
          ["rng", "law", "path", "M samples/s", "ns/sample", "cost vs float"], rows)


def bench_releases(repeat):
    rows = []
    for d in (10, 100, 1000):
        value = np.linspace(-1.0, 1.0, d)
        rng = np.random.default_rng(1)
        makers = {
            "Laplace (eps=1)": lambda noise: LaplaceMechanism(1.0, 1.0, d, noise=noise),
            "l2-Laplace (eps=1)": lambda noise: L2LaplaceMechanism(1.0, 1.0, d, noise=noise),
            "Gaussian (1, 1e-6)": lambda noise: GaussianMechanism(1.0, 1.0, 1e-6, d, noise=noise),
        }
        for name, make in makers.items():
            res = {}
            for noise in ("float", "secure"):
                # cold build: the zCDP calibration cache is cleared every time
                cold = best_time(lambda: (_mechanisms._additive._zcdp_rho.cache_clear(), make(noise)), repeat, number=3)
                make(noise)
                warm = best_time(lambda: make(noise), repeat, number=20)
                mech = make(noise)
                release = best_time(lambda: mech.release(value, rng), repeat, number=20)
                res[noise] = (cold, warm, release)
            (cf, wf, rf), (cs, ws, rs) = res["float"], res["secure"]
            rows.append((d, name, f"{cf * 1e6:.0f}", f"{cs * 1e6:.0f}", f"{ws * 1e6:.0f}", f"{rf * 1e6:.1f}",
                         f"{rs * 1e6:.1f}", f"{rs / rf:.1f}x", f"{(ws + rs) * 1e3:.3f}", f"{(ws + rs) / (wf + rf):.1f}x"))
    table("One release (build the mechanism + one noisy release of a d-vector)",
          ["d", "mechanism", "build float us", "build secure cold us", "build secure cached us",
           "release float us", "release secure us", "release ratio", "secure per fit ms", "per-fit ratio"], rows)


def write_rst(path, preamble):
    lines = [f".. Generated by benchmarks/bench_noise.py ({preamble}); do not edit by hand.", ""]
    for title, header, rows in TABLES:
        lines += [f".. list-table:: {title}", "   :header-rows: 1", ""]
        for r in [header] + [list(r) for r in rows]:
            lines.append("   * - " + str(r[0]))
            lines += [f"     - {c}" for c in r[1:]]
        lines.append("")
    with open(path, "w", encoding="utf-8") as fh:
        fh.write("\n".join(lines))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    parser.add_argument("--rst", metavar="PATH", help="also write the tables as reStructuredText list-tables")
    args = parser.parse_args(argv)
    repeat = 2 if args.quick else 5
    preamble = f"numpy {np.__version__}, python {sys.version.split()[0]}; best of {repeat} repetitions"
    print(preamble)
    bench_bit_generators(repeat)
    bench_samplers(repeat)
    bench_releases(repeat)
    if args.rst:
        write_rst(args.rst, preamble)


if __name__ == "__main__":
    main()
