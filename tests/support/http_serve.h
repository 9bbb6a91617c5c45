/* The local HTTP server (tests/support/http_server.py, TM_HTTP_SERVER) for the tests of remote files:
 * on 127.0.0.1, a port the kernel chooses, its log and output in the test's directory. */
#ifndef TM_TEST_HTTP_SERVE_H
#define TM_TEST_HTTP_SERVE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

typedef struct server {
    pid_t pid;
    int port;
    bool tls;
    char log[256], out[256]; /* its request log (JSON lines) and its output */
} server;

/* Start the server on root (cert and key for HTTPS, else NULL), named name in the test's
 * directory. Waits (at most 15 s) for its port. NULL when it listens, else why not (malloc'ed),
 * the server stopped. */
char *server_try_start(server *s, const char *root, const char *name, const char *cert,
                       const char *key);
/* Run program with argv (NULL-terminated), its output into s->out, and wait (at most 15 s) for
 * the port it writes into port_file: server_try_start's part for any server. */
char *server_spawn(server *s, const char *program, const char *const argv[],
                   const char *port_file);
void server_stop(server *s);
/* A remote suite's .init and .fini: the environment cleaned (clean_environment), root made as
 * TEST_DIR/root, the server started on it; on failure the test directory is removed
 * (Criterion runs no .fini after a failed .init) and the suite fails with the reason. The fini
 * stops the server and removes the test directory. */
void server_suite_start(server *s, char root[256], const char *name, const char *cert,
                        const char *key);
void server_suite_stop(server *s);
/* server_suite_start, then HF_ENDPOINT set to the server: hf: names go to it, never to the
 * real Hub. */
void server_suite_start_hub(server *s, char root[256]);
/* The output of `sh -c` of the command fmt makes (malloc'ed), its trailing newline cut; the
 * test fails unless the command succeeds. */
char *shell_ok(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Where s's log ends once no request is in progress (a request a client gave up on may still
 * be writing): the requests of the next command start there. */
size_t server_log_mark(const server *s);
/* The requests s logged since mark, as an array of objects (see http_server.py). */
json_t *server_log_since(const server *s, size_t mark);
/* A copy of the corpus file golden/GOLDEN at ROOT/NAME, for a server on root to serve (the
 * corpus itself is never served). */
void server_put_golden(const char *root, const char *golden, const char *name);
/* A self-signed certificate for 127.0.0.1 and localhost, made in the test's directory into
 * cert and key (paths). NULL when made, else why not (malloc'ed). */
char *server_make_cert(char cert[256], char key[256]);
/* What the server sees must not be mixed with the outside: unset the proxy variables, HF_TOKEN,
 * HF_ENDPOINT, the Hugging Face cache's variables, CURL_CA_BUNDLE, TM_HTTP_*,
 * TM_DOWNLOAD_CHUNK, LD_PRELOAD; HOME becomes the test's directory (so the default cache is
 * in it). */
void clean_environment(void);
void sleep_ms(long ms);

/* Wait until the (plain HTTP) server has no request in progress: a request the tool gave up on
 * may still be writing, and its log line comes when it ends. */
void server_quiet(const server *s);
/* Send request (a whole HTTP/1.0 request) to s on 127.0.0.1 and read its answer into buf
 * (NUL-terminated, at most cap - 1 bytes). */
void server_request(const server *s, const char *request, char *buf, size_t cap);
/* Put the resolver shim (TM_RESOLVE_SHIM: getaddrinfo knows only localhost) in LD_PRELOAD for
 * the tool run next; the test is skipped, saying why, when libcurl resolves past it (c-ares). */
void preload_resolve_shim(void);
/* Where the server's log ends now, once quiet: what a command does next is logged after it. */
size_t server_log_mark(const server *s);
/* The body bytes the server wrote, and the requests it answered, since mark (once quiet). */
void server_traffic_since(const server *s, size_t mark, uint64_t *bytes, uint64_t *requests);

#endif
