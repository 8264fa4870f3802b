/* The step's clock is the world's: an LD_PRELOAD library of the testbed (sim/vtime).
 *
 * It maps the shared file named by TESTBED_VTIME_SHM (written by the twin, sim/vtime/shared.py)
 * and answers the wall clocks from it: clock_gettime (REALTIME, MONOTONIC, BOOTTIME, their
 * _COARSE/_RAW/_ALARM forms, TAI), gettimeofday, time, timespec_get. A timed wait (nanosleep,
 * clock_nanosleep relative or TIMER_ABSTIME, usleep, sleep, and the timeouts of poll, ppoll,
 * select, pselect, epoll_wait, epoll_pwait, epoll_pwait2) registers its deadline on the virtual
 * clock in a slot and blocks in the kernel until the twin wakes it at that deadline: a sleep on
 * a futex word of its slot, a descriptor wait in a real poll of the caller's own descriptors
 * plus the thread's wake pipe (so it returns at once when one of the caller's is ready). A
 * waiting thread is asleep in the kernel, never on the CPU, so the twin can tell it from one
 * that was woken by a descriptor; it moves the clock only when every task of the step is
 * asleep and off the CPU (sim/twin/clock.py VirtualDriver).
 * CPU-time clocks stay real. Without the variable (or with a file that does not map) every call
 * is the C library's own.
 *
 * The layout (little-endian, 64 bytes of header, then VT_SLOTS slots of 16 bytes) is shared
 * with sim/vtime/shared.py: keep both in step (VT_VERSION).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/select.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define VT_MAGIC 0x454d495456544254ULL /* "TBTVTIME" */
#define VT_VERSION 2
#define VT_SLOTS 1024
/* The longest a waiting thread stays blocked without looking at the clock itself: the twin
 * wakes it when its deadline comes; this only bounds a wake that was lost. */
#define SAFETY_MS 200

struct vt_slot {
    int32_t tid;      /* 0 free, -1 being filled, else the waiting thread's id */
    uint32_t seq;     /* bumped at every registration, so a reused slot differs */
    int64_t deadline; /* virtual ns (the clock's "now" units) */
    int32_t pid;      /* the waiting thread's process */
    int32_t wake_fd;  /* a descriptor waits: the write end of the thread's wake pipe, else -1 */
    uint32_t wake;    /* a sleep waits on this futex word: the twin bumps it and wakes it */
    uint32_t pad;
    uint64_t wake_ino; /* the wake pipe's inode: the twin writes only to that pipe */
    uint64_t pad2;
};

struct vt_shared {
    uint64_t magic;
    uint32_t version;
    uint32_t nslots;
    int64_t now;            /* virtual ns: written only by the twin */
    int64_t realtime_base;  /* CLOCK_REALTIME = realtime_base + now */
    int64_t monotonic_base; /* CLOCK_MONOTONIC (and BOOTTIME) = monotonic_base + now */
    uint64_t gen;           /* bumped at every change of the slot table */
    uint32_t epoch;         /* bumped by the twin at every move of now (a futex word) */
    uint32_t pad0;
    uint64_t pad1;
    struct vt_slot slots[VT_SLOTS];
};

static struct vt_shared *vt;

static int (*real_clock_gettime)(clockid_t, struct timespec *);
static int (*real_poll)(struct pollfd *, nfds_t, int);
static int (*real_ppoll)(struct pollfd *, nfds_t, const struct timespec *, const sigset_t *);
static int (*real_select)(int, fd_set *, fd_set *, fd_set *, struct timeval *);
static int (*real_pselect)(int, fd_set *, fd_set *, fd_set *, const struct timespec *, const sigset_t *);
static int (*real_epoll_wait)(int, struct epoll_event *, int, int);
static int (*real_epoll_pwait)(int, struct epoll_event *, int, int, const sigset_t *);

