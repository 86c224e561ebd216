/*
 * libsmtlab_pin.so: the LD_PRELOAD library behind `smtlab pin` (and, later,
 * the engine's pinning of user commands). It wraps pthread_create so that
 * every thread of an unmodified program is pinned, one by one, in creation
 * order, to a list of CPUs (as likwid-pin does), and it records where each
 * thread really ran.
 *
 * Why C and not Rust: this library is loaded into arbitrary programs (Python,
 * C, C++, Java, ...). It must not bring a Rust runtime, a second allocator or
 * Rust's panic machinery into them, it must interpose a libc symbol with the
 * exact C ABI, and it must be embedded in the smtlab binary and written out
 * at run time, so it has to be a small self-contained shared object built
 * together with smtlab. A C shim compiled by build.rs (with the `cc` crate's
 * compiler) is the practical way to get that; a Rust cdylib would need a
 * second cargo build of another crate at build time and would still link
 * Rust's std unless written entirely `no_std`.
 *
 * Interface (environment variables, read once per process image, in the
 * constructor; documented for Rust users in smtlab-core/src/pin.rs):
 *
 *   SMTLAB_PIN_CPUS    comma list of OS CPU indexes, in order: "1,0,3".
 *                      Main thread -> cpus[0]; the k-th created thread that is
 *                      not skipped -> cpus[(k + 1) % n] (round robin).
 *                      Unset or empty: do not pin, only report.
 *   SMTLAB_PIN_SKIP    hexadecimal mask (optional 0x), at most 64 bits. Bit i
 *                      set: the i-th created thread (pthread_create calls
 *                      counted from 0, main thread not counted) is not pinned
 *                      to one CPU; it gets the whole CPU list instead of
 *                      inheriting its creator's single CPU. Skipped threads do
 *                      not consume a CPU of the round robin.
 *   SMTLAB_PIN_REPORT  absolute path of a file to append records to (opened
 *                      with O_APPEND for every write, one write(2) per line,
 *                      so processes sharing it do not interleave lines):
 *     S <pid> <tid> <index> <pinned>                     a thread started
 *     E <pid> <tid> <index> <pinned> <last> <comm>       a thread ended, or
 *                                                        was alive at exit()
 *   fields separated by one TAB; index -1 is a process's main thread;
 *   pinned -1 means "not pinned to one CPU" (skipped, or report-only);
 *   last is field 39 (processor) of /proc/self/task/<tid>/stat, -1 if
 *   unreadable; comm is the thread's name with control characters replaced.
 *
 * Pinning point: the new thread pins itself (sched_setaffinity(0, ...)) in a
 * start trampoline, before the program's start routine runs. That is
 * race-free: no instruction of the program's thread code runs, and no memory
 * is first-touched, on the wrong CPU. Pinning from the creator with
 * pthread_setaffinity_np after pthread_create returns is racy: the new thread
 * may already be running (and allocating, first-touching, calling
 * sched_getaffinity) on the inherited CPU, and for a detached thread that has
 * already exited the pthread_t is dangling. The creation index and CPU are
 * decided in pthread_create (in the creating thread, with atomic counters),
 * so the order is the order of pthread_create calls, as in likwid-pin; a call
 * that fails still consumes its index.
 *
 * Children: LD_PRELOAD and the SMTLAB_PIN_* variables are inherited, as with
 * likwid-pin, so every exec'd child re-runs the constructor: its main thread
 * is pinned to cpus[0] and its threads are counted from 0 again. A child made
 * by fork() without exec keeps the parent's counters and its one thread keeps
 * the affinity of the thread that forked.
 *
 * Not covered: statically linked programs and setuid programs (the dynamic
 * loader does not preload into them), threads made without pthread_create
 * (raw clone(2)), threads glibc creates internally (they do not go through
 * the PLT). The constructor does no malloc of its own; pthread_create's
 * trampoline argument is malloc'ed (glibc's pthread_create allocates anyway).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))

#define MAX_LIST 16384   /* entries of SMTLAB_PIN_CPUS (smtlab checks too) */
#define MAX_CPU 65536    /* OS indexes are below this (smtlab's MAX_CPU + 1) */
#define MASK_WORDS (MAX_CPU / 64)
#define MAX_SLOTS 4096   /* threads alive at once that can be reported */

