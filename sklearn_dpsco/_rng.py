"""Randomness policy (doc/design.rst, contract rule 5; doc/privacy/randomness.rst).

* ``random_state=None``: noise comes from the operating system's CSPRNG
  (:class:`~sklearn_dpsco._fast._csprng.OSEntropyBitGenerator`). This is the
  only setting fit for releasing models.
* an ``int`` (or a numpy ``Generator`` / ``RandomState``): a seeded PCG64,
  reproducible for tests and experiments. Estimators record which kind was
  used (``noise_source_``); a seeded release is *not* protected against an
  adversary who can guess or learn the seed.
* sub-tasks (phases, repeats, one-vs-rest classes, workers) receive
  random states drawn *up front*, before any parallel dispatch, as plain
  integers (or ``None`` for OS entropy). No generator object is ever shipped
  to a worker, so results do not depend on ``n_jobs`` or the joblib backend.
"""

import numbers

import numpy as np

from ._fast._csprng import OSEntropyBitGenerator

__all__ = [
    "check_random_state",
    "is_cryptographic",
    "noise_source",
    "spawn_random_states",
]

#: Label recorded on fitted estimators for each kind of noise source.
OS_ENTROPY = "os-entropy"
SEEDED = "seeded-pcg64 (reproducible; not for releases)"


def check_random_state(random_state):
    """Turn ``random_state`` into a :class:`numpy.random.Generator`.

    Parameters
    ----------
    random_state : None, int, numpy.random.Generator or numpy.random.RandomState
        ``None`` gives a generator over OS entropy (a CSPRNG). An integer
        seeds a PCG64 generator. A ``Generator`` is used as is. A legacy
        ``RandomState`` seeds a new PCG64 from one draw of it.

    Returns
    -------
    rng : numpy.random.Generator
    """
    if random_state is None:
        return np.random.Generator(OSEntropyBitGenerator())
    if isinstance(random_state, np.random.Generator):
        return random_state
    if isinstance(random_state, np.random.RandomState):
        return np.random.default_rng(int(random_state.randint(0, 2**63 - 1, dtype=np.int64)))
    if isinstance(random_state, numbers.Integral) and not isinstance(random_state, bool):
        if random_state < 0:
            raise ValueError(f"random_state must be a non-negative integer, got {random_state}.")
        return np.random.default_rng(int(random_state))
    raise TypeError(
        "random_state must be None (OS entropy), an int, a numpy Generator or a "
        f"RandomState; got {type(random_state).__name__}."
    )


def is_cryptographic(rng):
    """True when ``rng`` draws from OS entropy."""
    return isinstance(rng.bit_generator, OSEntropyBitGenerator)


def noise_source(rng):
    """The label recorded on a fitted estimator for the generator ``rng``."""
    return OS_ENTROPY if is_cryptographic(rng) else SEEDED


def spawn_random_states(rng, n):
    """Draw ``n`` independent random states for sub-tasks, up front.

    Parameters
    ----------
    rng : numpy.random.Generator
        The parent generator (from :func:`check_random_state`).
    n : int
        Number of sub-tasks.

    Returns
    -------
    states : list of (int or None)
        With OS entropy, ``[None] * n``: each sub-task opens its own CSPRNG
        (a CSPRNG cannot be "split" into seeds without losing its
        guarantee). With a seeded parent, ``n`` integers drawn from it, so the
        sub-tasks are reproducible and independent of how they are scheduled.
    """
    if is_cryptographic(rng):
        return [None] * n
    return [int(s) for s in rng.integers(0, 2**63 - 1, size=n, dtype=np.int64)]