__attribute__((constructor)) static void vt_init(void) {
    real_clock_gettime = dlsym(RTLD_NEXT, "clock_gettime");
    real_poll = dlsym(RTLD_NEXT, "poll");
    real_ppoll = dlsym(RTLD_NEXT, "ppoll");
    real_select = dlsym(RTLD_NEXT, "select");
    real_pselect = dlsym(RTLD_NEXT, "pselect");
    real_epoll_wait = dlsym(RTLD_NEXT, "epoll_wait");
    real_epoll_pwait = dlsym(RTLD_NEXT, "epoll_pwait");
    const char *path = getenv("TESTBED_VTIME_SHM");
    if (path == NULL || *path == '\0') return;
    int fd = open(path, O_RDWR | O_CLOEXEC);
    if (fd < 0) return;
    struct stat st;
    if (fstat(fd, &st) != 0 || (size_t)st.st_size < sizeof(struct vt_shared)) { close(fd); return; }
    void *map = mmap(NULL, sizeof(struct vt_shared), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (map == MAP_FAILED) return;
    struct vt_shared *shared = map;
    if (shared->magic != VT_MAGIC || shared->version != VT_VERSION || shared->nslots != VT_SLOTS) {
        munmap(map, sizeof(struct vt_shared));
        return;
    }
    vt = shared;
}

/* -- the clock ------------------------------------------------------------------------------ */

static inline int64_t vt_now(void) { return __atomic_load_n(&vt->now, __ATOMIC_ACQUIRE); }

/* 1: a clock of the world (realtime family), 2: monotonic family, 0: left real (CPU clocks). */
static int family(clockid_t clk) {
    switch (clk) {
    case CLOCK_REALTIME: case CLOCK_REALTIME_COARSE: case CLOCK_TAI:
#ifdef CLOCK_REALTIME_ALARM
    case CLOCK_REALTIME_ALARM:
#endif
        return 1;
    case CLOCK_MONOTONIC: case CLOCK_MONOTONIC_COARSE: case CLOCK_MONOTONIC_RAW: case CLOCK_BOOTTIME:
#ifdef CLOCK_BOOTTIME_ALARM
    case CLOCK_BOOTTIME_ALARM:
#endif
        return 2;
    default:
        return 0;
    }
}

static int64_t base_of(int fam) { return fam == 1 ? vt->realtime_base : vt->monotonic_base; }

static void to_timespec(int64_t ns, struct timespec *ts) {
    ts->tv_sec = ns / 1000000000LL;
    ts->tv_nsec = ns % 1000000000LL;
    if (ts->tv_nsec < 0) { ts->tv_nsec += 1000000000LL; ts->tv_sec -= 1; }
}

static int64_t ns_of(const struct timespec *ts) { return (int64_t)ts->tv_sec * 1000000000LL + ts->tv_nsec; }

int clock_gettime(clockid_t clk, struct timespec *ts) {
    int fam = vt != NULL ? family(clk) : 0;
    if (fam == 0) {
        if (real_clock_gettime == NULL) return (int)syscall(SYS_clock_gettime, clk, ts);
        return real_clock_gettime(clk, ts);
    }
    to_timespec(base_of(fam) + vt_now(), ts);
    return 0;
}

int gettimeofday(struct timeval *restrict tv, void *restrict tz) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    tv->tv_sec = ts.tv_sec;
    tv->tv_usec = ts.tv_nsec / 1000;
    if (tz != NULL) memset(tz, 0, 2 * sizeof(int));
    return 0;
}

time_t time(time_t *out) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    if (out != NULL) *out = ts.tv_sec;
    return ts.tv_sec;
}

int timespec_get(struct timespec *ts, int base) {
    if (base != TIME_UTC) return 0;
    clock_gettime(CLOCK_REALTIME, ts);
    return base;
}

/* -- the slots ------------------------------------------------------------------------------ */