typedef int (*create_fn)(pthread_t *, const pthread_attr_t *,
                         void *(*)(void *), void *);

/* Configuration, written once by init() before init_state becomes 2. */
static int cpus[MAX_LIST];
static long ncpus;
static uint64_t skip_mask;
static uint64_t list_mask[MASK_WORDS];
static size_t list_mask_bytes;
static char report_path[4096];
static int reporting;
static pthread_key_t slot_key;
static int key_ok;

static int init_state;      /* 0 not started, 1 running, 2 done (atomic) */
static create_fn real_create; /* atomic */
static long created;        /* pthread_create calls so far (atomic) */
static long pinned_count;   /* threads given a CPU of the round robin (atomic) */

enum { FREE = 0, BUSY = 1, ALIVE = 2 };
struct slot {
    int state; /* atomic */
    pid_t tid;
    long index;
    int cpu;
};
static struct slot slots[MAX_SLOTS];

struct start {
    void *(*fn)(void *);
    void *arg;
    long index;
    int cpu; /* >= 0 pin there; -1 the whole list; -2 leave alone */
};

/* ---- small async-signal-safe helpers: no stdio, no malloc ---- */

static pid_t my_tid(void) { return (pid_t)syscall(SYS_gettid); }

struct line {
    char b[320];
    size_t n;
};

static void put_s(struct line *l, const char *s)
{
    while (*s && l->n < sizeof l->b - 1)
        l->b[l->n++] = *s++;
}

