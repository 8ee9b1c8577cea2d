// Linux calls that Glibc's Swift module does not export. epoll_event is a packed struct
// holding a union, so it never crosses into Swift: these wrappers take plain values.
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>

static const uint32_t baton_epollin = EPOLLIN;
static const uint32_t baton_epollout = EPOLLOUT;
static const uint32_t baton_epollhup = EPOLLHUP;
static const uint32_t baton_epollerr = EPOLLERR;

static inline int baton_epoll_create(void) { return epoll_create1(EPOLL_CLOEXEC); }

/// EPOLL_CTL_ADD (op 0), EPOLL_CTL_MOD (op 1), EPOLL_CTL_DEL (op 2) for `fd` with `events`.
static inline int baton_epoll_control(int epoll, int op, int fd, uint32_t events) {
    struct epoll_event event = { .events = events, .data = { .fd = fd } };
    int operation = op == 0 ? EPOLL_CTL_ADD : op == 1 ? EPOLL_CTL_MOD : EPOLL_CTL_DEL;
    return epoll_ctl(epoll, operation, fd, &event);
}

/// Waits like epoll_wait, returning ready descriptors and their events in two arrays.
static inline int baton_epoll_wait(int epoll, int *fds, uint32_t *events, int capacity, int timeout) {
    struct epoll_event ready[256];
    if (capacity > 256) capacity = 256;
    int count = epoll_wait(epoll, ready, capacity, timeout);
    for (int i = 0; i < count; i++) {
        fds[i] = ready[i].data.fd;
        events[i] = ready[i].events;
    }
    return count;
}

// sched_getaffinity is a GNU extension (glibc declares it under _GNU_SOURCE only, which the
// Glibc module is not built with): declared here as glibc defines it.
extern int sched_getaffinity(int pid, unsigned long cpusetsize, void *mask);

/// The CPUs in this process's affinity mask (up to 1024), or -1 when it cannot be read.
static inline int baton_affinity_cpu_count(void) {
    unsigned long long mask[16] = {0};
    if (sched_getaffinity(0, sizeof mask, mask) != 0) return -1;
    int count = 0;
    for (int i = 0; i < 16; i++) count += __builtin_popcountll(mask[i]);
    return count;
}

// SQLite's WAL index (the -shm file) begins with two copies of its 48-byte WalIndexHdr
// (src/wal.c): u32 iVersion, u32 unused, u32 iChange, u8 isInit, u8 bigEndCksum, u16 szPage,
// u32 mxFrame, u32 nPage, u32 aFrameCksum[2], u32 aSalt[2], u32 aCksum[2]. A writer stores
// copy 1, then a barrier, then copy 0 (walIndexWriteHdr); a reader loads copy 0, a barrier,
// copy 1, and trusts them only when equal (walIndexTryHdr). This does the same.

/// The WAL index header's change key, (iChange << 32) | mxFrame, from the mapped -shm at
/// `shm`: 1 when the two copies agree and the header is initialized at version 3007000;
/// 0 (and `key` untouched) otherwise, which the caller treats as "changed".
static inline int baton_wal_index_key(const void *shm, uint64_t *key) {
    const volatile uint32_t *words = (const volatile uint32_t *)shm;
    uint32_t first[12], second[12];
    for (int i = 0; i < 12; i++) first[i] = words[i];
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    for (int i = 0; i < 12; i++) second[i] = words[12 + i];
    for (int i = 0; i < 12; i++) if (first[i] != second[i]) return 0;
    if (first[0] != 3007000) return 0;                          // iVersion (WALINDEX_MAX_VERSION)
    if (((const uint8_t *)first)[12] != 1) return 0;            // isInit
    *key = ((uint64_t)first[2] << 32) | (uint64_t)first[4];     // iChange, mxFrame
    return 1;
}

/// An acquiring load of a 64-bit word that another thread stores with `baton_store_release`.
static inline uint64_t baton_load_acquire(const uint64_t *word) { return __atomic_load_n(word, __ATOMIC_ACQUIRE); }

/// A releasing store of a 64-bit word (see `baton_load_acquire`).
static inline void baton_store_release(uint64_t *word, uint64_t value) { __atomic_store_n(word, value, __ATOMIC_RELEASE); }