static int claim(int64_t deadline, int wake_fd, uint64_t wake_ino) {
    int32_t tid = (int32_t)syscall(SYS_gettid);
    for (int i = 0; i < VT_SLOTS; i++) {
        int32_t expected = 0;
        struct vt_slot *slot = &vt->slots[i];
        if (__atomic_load_n(&slot->tid, __ATOMIC_RELAXED) != 0) continue;
        if (__atomic_compare_exchange_n(&slot->tid, &expected, -1, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
            slot->deadline = deadline;
            slot->pid = (int32_t)getpid();
            slot->wake_fd = wake_fd;
            slot->wake_ino = wake_ino;
            __atomic_add_fetch(&slot->seq, 1, __ATOMIC_RELAXED);
            __atomic_store_n(&slot->tid, tid, __ATOMIC_RELEASE);
            __atomic_add_fetch(&vt->gen, 1, __ATOMIC_ACQ_REL);
            return i;
        }
    }
    return -1;
}

static void release(int i) {
    if (i < 0) return;
    __atomic_store_n(&vt->slots[i].tid, 0, __ATOMIC_RELEASE);
    __atomic_add_fetch(&vt->gen, 1, __ATOMIC_ACQ_REL);
}

/* Each thread's wake pipe (made at its first descriptor wait; a forked child makes its own). */
static __thread int wake_rd = -1, wake_wr = -1, wake_owner = 0;
static __thread uint64_t wake_inode = 0;

static int wake_pipe(void) {
    int pid = (int)getpid();
    if (wake_rd >= 0 && wake_owner == pid) {
        struct stat st;
        if (fstat(wake_rd, &st) == 0 && (uint64_t)st.st_ino == wake_inode) return 0;
        wake_rd = wake_wr = -1;  /* closed (or replaced) by the program: make a new one */
    }
    if (wake_rd >= 0 && wake_owner != pid) {  /* inherited over fork: the parent's pipe */
        close(wake_rd);
        close(wake_wr);
        wake_rd = wake_wr = -1;
    }
    int fds[2];
    if (pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0) return -1;
    struct stat st;
    if (fstat(fds[0], &st) != 0) { close(fds[0]); close(fds[1]); return -1; }
    wake_rd = fds[0];
    wake_wr = fds[1];
    wake_owner = pid;
    wake_inode = (uint64_t)st.st_ino;
    return 0;
}

static void drain_wake(void) {
    char buf[64];
    while (read(wake_rd, buf, sizeof buf) > 0) {}
}

/* Wait until the virtual clock reaches deadline; 0, or EINTR (the virtual time left in rem). */
static int vt_sleep_until(int64_t deadline, int64_t *left) {
    if (vt_now() >= deadline) { *left = 0; return 0; }
    int slot = claim(deadline, -1, 0);
    int err = 0;
    if (slot < 0) {
        /* Every slot taken: wait on the real clock for the virtual interval (not expected). */
        struct timespec ts;
        to_timespec(deadline - vt_now(), &ts);
        if (syscall(SYS_nanosleep, &ts, NULL) != 0 && errno == EINTR) err = EINTR;
    } else {
        uint32_t *word = &vt->slots[slot].wake;
        const struct timespec safety = {0, SAFETY_MS * 1000000L};
        for (;;) {
            uint32_t seen = __atomic_load_n(word, __ATOMIC_ACQUIRE);
            if (vt_now() >= deadline) break;
            if (syscall(SYS_futex, word, FUTEX_WAIT, seen, &safety, NULL, 0) != 0 && errno == EINTR) {
                err = EINTR;
                break;
            }
        }
        release(slot);
    }
    int64_t rest = deadline - vt_now();
    *left = rest > 0 ? rest : 0;
    return err;
}

/* -- sleeps --------------------------------------------------------------------------------- */

int clock_nanosleep(clockid_t clk, int flags, const struct timespec *req, struct timespec *rem) {
    int fam = vt != NULL ? family(clk) : 0;
    if (fam == 0) {
        int r = (int)syscall(SYS_clock_nanosleep, clk, flags, req, rem);
        return r == 0 ? 0 : errno;
    }
    if (req == NULL || req->tv_nsec < 0 || req->tv_nsec >= 1000000000L) return EINVAL;
    int64_t deadline = (flags & TIMER_ABSTIME) ? ns_of(req) - base_of(fam) : vt_now() + ns_of(req);
    int64_t left = 0;
    int err = vt_sleep_until(deadline, &left);
    if (err != 0 && rem != NULL && !(flags & TIMER_ABSTIME)) to_timespec(left, rem);
    return err;
}

int nanosleep(const struct timespec *req, struct timespec *rem) {
    int err = clock_nanosleep(CLOCK_MONOTONIC, 0, req, rem);
    if (err != 0) { errno = err; return -1; }
    return 0;
}

int usleep(useconds_t usec) {
    struct timespec ts = {usec / 1000000, (long)(usec % 1000000) * 1000};
    return nanosleep(&ts, NULL);
}

unsigned int sleep(unsigned int seconds) {
    struct timespec ts = {seconds, 0}, rem = {0, 0};
    if (nanosleep(&ts, &rem) != 0) return (unsigned int)rem.tv_sec + (rem.tv_nsec > 0);
    return 0;
}

/* -- descriptor waits: the caller's descriptors and the wake pipe, until one is ready ------ */

#define STACK_FDS 64

/* Poll fds (n of them) and the wake pipe until one of fds is ready, the deadline passes or a
 * signal comes: as poll returns (the count of fds ready; 0 at the deadline; -1 and errno). */
static int vt_poll_until(struct pollfd *fds, nfds_t n, int64_t deadline, const sigset_t *mask, int use_mask) {
    if (wake_pipe() != 0) return -2;
    struct pollfd local[STACK_FDS + 1];
    struct pollfd *all = n + 1 <= STACK_FDS + 1 ? local : malloc((n + 1) * sizeof(struct pollfd));
    if (all == NULL) return -2;
    memcpy(all, fds, n * sizeof(struct pollfd));
    all[n].fd = wake_rd;
    all[n].events = POLLIN;
    int slot = claim(deadline, wake_wr, wake_inode);
    const struct timespec safety = {0, SAFETY_MS * 1000000L};
    int r;
    for (;;) {
        for (nfds_t i = 0; i <= n; i++) all[i].revents = 0;
        if (use_mask) {
            if (real_ppoll == NULL) real_ppoll = dlsym(RTLD_NEXT, "ppoll");
            r = real_ppoll(all, n + 1, &safety, mask);
        } else {
            r = real_poll(all, n + 1, SAFETY_MS);
        }
        if (r < 0) break;
        if (all[n].revents) { drain_wake(); r--; }
        if (r > 0) break;
        if (vt_now() >= deadline) { r = 0; break; }
    }
    int saved = errno;
    release(slot);
    for (nfds_t i = 0; i < n; i++) fds[i].revents = all[i].revents;
    if (all != local) free(all);
    errno = saved;
    return r;
}

int poll(struct pollfd *fds, nfds_t n, int timeout) {
    if (real_poll == NULL) real_poll = dlsym(RTLD_NEXT, "poll");
    if (vt == NULL || timeout <= 0) return real_poll(fds, n, timeout);
    int r = vt_poll_until(fds, n, vt_now() + (int64_t)timeout * 1000000LL, NULL, 0);
    return r == -2 ? real_poll(fds, n, timeout) : r;
}

int ppoll(struct pollfd *fds, nfds_t n, const struct timespec *tmo, const sigset_t *mask) {
    if (real_ppoll == NULL) real_ppoll = dlsym(RTLD_NEXT, "ppoll");
    if (vt == NULL || tmo == NULL || (tmo->tv_sec == 0 && tmo->tv_nsec == 0)) return real_ppoll(fds, n, tmo, mask);
    int r = vt_poll_until(fds, n, vt_now() + ns_of(tmo), mask, 1);
    return r == -2 ? real_ppoll(fds, n, tmo, mask) : r;
}

/* An epoll set is itself a descriptor: wait for it to be readable, then collect its events. */
static int vt_epoll_until(int epfd, struct epoll_event *events, int max, int64_t deadline,
                          const sigset_t *mask, int use_mask) {
    if (real_epoll_wait == NULL) real_epoll_wait = dlsym(RTLD_NEXT, "epoll_wait");
    for (;;) {
        struct pollfd one = {epfd, POLLIN, 0};
        int r = vt_poll_until(&one, 1, deadline, mask, use_mask);
        if (r <= 0) return r;  /* the deadline, a signal, an error, or -2 */
        r = real_epoll_wait(epfd, events, max, 0);
        if (r != 0) return r;
    }
}

int epoll_wait(int epfd, struct epoll_event *events, int max, int timeout) {
    if (real_epoll_wait == NULL) real_epoll_wait = dlsym(RTLD_NEXT, "epoll_wait");
    if (vt == NULL || timeout <= 0) return real_epoll_wait(epfd, events, max, timeout);
    int r = vt_epoll_until(epfd, events, max, vt_now() + (int64_t)timeout * 1000000LL, NULL, 0);
    return r == -2 ? real_epoll_wait(epfd, events, max, timeout) : r;
}

int epoll_pwait(int epfd, struct epoll_event *events, int max, int timeout, const sigset_t *mask) {
    if (real_epoll_pwait == NULL) real_epoll_pwait = dlsym(RTLD_NEXT, "epoll_pwait");
    if (vt == NULL || timeout <= 0) return real_epoll_pwait(epfd, events, max, timeout, mask);
    int r = vt_epoll_until(epfd, events, max, vt_now() + (int64_t)timeout * 1000000LL, mask, mask != NULL);
    return r == -2 ? real_epoll_pwait(epfd, events, max, timeout, mask) : r;
}

int epoll_pwait2(int epfd, struct epoll_event *events, int max, const struct timespec *tmo, const sigset_t *mask) {
    if (vt == NULL || tmo == NULL || (tmo->tv_sec == 0 && tmo->tv_nsec == 0))
        return (int)syscall(SYS_epoll_pwait2, epfd, events, max, tmo, mask, _NSIG / 8);
    int r = vt_epoll_until(epfd, events, max, vt_now() + ns_of(tmo), mask, mask != NULL);
    return r == -2 ? (int)syscall(SYS_epoll_pwait2, epfd, events, max, tmo, mask, _NSIG / 8) : r;
}

/* select and pselect: the sets as descriptors to poll; once one is ready, the real call with a
 * zero timeout fills the sets as the caller expects. */
static int vt_select_until(int n, fd_set *r, fd_set *w, fd_set *e, int64_t deadline,
                           const sigset_t *mask, int use_mask) {
    if (n < 0 || n > FD_SETSIZE) return -2;
    struct pollfd local[STACK_FDS];
    struct pollfd *fds = local;
    int count = 0, cap = STACK_FDS;
    for (int fd = 0; fd < n; fd++) {
        short ev = 0;
        if (r != NULL && FD_ISSET(fd, r)) ev |= POLLIN;
        if (w != NULL && FD_ISSET(fd, w)) ev |= POLLOUT;
        if (e != NULL && FD_ISSET(fd, e)) ev |= POLLPRI;
        if (ev == 0) continue;
        if (count == cap) {
            struct pollfd *more = malloc((size_t)FD_SETSIZE * sizeof(struct pollfd));
            if (more == NULL) { if (fds != local) free(fds); return -2; }
            memcpy(more, fds, (size_t)count * sizeof(struct pollfd));
            if (fds != local) free(fds);
            fds = more;
            cap = FD_SETSIZE;
        }
        fds[count].fd = fd;
        fds[count].events = ev;
        count++;
    }
    int res = vt_poll_until(fds, (nfds_t)count, deadline, mask, use_mask);
    if (fds != local) free(fds);
    if (res == -2 || res < 0) return res;
    if (res == 0) {
        if (r != NULL) FD_ZERO(r);
        if (w != NULL) FD_ZERO(w);
        if (e != NULL) FD_ZERO(e);
        return 0;
    }
    struct timeval zero = {0, 0};
    if (real_select == NULL) real_select = dlsym(RTLD_NEXT, "select");
    return real_select(n, r, w, e, &zero);
}

int select(int n, fd_set *r, fd_set *w, fd_set *e, struct timeval *tv) {
    if (real_select == NULL) real_select = dlsym(RTLD_NEXT, "select");
    if (vt == NULL || tv == NULL || (tv->tv_sec == 0 && tv->tv_usec == 0)) return real_select(n, r, w, e, tv);
    int64_t deadline = vt_now() + (int64_t)tv->tv_sec * 1000000000LL + (int64_t)tv->tv_usec * 1000;
    int res = vt_select_until(n, r, w, e, deadline, NULL, 0);
    if (res == -2) return real_select(n, r, w, e, tv);
    int64_t left = deadline - vt_now();  /* Linux leaves the time not slept in tv */
    if (left < 0) left = 0;
    tv->tv_sec = left / 1000000000LL;
    tv->tv_usec = (left % 1000000000LL) / 1000;
    return res;
}

int pselect(int n, fd_set *r, fd_set *w, fd_set *e, const struct timespec *tmo, const sigset_t *mask) {
    if (real_pselect == NULL) real_pselect = dlsym(RTLD_NEXT, "pselect");
    if (vt == NULL || tmo == NULL || (tmo->tv_sec == 0 && tmo->tv_nsec == 0)) return real_pselect(n, r, w, e, tmo, mask);
    int res = vt_select_until(n, r, w, e, vt_now() + ns_of(tmo), mask, mask != NULL);
    return res == -2 ? real_pselect(n, r, w, e, tmo, mask) : res;
}
