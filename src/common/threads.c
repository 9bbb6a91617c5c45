/* The worker pool of the threaded calls (tm_dequant_tensor, tm_dequant_rows_mt, tm_matvec):
 * threads started per call, each taking chunks from the caller's shared counter until none is
 * left, so a descheduled thread holds back only the chunk it has. */
#include "internal.h"

#include <pthread.h>
#include <unistd.h>

/* Handles live on the caller's stack. */
#define MAX_THREADS 64u

void tm__run_workers(void *(*worker)(void *), void *arg, unsigned n_threads, uint64_t chunks)
{
    unsigned n = n_threads;
    if (n == 0) {
        long online = sysconf(_SC_NPROCESSORS_ONLN);
        n = online < 1 ? 1u : (unsigned)online;
    }
    if (n > MAX_THREADS)
        n = MAX_THREADS;
    if (n > chunks) /* no more threads than chunks; the calling thread is one of them */
        n = chunks ? (unsigned)chunks : 1u;
    pthread_t tids[MAX_THREADS];
    unsigned started = 0;
    /* a thread that cannot be started is not an error: the others take its chunks */
    while (started + 1 < n && pthread_create(&tids[started], NULL, worker, arg) == 0)
        started++;
    worker(arg);
    for (unsigned i = 0; i < started; i++)
        pthread_join(tids[i], NULL);
}
