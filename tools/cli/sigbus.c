/* A mapped file that another process truncates raises SIGBUS on the next read of a page past
 * its new end (MAP_PRIVATE does not help). The library cannot prevent that; the tool turns it
 * into "tensormap: FILE changed size while being read" and exit code 1 instead of a bare bus
 * error. The handler only calls write(2) and _exit(2), both async-signal-safe, on messages
 * formatted beforehand, when each file was opened.
 *
 * A command may hold several files (compare reads two): each watched file keeps its message
 * and, once mapped, its address range, and the handler names the file whose range holds the
 * faulting address (the most recent one when none does: a fault during the header walk, or a
 * sharded checkpoint, whose shards are mapped apart). */
#include "cli.h"

#include <signal.h>
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

/* The temporary file being written (cli_output.c), removed before exiting: a dump cut short
 * must not leave a file whose header claims the full shape. */
static char output_temp[4096];
static volatile sig_atomic_t output_set;

void cli_sigbus_output(const char *temp_path)
{
    output_set = 0;
    if (!temp_path || strlen(temp_path) >= sizeof output_temp)
        return;
    strcpy(output_temp, temp_path);
    output_set = 1;
}

static void on_sigbus(int sig, siginfo_t *info, void *context)
{
    (void)sig, (void)context;
    if (output_set)
        unlink(output_temp);
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
