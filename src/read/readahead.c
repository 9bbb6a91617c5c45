/* Bytes read ahead (tm_prefetch): a queue of pieces of a file, worked through in order by a
 * thread of the file's own. A remote file's pieces are fetched into buffers the file holds until
 * they are read (tm__readahead_read takes them instead of asking the server, so each byte
 * planned crosses the network once); a mapped file's pieces are touched page by page, so the
 * kernel reads them in before the decoder gets there. One mutex guards the queue and one
 * condition says that a piece changed state: the thread waits on it for work, a reader for a
 * piece still arriving. */
#include "../common/internal.h"

#include <pthread.h>
#include <stdlib.h>

/* The most bytes in one piece (as a remote read of 16 MiB goes out as four ranges at once),
 * and the most pieces held, so that finding a piece stays cheap. */
#define PIECE_MAX (16ull << 20)
#define PIECES_MAX 4096u
#define PAGE 4096u

typedef enum state { QUEUED, FETCHING, ARRIVED, FAILED } state;

typedef struct piece {
    struct piece *next;
    uint32_t shard;
    uint64_t offset, len;
    tm__ahead_kind kind;
    state state;
    bool dropped;    /* freed by the thread once it arrives: nobody will read it */
    uint8_t *bytes;  /* ARRIVED fetch: len bytes */
    uint64_t taken;  /* bytes of it read so far: freed when all are */
    tm_status st;    /* FAILED: why */
    tm_error err;
} piece;

struct tm__readahead {
    const tm_file *file;
    pthread_mutex_t lock;
    pthread_cond_t changed;
    piece *head;       /* in the order planned */
    uint64_t held;     /* bytes of fetch pieces queued, in flight or arrived and not yet read */
    uint32_t n_pieces;
    bool started, stopping;
    pthread_t thread;
};

tm_status tm__readahead_new(tm_file *f, tm_error *err)
{
    tm__readahead *ra = calloc(1, sizeof *ra);
    if (!ra)
        return tm__fail(err, TM_NOMEM, TM_NO_OFFSET, "out of memory");
    ra->file = f;
    pthread_mutex_init(&ra->lock, NULL);
    pthread_cond_init(&ra->changed, NULL);
    f->readahead = ra;
    return TM_OK;
}

/* With the lock held: take p out of the queue and free it. */
static void unlink_piece(tm__readahead *ra, piece *p)
{
    for (piece **at = &ra->head; *at; at = &(*at)->next) {
        if (*at == p) {
            *at = p->next;
            break;
        }
    }
    if (p->kind == TM__AHEAD_FETCH)
        ra->held -= p->len;
    ra->n_pieces--;
    free(p->bytes);
    free(p);
}

/* With the lock held: everything not in flight goes, and what is in flight goes when it
 * arrives. */
static void drop_locked(tm__readahead *ra)
{
    for (piece *p = ra->head, *next; p; p = next) {
        next = p->next;
        if (p->state == FETCHING)
            p->dropped = true;
        else
            unlink_piece(ra, p);
    }
}

void tm__readahead_drop(const tm_file *f)
{
    tm__readahead *ra = f->readahead;
    pthread_mutex_lock(&ra->lock);
    drop_locked(ra);
    pthread_mutex_unlock(&ra->lock);
}

void tm__readahead_free(tm__readahead *ra)
{
    if (!ra)
        return;
    pthread_mutex_lock(&ra->lock);
    ra->stopping = true;
    drop_locked(ra);
    pthread_cond_broadcast(&ra->changed);
    pthread_mutex_unlock(&ra->lock);
    if (ra->started)
        pthread_join(ra->thread, NULL);
    while (ra->head) /* the pieces the thread left: none once it has stopped, but be sure */
        unlink_piece(ra, ra->head);
    pthread_cond_destroy(&ra->changed);
    pthread_mutex_destroy(&ra->lock);
    free(ra);
}

/* Read one page in every PAGE bytes of a mapped piece, so that the kernel brings them in now
 * (and the decoder finds them there); the sum keeps the loads from being optimised away. */
static void touch(const tm__source *s, uint64_t offset, uint64_t len)
{
    const volatile uint8_t *p = tm__source_view(s, offset, len);
    uint8_t sum = 0;
    for (uint64_t i = 0; p && i < len; i += PAGE)
        sum = (uint8_t)(sum + p[i]);
    (void)sum;
}

/* A piece's work, without the lock. */
static void work(const tm_file *f, piece *p)
{
    const tm__source *s = &f->maps[p->shard];
    if (p->kind == TM__AHEAD_TOUCH) {
        touch(s, p->offset, p->len);
        p->st = TM_OK;
        return;
    }
    p->bytes = malloc((size_t)p->len);
    p->st = p->bytes ? tm__source_read(s, p->offset, p->len, p->bytes, &p->err)
                     : tm__fail(&p->err, TM_NOMEM, TM_NO_OFFSET,
                                "out of memory for %" PRIu64 " bytes read ahead",
                                (uint64_t)p->len);
}

/* With the lock held: do p's work (the lock released meanwhile), and say so. Whoever takes a
 * queued piece does it, the thread or a reader that wants it now. */
static void do_piece(tm__readahead *ra, piece *p)
{
    p->state = FETCHING;
    pthread_mutex_unlock(&ra->lock);
    work(ra->file, p);
    pthread_mutex_lock(&ra->lock);
    p->state = p->st == TM_OK ? ARRIVED : FAILED;
    /* a touched piece has done its work once it is done; a dropped one has no reader */
    if (p->dropped || p->kind == TM__AHEAD_TOUCH)
        unlink_piece(ra, p);
    pthread_cond_broadcast(&ra->changed);
}