static void put_i(struct line *l, long v)
{
    char tmp[24];
    int i = 0;
    unsigned long u = v < 0 ? 0UL - (unsigned long)v : (unsigned long)v;
    do {
        tmp[i++] = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (v < 0)
        tmp[i++] = '-';
    while (i > 0 && l->n < sizeof l->b - 1)
        l->b[l->n++] = tmp[--i];
}

static void say(const char *a, long num, const char *b)
{
    struct line l = {.n = 0};
    put_s(&l, "smtlab pin: ");
    put_s(&l, a);
    if (num >= 0)
        put_i(&l, num);
    put_s(&l, b);
    put_s(&l, "\n");
    ssize_t r = write(2, l.b, l.n);
    (void)r;
}

static int open_report(void)
{
    return open(report_path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
}

static void write_line(int fd, const struct line *l)
{
    ssize_t r = write(fd, l->b, l->n);
    (void)r;
}

/* Field 39 (processor) and comm of /proc/self/task/<tid>/stat. */
static void read_stat(pid_t tid, int *last, char *comm, size_t comm_size)
{
    struct line path = {.n = 0};
    char buf[1024];
    *last = -1;
    comm[0] = '?';
    comm[1] = 0;
    put_s(&path, "/proc/self/task/");
    put_i(&path, tid);
    put_s(&path, "/stat");
    path.b[path.n] = 0;
    int fd = open(path.b, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return;
    buf[n] = 0;
    char *open_paren = strchr(buf, '(');
    char *close_paren = strrchr(buf, ')');
    if (!open_paren || !close_paren || close_paren < open_paren)
        return;
    size_t c = 0;
    for (char *p = open_paren + 1; p < close_paren && c < comm_size - 1; p++)
        comm[c++] = (*p < 0x20 || *p == 0x7f) ? '?' : *p;
    comm[c] = 0;
    /* After ") " comes field 3 (state); processor is field 39. */
    char *p = close_paren + 1;
    for (int field = 3;; field++) {
        while (*p == ' ')
            p++;
        if (field == 39 || !*p)
            break;
        while (*p && *p != ' ')
            p++;
    }
    if (*p >= '0' && *p <= '9') {
        long v = 0;
        while (*p >= '0' && *p <= '9' && v < MAX_CPU)
            v = v * 10 + (*p++ - '0');
        *last = (int)v;
    }
}

static void report_start(pid_t tid, long index, int cpu)
{
    if (!reporting)
        return;
    struct line l = {.n = 0};
    put_s(&l, "S\t");
    put_i(&l, getpid());
    put_s(&l, "\t");
    put_i(&l, tid);
    put_s(&l, "\t");
    put_i(&l, index);
    put_s(&l, "\t");
    put_i(&l, cpu >= 0 ? cpu : -1);
    put_s(&l, "\n");
    int fd = open_report();
    if (fd >= 0) {
        write_line(fd, &l);
        close(fd);
    }
}

static void report_end(int fd, const struct slot *s)
{
    char comm[64];
    int last;
    read_stat(s->tid, &last, comm, sizeof comm);
    struct line l = {.n = 0};
    put_s(&l, "E\t");
    put_i(&l, getpid());
    put_s(&l, "\t");
    put_i(&l, s->tid);
    put_s(&l, "\t");
    put_i(&l, s->index);
    put_s(&l, "\t");
    put_i(&l, s->cpu >= 0 ? s->cpu : -1);
    put_s(&l, "\t");
    put_i(&l, last);
    put_s(&l, "\t");
    put_s(&l, comm);
    put_s(&l, "\n");
    write_line(fd, &l);
}

/* ---- the registry of live threads (for the report at exit) ---- */

static struct slot *claim_slot(pid_t tid, long index, int cpu)
{
    for (int i = 0; i < MAX_SLOTS; i++) {
        int expected = FREE;
        if (__atomic_compare_exchange_n(&slots[i].state, &expected, BUSY, 0,
                                        __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
            slots[i].tid = tid;
            slots[i].index = index;
            slots[i].cpu = cpu;
            __atomic_store_n(&slots[i].state, ALIVE, __ATOMIC_RELEASE);
            return &slots[i];
        }
    }
    return NULL; /* more than MAX_SLOTS live threads: pinned, not reported */
}

/* TSD destructor: the thread is ending (return, pthread_exit, cancel). */
static void on_thread_exit(void *p)
{
    struct slot *s = p;
    int expected = ALIVE;
    if (!__atomic_compare_exchange_n(&s->state, &expected, BUSY, 0,
                                     __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
        return; /* already reported by the exit() path */
    int saved = errno;
    int fd = open_report();
    if (fd >= 0) {
        report_end(fd, s);
        close(fd);
    }
    __atomic_store_n(&s->state, FREE, __ATOMIC_RELEASE);
    errno = saved;
}

static void track(pid_t tid, long index, int cpu, int set_tsd)
{
    if (!reporting)
        return;
    report_start(tid, index, cpu);
    struct slot *s = claim_slot(tid, index, cpu);
    if (s && set_tsd && key_ok)
        pthread_setspecific(slot_key, s);
}

/* ---- pinning ---- */

static const char *why(int err)
{
    switch (err) {
    case EINVAL:
        return " (CPU offline or outside this process's cpuset)";
    case EPERM:
        return " (not permitted)";
    default:
        return "";
    }
}

/* Pin thread `tid` (0: the caller) to `cpu`, or to the whole list if -1. */
static void pin(pid_t tid, int cpu, long index)
{
    long r;
    if (ncpus == 0 || cpu < -1)
        return;
    if (cpu >= 0) {
        size_t words = (size_t)cpu / 64 + 1;
        uint64_t one[words];
        memset(one, 0, sizeof one);
        one[cpu / 64] = 1ULL << (cpu % 64);
        r = syscall(SYS_sched_setaffinity, tid, sizeof one, one);
    } else {
        r = syscall(SYS_sched_setaffinity, tid, list_mask_bytes, list_mask);
    }
    if (r != 0) {
        int err = errno;
        if (cpu < 0)
            say("cannot give a skipped thread the CPU list", -1, why(err));
        else if (index < 0)
            say("cannot pin the main thread to CPU ", cpu, why(err));
        else
            say("cannot pin a thread to CPU ", cpu, why(err));
        errno = err;
    }
}

/* ---- initialisation (constructor, or first pthread_create if earlier) ---- */

static void parse_cpus(const char *s)
{
    long n = 0;
    const char *p = s;
    while (*p) {
        long v = 0;
        if (*p < '0' || *p > '9')
            goto bad;
        while (*p >= '0' && *p <= '9') {
            v = v * 10 + (*p++ - '0');
            if (v >= MAX_CPU)
                goto bad;
        }
        if (n >= MAX_LIST)
            goto bad;
        cpus[n++] = (int)v;
        if (*p == ',')
            p++;
        else if (*p)
            goto bad;
    }
    ncpus = n;
    return;
bad:
    ncpus = 0;
    say("ignoring malformed SMTLAB_PIN_CPUS; threads are not pinned", -1, "");
}

static void parse_skip(const char *s)
{
    uint64_t m = 0;
    int digits = 0;
    if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
        s += 2;
    for (; *s; s++) {
        int d;
        if (*s >= '0' && *s <= '9')
            d = *s - '0';
        else if (*s >= 'a' && *s <= 'f')
            d = *s - 'a' + 10;
        else if (*s >= 'A' && *s <= 'F')
            d = *s - 'A' + 10;
        else
            goto bad;
        if (m >> 60)
            goto bad;
        m = (m << 4) | (uint64_t)d;
        digits++;
    }
    skip_mask = m;
    return;
bad:
    skip_mask = 0;
    say("ignoring malformed SMTLAB_PIN_SKIP; no thread is skipped", -1, "");
}

/*
 * The real pthread_create. Since glibc 2.34 it lives in libc.so.6 as
 * pthread_create@@GLIBC_2.34 (the default) plus a compat alias with the
 * architecture's first version (GLIBC_2.2.5 on x86_64, the same code). Our
 * definition is unversioned, so it binds callers linked against any version.
 * We ask for the default by name with dlvsym so the choice is explicit; with
 * older glibc (pthread_create in libpthread.so.0, no GLIBC_2.34 version)
 * plain dlsym(RTLD_NEXT) returns the default (@@) version, never a hidden
 * compat one.
 */
static create_fn resolve_real(void)
{
    create_fn f = __atomic_load_n(&real_create, __ATOMIC_ACQUIRE);
    if (f)
        return f;
#ifdef __GLIBC__
    f = (create_fn)dlvsym(RTLD_NEXT, "pthread_create", "GLIBC_2.34");
#endif
    if (!f)
        f = (create_fn)dlsym(RTLD_NEXT, "pthread_create");
    if (f)
        __atomic_store_n(&real_create, f, __ATOMIC_RELEASE);
    return f;
}

static void after_fork_child(void);

static void init(void)
{
    int expected = 0;
    if (!__atomic_compare_exchange_n(&init_state, &expected, 1, 0,
                                     __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
        while (__atomic_load_n(&init_state, __ATOMIC_ACQUIRE) != 2)
            sched_yield();
        return;
    }
    int saved = errno;
    const char *c = getenv("SMTLAB_PIN_CPUS");
    const char *k = getenv("SMTLAB_PIN_SKIP");
    const char *r = getenv("SMTLAB_PIN_REPORT");
    if (c && *c)
        parse_cpus(c);
    if (k && *k)
        parse_skip(k);
    if (r && *r) {
        size_t len = strlen(r);
        if (len < sizeof report_path) {
            memcpy(report_path, r, len + 1);
            reporting = 1;
        } else {
            say("SMTLAB_PIN_REPORT is too long; no report", -1, "");
        }
    }
    int top = 0;
    for (long i = 0; i < ncpus; i++) {
        list_mask[cpus[i] / 64] |= 1ULL << (cpus[i] % 64);
        if (cpus[i] > top)
            top = cpus[i];
    }
    list_mask_bytes = ((size_t)top / 64 + 1) * sizeof(uint64_t);
    resolve_real();
    if (ncpus > 0 || reporting) {
        key_ok = pthread_key_create(&slot_key, on_thread_exit) == 0;
        pthread_atfork(NULL, NULL, after_fork_child);
    }
    /* The main thread's tid is the pid, so this is right from any thread. */
    pid_t main_tid = getpid();
    int main_cpu = ncpus > 0 ? cpus[0] : -1;
    pin(main_tid, main_cpu, -1);
    track(main_tid, -1, main_cpu, my_tid() == main_tid);
    errno = saved;
    __atomic_store_n(&init_state, 2, __ATOMIC_RELEASE);
}

__attribute__((constructor)) static void smtlab_pin_init(void) { init(); }

/* A fork()ed child has one thread, the one that forked: make it the child's
 * main thread and forget the parent's threads (they do not exist here). */
static void after_fork_child(void)
{
    struct slot *mine = key_ok ? pthread_getspecific(slot_key) : NULL;
    int cpu = mine ? mine->cpu : -1;
    for (int i = 0; i < MAX_SLOTS; i++)
        if (__atomic_load_n(&slots[i].state, __ATOMIC_RELAXED) != FREE)
            __atomic_store_n(&slots[i].state, FREE, __ATOMIC_RELAXED);
    if (key_ok)
        pthread_setspecific(slot_key, NULL);
    track(getpid(), -1, cpu, 1);
}

/* exit(): report every thread still alive (ended ones reported themselves). */
__attribute__((destructor)) static void smtlab_pin_fini(void)
{
    if (!reporting)
        return;
    int saved = errno;
    int fd = -1;
    for (int i = 0; i < MAX_SLOTS; i++) {
        int expected = ALIVE;
        if (!__atomic_compare_exchange_n(&slots[i].state, &expected, BUSY, 0,
                                         __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
            continue;
        if (fd < 0)
            fd = open_report();
        if (fd >= 0)
            report_end(fd, &slots[i]); /* left BUSY: reported once */
    }
    if (fd >= 0)
        close(fd);
    errno = saved;
}

/* ---- the wrapper ---- */

static void *trampoline(void *p)
{
    struct start s = *(struct start *)p;
    free(p);
    int saved = errno;
    pid_t tid = my_tid();
    pin(0, s.cpu, s.index);
    track(tid, s.index, s.cpu, 1);
    errno = saved;
    return s.fn(s.arg);
}

EXPORT int pthread_create(pthread_t *thread, const pthread_attr_t *attr,
                          void *(*fn)(void *), void *arg)
{
    if (__atomic_load_n(&init_state, __ATOMIC_ACQUIRE) != 2)
        init(); /* called from another library's constructor, before ours */
    create_fn real = resolve_real();
    if (!real)
        return EAGAIN;
    if (ncpus == 0 && !reporting)
        return real(thread, attr, fn, arg);

    long index = __atomic_fetch_add(&created, 1, __ATOMIC_RELAXED);
    int cpu;
    if (ncpus == 0)
        cpu = -2;
    else if (index < 64 && (skip_mask >> index) & 1)
        cpu = -1;
    else {
        long k = __atomic_fetch_add(&pinned_count, 1, __ATOMIC_RELAXED);
        cpu = cpus[(k + 1) % ncpus];
    }
    struct start *s = malloc(sizeof *s);
    if (!s)
        return EAGAIN;
    s->fn = fn;
    s->arg = arg;
    s->index = index;
    s->cpu = cpu;
    int rc = real(thread, attr, trampoline, s);
    if (rc != 0)
        free(s);
    return rc;
}
