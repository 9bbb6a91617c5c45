/* Signals, and what the tool does before one ends it.
 *
 * A mapped file that another process truncates raises SIGBUS on the next read of a page past
 * its new end (MAP_PRIVATE does not help). The library cannot prevent that; the tool turns it
 * into "tensormap: FILE changed size while being read" and exit code 1 instead of a bare bus
 * error. A command may hold several files (compare reads two): each watched file keeps its
 * message, formatted when it was opened, and once mapped its address range, and the handler
 * names the file whose range holds the faulting address (the most recent one when none does: a
 * fault during the header walk, or a sharded checkpoint, whose shards are mapped apart).
 *
 * A signal that ends the process (SIGINT, SIGTERM, SIGHUP and the other terminating ones) while
 * a file is being written would leave its hidden temporary file behind, as large as the output
 * had grown. So every file the tool is writing is guarded here while it is ours to remove: the
 * handler unlinks the guarded paths, then raises the signal again with its default action, so
 * that the process still dies of it (a shell sees 128 + the signal, as before). SIGXFSZ (a
 * file-size limit: `ulimit -f`) is only noted: the write past the limit then fails with EFBIG,
 * the command's own error path says "File too large" and removes its temporary file, and at
 * exit the signal is raised again. A signal ignored when the tool started (nohup, a shell's
 * `trap '' INT`) stays ignored.
 *
 * The handlers call only async-signal-safe functions (unlink, write, sigaction, raise, _exit) on
 * data prepared beforehand. The table of guarded paths changes only on the thread that writes
 * the files, with the signals held (cli_signals_hold), while no other thread runs (the library's
 * decoding threads live inside one call), so a handler never sees a slot half made. */
#include "cli.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { WATCH_MAX = 4, MESSAGE_MAX = 4096 };

typedef struct watched {
    char message[MESSAGE_MAX];
    size_t length;
    const uint8_t *lo, *hi; /* the mapping, or NULL before it is known */
} watched;

/* Slots [0, n_watched) are complete: a slot is written before n_watched counts it. With more
 * files than slots, the last slot is reused. */
static watched watches[WATCH_MAX];
static volatile sig_atomic_t n_watched;

/* ---- the guarded files -------------------------------------------------------------------- */

typedef struct guard {
    char *path;
    int used; /* read and written with __atomic: a handler may run on another thread */
} guard;

static guard *guards;
static size_t n_guards; /* slots allocated */

/* The signals whose default action ends the process and that a handler may catch. SIGBUS has
 * its own handler (below); SIGXFSZ is noted (on_xfsz). */
static const int terminating[] = {SIGHUP,  SIGINT,  SIGQUIT, SIGTERM,   SIGPIPE, SIGALRM,
                                  SIGUSR1, SIGUSR2, SIGXCPU, SIGVTALRM, SIGPROF};

static void remove_guarded(void)
{
    for (size_t i = 0; i < n_guards; i++)
        if (__atomic_load_n(&guards[i].used, __ATOMIC_ACQUIRE))
            unlink(guards[i].path);
}

static void on_terminating(int sig)
{
    remove_guarded();
    /* raised again with the default action: it is delivered when this handler returns (the
     * signal is blocked while it runs), and ends the process as it would have */
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    sigaction(sig, &dfl, NULL);
    raise(sig);
}

static volatile sig_atomic_t file_too_large;

static void on_xfsz(int sig)
{
    (void)sig;
    file_too_large = 1;
}

/* At exit, after the error path has cleaned up: die of SIGXFSZ as the limit meant. */
static void reraise_xfsz(void)
{
    if (!file_too_large)
        return;
    fflush(NULL);
    signal(SIGXFSZ, SIG_DFL);
    raise(SIGXFSZ);
}

static void fill_signal_set(sigset_t *set)
{
    sigemptyset(set);
    for (size_t i = 0; i < sizeof terminating / sizeof terminating[0]; i++)
        sigaddset(set, terminating[i]);
}

/* Install the handlers, once, before the first file is guarded. */
static void install(void)
{
    static bool installed;
    if (installed)
        return;
    installed = true;
    struct sigaction sa, old;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_terminating;
    fill_signal_set(&sa.sa_mask); /* one handler at a time */
    for (size_t i = 0; i < sizeof terminating / sizeof terminating[0]; i++)
        if (sigaction(terminating[i], NULL, &old) == 0 && old.sa_handler != SIG_IGN)
            sigaction(terminating[i], &sa, NULL);
    if (sigaction(SIGXFSZ, NULL, &old) == 0 && old.sa_handler != SIG_IGN) {
        sa.sa_handler = on_xfsz;
        sigaction(SIGXFSZ, &sa, NULL);
        atexit(reraise_xfsz);
    }
}

