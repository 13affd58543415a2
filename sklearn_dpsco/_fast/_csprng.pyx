"""A numpy BitGenerator that draws every word from the operating system CSPRNG.

``random_state=None`` everywhere in sklearn_dpsco means noise from this source
(doc/privacy/randomness.rst). A seeded PCG64 is *not* a CSPRNG: its future
output is predictable from past output, so an adversary who sees some noise
could subtract the rest. Here each 64-bit word is read from the kernel
(``getentropy``) through a 4 KiB buffer; consumed words are wiped, and a fork
of the process invalidates the buffer so parent and child never share words.
"""
from libc.stdint cimport uint32_t, uint64_t
from libc.stdlib cimport abort

from numpy.random cimport bitgen_t
from numpy.random.bit_generator cimport BitGenerator

from numpy.random.bit_generator import SeedlessSeedSequence


cdef extern from "_os_entropy.h" nogil:
    int dpsco_os_entropy(void *buf, size_t length)
    void dpsco_register_atfork()
    uint64_t dpsco_fork_generation()
    void dpsco_wipe(void *buf, size_t length)


cdef enum:
    BUFFER_WORDS = 512


ctypedef struct os_state:
    uint64_t words[BUFFER_WORDS]
    Py_ssize_t pos
    uint64_t generation
    int has_uint32
    uint32_t uinteger


cdef inline void _refill(os_state *st) noexcept nogil:
    if dpsco_os_entropy(st.words, sizeof(st.words)) != 0:
        # Never fall back to a weaker source, never return predictable bits.
        abort()
    st.pos = 0
    st.generation = dpsco_fork_generation()
    st.has_uint32 = 0


cdef uint64_t _next_uint64(void *s) noexcept nogil:
    cdef os_state *st = <os_state *> s
    cdef uint64_t out
    if st.pos >= BUFFER_WORDS or st.generation != dpsco_fork_generation():
        _refill(st)
    out = st.words[st.pos]
    st.words[st.pos] = 0
    st.pos += 1
    return out


cdef uint32_t _next_uint32(void *s) noexcept nogil:
    cdef uint64_t low_mask = 0xffffffff
    cdef os_state *st = <os_state *> s
    cdef uint64_t w
    cdef uint32_t cached
    if st.has_uint32 and st.generation == dpsco_fork_generation():
        st.has_uint32 = 0
        cached = st.uinteger
        st.uinteger = 0  # consumed words are wiped, as in _next_uint64
        return cached
    w = _next_uint64(s)
    st.has_uint32 = 1
    st.uinteger = <uint32_t>(w >> 32)
    return <uint32_t>(w & low_mask)


cdef double _next_double(void *s) noexcept nogil:
    # 53 random bits, as numpy's own bit generators do.
    return (_next_uint64(s) >> 11) * (1.0 / 9007199254740992.0)


dpsco_register_atfork()


cdef class OSEntropyBitGenerator(BitGenerator):
    """Bit generator reading the operating system's cryptographic RNG.

    Every output word comes from ``getentropy`` (POSIX) or
    ``BCryptGenRandom`` (Windows). It cannot be seeded, its state cannot be
    read or set, and pickling it yields a *fresh* generator (a worker process
    never replays its parent's words).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_dpsco._fast._csprng import OSEntropyBitGenerator
    >>> rng = np.random.Generator(OSEntropyBitGenerator())
    >>> 0.0 <= rng.random() < 1.0
    True
    """

    cdef os_state rng_state

    def __init__(self):
        BitGenerator.__init__(self, SeedlessSeedSequence())
        self.rng_state.pos = BUFFER_WORDS  # empty: first draw refills
        self.rng_state.has_uint32 = 0
        self.rng_state.generation = dpsco_fork_generation()
        self._bitgen.state = <void *> &self.rng_state
        self._bitgen.next_uint64 = &_next_uint64
        self._bitgen.next_uint32 = &_next_uint32
        self._bitgen.next_double = &_next_double
        self._bitgen.next_raw = &_next_uint64

    @property
    def state(self):
        """A description only: the buffered words are never exposed."""
        return {"bit_generator": "OSEntropyBitGenerator"}

    @state.setter
    def state(self, value):
        raise AttributeError("OSEntropyBitGenerator has no settable state")

    def spawn(self, int n_children):
        """Independent children: each is a fresh OS-entropy generator."""
        return [OSEntropyBitGenerator() for _ in range(n_children)]

    def __reduce__(self):
        return (OSEntropyBitGenerator, ())

    def __dealloc__(self):
        # Unconsumed buffered words must not survive in freed memory.
        dpsco_wipe(&self.rng_state, sizeof(os_state))
