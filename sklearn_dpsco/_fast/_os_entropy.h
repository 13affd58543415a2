/* Operating-system entropy for the CSPRNG bit generator (_csprng.pyx).
 *
 * dpsco_os_entropy fills a buffer from the kernel CSPRNG (getentropy on
 * POSIX, BCryptGenRandom on Windows). A fork counter, bumped in the child by
 * pthread_atfork, lets a buffered generator notice that it was duplicated by
 * fork() and refill instead of replaying the parent's buffered words.
 */
#ifndef DPSCO_OS_ENTROPY_H
#define DPSCO_OS_ENTROPY_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

/* Overwrite memory that held random words; the volatile stores cannot be
 * elided as dead by the compiler (freed objects keep no unused words). */
static void dpsco_wipe(void *buf, size_t len)
{
    volatile unsigned char *p = (volatile unsigned char *)buf;
    while (len--) {
        *p++ = 0;
    }
}

#if defined(_WIN32)
#include <windows.h>
#include <bcrypt.h>
#if defined(_MSC_VER)
#pragma comment(lib, "bcrypt") /* BCryptGenRandom lives in bcrypt.lib */
#endif

static int dpsco_os_entropy(void *buf, size_t len)
{
    return BCryptGenRandom(NULL, (PUCHAR)buf, (ULONG)len,
                           BCRYPT_USE_SYSTEM_PREFERRED_RNG) == 0 ? 0 : -1;
}
static void dpsco_register_atfork(void) {}
static uint64_t dpsco_fork_generation(void) { return 0; }

#else
#include <errno.h>
#include <unistd.h>
#include <pthread.h>
#if defined(__APPLE__) || defined(__linux__)
#include <sys/random.h>
#endif

static int dpsco_os_entropy(void *buf, size_t len)
{
    unsigned char *p = (unsigned char *)buf;
#if defined(__linux__)
    /* One getrandom call fills the whole buffer (urandom pool, never blocks
     * once the pool is initialised). Retry on EINTR and short reads. */
    while (len > 0) {
        ssize_t got = getrandom(p, len, 0);
        if (got < 0) {
            if (errno == EINTR) {
                continue;
            }
            return -1;
        }
        p += got;
        len -= (size_t)got;
    }
    return 0;
#else
    while (len > 0) {
        size_t chunk = len > 256 ? 256 : len; /* getentropy's per-call cap */
        if (getentropy(p, chunk) != 0) {
            return -1;
        }
        p += chunk;
        len -= chunk;
    }
    return 0;
#endif
}

static volatile uint64_t dpsco_fork_gen = 0;
static int dpsco_atfork_done = 0;

static void dpsco_on_fork_child(void) { dpsco_fork_gen++; }

static void dpsco_register_atfork(void)
{
    if (!dpsco_atfork_done) {
        pthread_atfork(NULL, NULL, dpsco_on_fork_child);
        dpsco_atfork_done = 1;
    }
}

static uint64_t dpsco_fork_generation(void) { return dpsco_fork_gen; }
#endif

#endif /* DPSCO_OS_ENTROPY_H */