void cli_signals_hold(sigset_t *saved)
{
    sigset_t set;
    fill_signal_set(&set);
    pthread_sigmask(SIG_BLOCK, &set, saved);
}

void cli_signals_release(const sigset_t *saved) { pthread_sigmask(SIG_SETMASK, saved, NULL); }

bool cli_signal_pending(void)
{
    sigset_t pending;
    if (sigpending(&pending) != 0)
        return false;
    for (size_t i = 0; i < sizeof terminating / sizeof terminating[0]; i++)
        if (sigismember(&pending, terminating[i]) == 1)
            return true;
    return false;
}

int cli_signal_guard(const char *path)
{
    if (!path)
        return -1;
    install();
    char *copy = strdup(path);
    if (!copy)
        return -1;
    sigset_t saved;
    cli_signals_hold(&saved);
    size_t i = 0;
    while (i < n_guards && guards[i].used)
        i++;
    if (i == n_guards) {
        const size_t n = n_guards ? n_guards * 2 : 8;
        guard *g = realloc(guards, n * sizeof *g);
        if (g) {
            memset(g + n_guards, 0, (n - n_guards) * sizeof *g);
            guards = g;
            n_guards = n;
        }
    }
    int slot = -1;
    if (i < n_guards) {
        guards[i].path = copy;
        __atomic_store_n(&guards[i].used, 1, __ATOMIC_RELEASE);
        slot = (int)i;
    } else {
        free(copy);
    }
    cli_signals_release(&saved);
    return slot;
}

void cli_signal_forget(int slot)
{
    if (slot < 0 || (size_t)slot >= n_guards)
        return;
    sigset_t saved;
    cli_signals_hold(&saved);
    __atomic_store_n(&guards[slot].used, 0, __ATOMIC_RELEASE);
    free(guards[slot].path);
    guards[slot].path = NULL;
    cli_signals_release(&saved);
}

/* ---- SIGBUS ------------------------------------------------------------------------------- */

static void on_sigbus(int sig, siginfo_t *info, void *context)
{
    (void)sig, (void)context;
    remove_guarded(); /* a dump cut short must not leave a file whose header claims the shape */
    const int n = n_watched;
    int pick = n - 1;
    for (int i = 0; i < n; i++)
        if (watches[i].lo && (const uint8_t *)info->si_addr >= watches[i].lo &&
            (const uint8_t *)info->si_addr < watches[i].hi)
            pick = i;
    if (pick >= 0) {
        ssize_t unused = write(STDERR_FILENO, watches[pick].message, watches[pick].length);
        (void)unused;
    }
    _exit(CLI_FAIL);
}

void cli_sigbus_watch(const char *name)
{
    static const char prefix[] = "tensormap: ", suffix[] = " changed size while being read\n";
    const int slot = n_watched < WATCH_MAX ? n_watched : WATCH_MAX - 1;
    watched *w = &watches[slot];
    size_t n = strlen(name), room = MESSAGE_MAX - sizeof prefix - sizeof suffix;
    if (n > room)
        n = room; /* a path this long is cut, not dropped */
    memcpy(w->message, prefix, sizeof prefix - 1);
    memcpy(w->message + sizeof prefix - 1, name, n);
    memcpy(w->message + sizeof prefix - 1 + n, suffix, sizeof suffix - 1);
    w->length = sizeof prefix - 1 + n + sizeof suffix - 1;
    w->lo = w->hi = NULL;
    if (n_watched == 0) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = on_sigbus;
        sa.sa_flags = SA_SIGINFO;
        sigemptyset(&sa.sa_mask);
        sigaction(SIGBUS, &sa, NULL);
    }
    if (slot == n_watched)
        n_watched = slot + 1;
}

void cli_sigbus_mapped(const tm_file *f)
{
    const tm_layout *l = tm_file_layout(f);
    if (n_watched == 0 || !l || l->n_shards != 1)
        return;
    watched *w = &watches[n_watched - 1];
    w->hi = tm_file_bytes(f) + l->file_size;
    w->lo = tm_file_bytes(f);
}