static void *run(void *arg)
{
    tm__readahead *ra = arg;
    pthread_mutex_lock(&ra->lock);
    for (;;) {
        piece *p = ra->head;
        while (p && p->state != QUEUED)
            p = p->next;
        if (!p) {
            if (ra->stopping)
                break;
            pthread_cond_wait(&ra->changed, &ra->lock);
            continue;
        }
        do_piece(ra, p);
    }
    pthread_mutex_unlock(&ra->lock);
    return NULL;
}

/* With the lock held: the queue's last piece, when [offset, ...) of shard continues it and it is
 * still waiting with room to grow. */
static piece *continued(tm__readahead *ra, uint32_t shard, uint64_t offset, tm__ahead_kind kind)
{
    piece *last = ra->head;
    while (last && last->next)
        last = last->next;
    return last && last->state == QUEUED && last->kind == kind && last->shard == shard &&
                   last->offset + last->len == offset && last->len < PIECE_MAX
               ? last
               : NULL;
}

/* With the lock held: append a new piece at the end of the queue. */
static piece *append(tm__readahead *ra, uint32_t shard, uint64_t offset, tm__ahead_kind kind)
{
    piece *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    *p = (piece){.shard = shard, .offset = offset, .kind = kind, .state = QUEUED};
    piece **at = &ra->head;
    while (*at)
        at = &(*at)->next;
    *at = p;
    ra->n_pieces++;
    return p;
}

tm_status tm__readahead_queue(const tm_file *f, uint32_t shard, uint64_t offset, uint64_t len,
                              tm__ahead_kind kind, uint64_t limit, uint64_t *planned,
                              tm_error *err)
{
    tm__readahead *ra = f->readahead;
    tm_status st = TM_OK;
    pthread_mutex_lock(&ra->lock);
    if (!ra->started) {
        if (pthread_create(&ra->thread, NULL, run, ra) != 0)
            st = tm__fail(err, TM_NOMEM, TM_NO_OFFSET, "no thread can be started to read ahead");
        ra->started = st == TM_OK;
    }
    while (st == TM_OK && len > 0) {
        /* a piece touched holds no memory: only a fetched one counts against the limit */
        const uint64_t room = kind == TM__AHEAD_TOUCH ? len
                              : limit > ra->held      ? limit - ra->held
                                                      : 0;
        piece *p = continued(ra, shard, offset, kind);
        if (!p && ra->n_pieces >= PIECES_MAX)
            break;
        const uint64_t grow = p ? PIECE_MAX - p->len : PIECE_MAX;
        uint64_t k = len < grow ? len : grow;
        k = k < room ? k : room;
        if (k == 0)
            break; /* the buffer is full: the rest is read when it is read */
        if (!p && !(p = append(ra, shard, offset, kind))) {
            st = tm__fail(err, TM_NOMEM, TM_NO_OFFSET, "out of memory for a plan");
            break;
        }
        p->len += k;
        if (kind == TM__AHEAD_FETCH)
            ra->held += k;
        *planned += k;
        offset += k;
        len -= k;
    }
    pthread_cond_broadcast(&ra->changed);
    pthread_mutex_unlock(&ra->lock);
    return st;
}

/* With the lock held: the fetch piece of shard that holds byte offset, or NULL; *next_start is
 * lowered to the start of the nearest piece after offset. */
static piece *covering(tm__readahead *ra, uint32_t shard, uint64_t offset, uint64_t *next_start)
{
    for (piece *p = ra->head; p; p = p->next) {
        if (p->kind != TM__AHEAD_FETCH || p->shard != shard || p->dropped)
            continue;
        if (p->offset <= offset && offset - p->offset < p->len)
            return p;
        if (p->offset > offset && p->offset < *next_start)
            *next_start = p->offset;
    }
    return NULL;
}

tm_status tm__readahead_read(const tm_file *f, uint32_t shard, uint64_t offset, uint64_t len,
                             void *buf, tm_error *err)
{
    tm__readahead *ra = f->readahead;
    const tm__source *s = &f->maps[shard];
    uint8_t *dst = buf;
    tm_status st = TM_OK;
    pthread_mutex_lock(&ra->lock);
    while (st == TM_OK && len > 0) {
        uint64_t next_start = offset + len;
        piece *p = covering(ra, shard, offset, &next_start);
        if (!p) { /* not planned: from the source, as far as the next piece planned */
            pthread_mutex_unlock(&ra->lock);
            const uint64_t k = next_start - offset;
            st = tm__source_read(s, offset, k, dst, err);
            pthread_mutex_lock(&ra->lock);
            offset += k, dst += k, len -= k;
        } else if (p->state == QUEUED) {
            /* not begun: fetch it here rather than wait behind the pieces before it */
            do_piece(ra, p);
        } else if (p->state == FETCHING) {
            pthread_cond_wait(&ra->changed, &ra->lock);
        } else if (p->state == FAILED) {
            st = p->st;
            if (err)
                *err = p->err;
            unlink_piece(ra, p); /* said once: a read after this one asks the server again */
        } else {
            const uint64_t at = offset - p->offset, left = p->len - at;
            const uint64_t k = len < left ? len : left;
            memcpy(dst, p->bytes + at, (size_t)k);
            p->taken += k;
            if (p->taken >= p->len)
                unlink_piece(ra, p);
            offset += k, dst += k, len -= k;
        }
    }
    pthread_mutex_unlock(&ra->lock);
    return st;
}
