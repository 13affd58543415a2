"""T0: randomness policy."""

import os
import pickle

import numpy as np
import pytest

from sklearn_dpsco._fast._csprng import OSEntropyBitGenerator
from sklearn_dpsco._rng import check_random_state, is_cryptographic, noise_source, spawn_random_states


def test_none_is_os_entropy():
    rng = check_random_state(None)
    assert is_cryptographic(rng)
    assert noise_source(rng) == "os-entropy"
    x = rng.random(10000)
    assert 0.45 < x.mean() < 0.55


def test_int_seed_reproducible_and_labelled():
    a = check_random_state(7).normal(size=5)
    b = check_random_state(7).normal(size=5)
    np.testing.assert_array_equal(a, b)
    assert not is_cryptographic(check_random_state(7))
    assert "seeded" in noise_source(check_random_state(7))


def test_generator_and_randomstate_accepted():
    g = np.random.default_rng(0)
    assert check_random_state(g) is g
    r1 = check_random_state(np.random.RandomState(3)).random()
    r2 = check_random_state(np.random.RandomState(3)).random()
    assert r1 == r2


@pytest.mark.parametrize("bad", [-1, 1.5, "seed", True])
def test_bad_random_state(bad):
    with pytest.raises((TypeError, ValueError), match="random_state"):
        check_random_state(bad)


def test_spawn_seeded_is_deterministic_and_os_is_none():
    s1 = spawn_random_states(check_random_state(3), 4)
    s2 = spawn_random_states(check_random_state(3), 4)
    assert s1 == s2 and len(set(s1)) == 4 and all(isinstance(s, int) for s in s1)
    assert spawn_random_states(check_random_state(None), 3) == [None, None, None]


def test_csprng_has_no_readable_state_and_pickles_fresh():
    bg = OSEntropyBitGenerator()
    assert bg.state == {"bit_generator": "OSEntropyBitGenerator"}
    with pytest.raises(AttributeError):
        bg.state = {}
    g = np.random.Generator(bg)
    g2 = pickle.loads(pickle.dumps(g))
    assert is_cryptographic(g2)
    assert not np.array_equal(g.integers(0, 2**63, 8), g2.integers(0, 2**63, 8))


def test_csprng_words_look_uniform():
    g = np.random.Generator(OSEntropyBitGenerator())
    words = g.bit_generator.random_raw(20000)
    bits = np.unpackbits(words.view(np.uint8))
    # each bit fair: 1.28e6 bits, mean within 6 sigma
    assert abs(bits.mean() - 0.5) < 6 * 0.5 / np.sqrt(bits.size)
    assert len(np.unique(words)) == words.size


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork only on POSIX")
def test_fork_does_not_replay_buffered_words():
    g = np.random.Generator(OSEntropyBitGenerator())
    g.bit_generator.random_raw(3)  # fill the buffer
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # child
        os.close(r)
        os.write(w, g.bit_generator.random_raw(4).tobytes())
        os._exit(0)
    os.close(w)
    child = np.frombuffer(os.read(r, 32), dtype=np.uint64)
    os.waitpid(pid, 0)
    parent = g.bit_generator.random_raw(4)
    assert not np.array_equal(child, parent)
