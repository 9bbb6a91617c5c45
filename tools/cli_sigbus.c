/* A mapped file that another process truncates raises SIGBUS on the next read of a page past
 * its new end (MAP_PRIVATE does not help). The library cannot prevent that; the tool turns it
 * into "tensormap: FILE changed size while being read" and exit code 1 instead of a bare bus
 * error. The handler only calls write(2) and _exit(2), both async-signal-safe, on a message
 * formatted beforehand, when the file was opened. */
#include "cli.h"

#include <signal.h>
#include <string.h>
#include <unistd.h>

#define SIGBUS_MESSAGE_MAX 4096

/* Two buffers so that naming a second file never rewrites the message a handler may be
 * writing: the new one is formatted in the idle buffer, then published by flipping `current`. */
static char messages[2][SIGBUS_MESSAGE_MAX];
static size_t lengths[2];
static volatile sig_atomic_t current = -1;

static void on_sigbus(int sig)
{
    (void)sig;
    int i = current;
    if (i >= 0) {
        ssize_t unused = write(STDERR_FILENO, messages[i], lengths[i]);
        (void)unused;
    }
    _exit(CLI_FAIL);
}

void cli_sigbus_watch(const char *name)
{
    static const char prefix[] = "tensormap: ", suffix[] = " changed size while being read\n";
    int next = current == 0 ? 1 : 0;
    size_t n = strlen(name), room = SIGBUS_MESSAGE_MAX - sizeof prefix - sizeof suffix;
    if (n > room)
        n = room; /* a path this long is cut, not dropped */
    char *m = messages[next];
    memcpy(m, prefix, sizeof prefix - 1);
    memcpy(m + sizeof prefix - 1, name, n);
    memcpy(m + sizeof prefix - 1 + n, suffix, sizeof suffix - 1);
    lengths[next] = sizeof prefix - 1 + n + sizeof suffix - 1;
    if (current < 0) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_sigbus;
        sigemptyset(&sa.sa_mask);
        sigaction(SIGBUS, &sa, NULL);
    }
    current = next;
}
