// Linux calls that Glibc's Swift module does not export. epoll_event is a packed struct
// holding a union, so it never crosses into Swift: these wrappers take plain values.
#include <stdint.h>
#include <sys/epoll.h>

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
