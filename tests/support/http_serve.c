/* The local HTTP server (tests/support/http_server.py) the remote-file tests and the README's examples
 * run against, started and stopped by the tests. */
#include "http_serve.h"

#include "test_cli.h"

#include <criterion/criterion.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* A message (malloc'ed) saying why the server could not start. */
__attribute__((format(printf, 1, 2))) static char *why(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *m = NULL;
    if (vasprintf(&m, fmt, ap) < 0)
        m = NULL;
    va_end(ap);
    cr_assert_not_null(m);
    return m;
}

char *server_try_start(server *s, const char *root, const char *name, const char *cert,
                       const char *key)
{
    const char *script = getenv("TM_HTTP_SERVER");
    if (!script)
        return why("TM_HTTP_SERVER is not set (run the tests through make)");
    if (access(script, R_OK) != 0)
        return why("the test server %s is missing", script);
    if (access("/usr/bin/python3", X_OK) != 0)
        return why("the test server needs /usr/bin/python3 (as root: apt-get install "
                   "python3)");
    char port_file[256];
    snprintf(port_file, sizeof port_file, "%s/%s.port", test_dir(), name);
    snprintf(s->log, sizeof s->log, "%s/%s.log", test_dir(), name);
    snprintf(s->out, sizeof s->out, "%s/%s.out", test_dir(), name);
    s->tls = cert != NULL;
    const char *argv[] = {"python3", script, "--root", root, "--port-file", port_file, "--log",
                          s->log, cert ? "--tls" : NULL, cert, key, NULL};
    return server_spawn(s, "/usr/bin/python3", argv, port_file);
}

char *server_spawn(server *s, const char *program, const char *const argv[],
                   const char *port_file)
{
    fflush(NULL);
    pid_t pid = fork();
    if (pid == -1)
        return why("fork: %s", strerror(errno));
    if (pid == 0) {
        int out = open(s->out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        int in = open("/dev/null", O_RDONLY);
        if (out < 0 || in < 0 || dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(out, 2) < 0)
            _exit(127);
        char *args[16]; /* execv's type for argv: the same pointers, copied */
        size_t n = 0;
        while (argv[n] && n + 1 < sizeof args / sizeof args[0])
            n++;
        memcpy(args, argv, n * sizeof *args);
        args[n] = NULL;
        execv(program, args);
        _exit(127);
    }
    s->pid = pid;
    for (int waited = 0;; waited += 10) {
        FILE *f = fopen(port_file, "r");
        if (f) {
            int ok = fscanf(f, "%d", &s->port);
            fclose(f);
            if (ok == 1)
                return NULL;
            server_stop(s);
            return why("the server's port file %s holds no number", port_file);
        }
        int st;
        if (waitpid(pid, &st, WNOHANG) == pid) {
            s->pid = 0;
            char *out = read_all(s->out, NULL), *m;
            m = why("the test server exited before it listened:\n%s", out);
            free(out);
            return m;
        }
        if (waited >= 15000) {
            server_stop(s);
            char *out = read_all(s->out, NULL), *m;
            m = why("the test server wrote no port file within 15 s:\n%s", out);
            free(out);
            return m;
        }
        sleep_ms(10);
    }
}

void server_suite_start(server *s, char root[256], const char *name, const char *cert,
                        const char *key)
{
    clean_environment();
    snprintf(root, 256, "%s/root", test_dir());
    cr_assert(mkdir(root, 0700) == 0 || errno == EEXIST, "mkdir %s", root);
    char *failed = server_try_start(s, root, name, cert, key);
    if (failed) { /* Criterion runs no .fini after a failed .init: clean up here */
        test_cleanup();
        cr_assert_fail("%s", failed);
    }
}

void server_suite_start_hub(server *s, char root[256])
{
    server_suite_start(s, root, "plain", NULL, NULL);
    char endpoint[64];
    snprintf(endpoint, sizeof endpoint, "http://127.0.0.1:%d", s->port);
    setenv("HF_ENDPOINT", endpoint, 1);
}

char *shell_ok(const char *fmt, ...)
{
    char cmd[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    int status;
    char *out = shell_output(cmd, &status);
    cr_assert_eq(status, 0, "%s", cmd);
    size_t n = strlen(out);
    if (n && out[n - 1] == '\n')
        out[n - 1] = '\0';
    return out;
}

void server_suite_stop(server *s)
{
    server_stop(s);
    test_cleanup();
}

void server_stop(server *s)
{
    if (s->pid <= 0)
        return;
    kill(s->pid, SIGTERM);
    int st;
    for (int waited = 0; waited < 5000; waited += 10) {
        if (waitpid(s->pid, &st, WNOHANG) == s->pid) {
            s->pid = 0;
            return;
        }
        sleep_ms(10);
    }
    kill(s->pid, SIGKILL);
    waitpid(s->pid, &st, 0);
    s->pid = 0;
}

void clean_environment(void)
{
    static const char *const vars[] = {
        "http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "all_proxy", "ALL_PROXY",
        "no_proxy",   "NO_PROXY",    "HF_TOKEN",   "CURL_CA_BUNDLE", "SSL_CERT_FILE",
        "SSL_CERT_DIR", "CURL_HOME", "TM_HTTP_CHUNK", "TM_HTTP_HEAD_LIMIT", "TM_HTTP_TIMEOUT",
        "HF_ENDPOINT", "LD_PRELOAD", "HF_HUB_CACHE", "HF_HOME", "HF_HUB_OFFLINE",
        "XDG_CACHE_HOME", "TM_DOWNLOAD_CHUNK"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
        unsetenv(vars[i]);
    /* no curlrc either: libcurl does not read one, but say where HOME is */
    setenv("HOME", test_dir(), 1);
}


void server_request(const server *s, const char *request, char *buf, size_t cap)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    cr_assert_geq(fd, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)s->port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    cr_assert_eq(connect(fd, (struct sockaddr *)&a, sizeof a), 0, "connect: %s", strerror(errno));
    cr_assert_eq(write(fd, request, strlen(request)), (ssize_t)strlen(request));
    size_t n = 0;
    for (ssize_t got; n < cap - 1 && (got = read(fd, buf + n, cap - 1 - n)) > 0;)
        n += (size_t)got;
    buf[n] = '\0';
    close(fd);
}

void server_quiet(const server *s)
{
    char buf[512];
    server_request(s, "GET /_quiet HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n", buf, sizeof buf);
    cr_assert(strstr(buf, " 200 ") && strstr(buf, "quiet"), "the server stayed busy: %s", buf);
}

void preload_resolve_shim(void)
{
    const char *shim = getenv("TM_RESOLVE_SHIM");
    cr_assert_not_null(shim, "TM_RESOLVE_SHIM is not set (run the tests through make)");
    /* without the shim the tool would ask a real resolver: never run it then */
    cr_assert_eq(access(shim, R_OK), 0, "the shim %s is missing (make builds it)", shim);
    /* a libcurl that resolves with c-ares never calls getaddrinfo: the shim could not stop it */
    char cmd[600];
    snprintf(cmd, sizeof cmd, "ldd '%s' 2>&1", getenv("TM_TOOL"));
    int st;
    char *libs = shell_output(cmd, &st);
    const bool cares = strstr(libs, "libcares") != NULL;
    free(libs);
    if (cares)
        cr_skip_test("libcurl resolves host names with c-ares here, past the getaddrinfo shim: "
                     "not run, so that no name is looked up off the machine");
    char asan[512];
    snprintf(asan, sizeof asan, "%s:verify_asan_link_order=0",
             getenv("ASAN_OPTIONS") ? getenv("ASAN_OPTIONS") : "");
    setenv("ASAN_OPTIONS", asan, 1);
    setenv("LD_PRELOAD", shim, 1);
}

size_t server_log_mark(const server *s)
{
    server_quiet(s);
    struct stat st;
    return stat(s->log, &st) == 0 ? (size_t)st.st_size : 0;
}

void server_traffic_since(const server *s, size_t mark, uint64_t *bytes, uint64_t *requests)
{
    server_quiet(s);
    *bytes = *requests = 0;
    struct stat st;
    if (stat(s->log, &st) != 0)
        return;
    size_t len;
    char *text = read_all(s->log, &len);
    cr_assert_leq(mark, len);
    for (char *line = strtok(text + mark, "\n"); line; line = strtok(NULL, "\n")) {
        json_error_t e;
        json_t *j = json_loads(line, 0, &e);
        cr_assert_not_null(j, "a log line is not JSON (%s): %s", e.text, line);
        *bytes += json_u64(j, "bytes");
        *requests += 1;
        json_decref(j);
    }
    free(text);
}

json_t *server_log_since(const server *s, size_t mark)
{
    server_quiet(s);
    json_t *all = json_array();
    struct stat st;
    if (stat(s->log, &st) != 0)
        return all;
    size_t len;
    char *text = read_all(s->log, &len);
    cr_assert_leq(mark, len);
    char *save = NULL;
    for (char *line = strtok_r(text + mark, "\n", &save); line;
         line = strtok_r(NULL, "\n", &save)) {
        json_error_t e;
        json_t *j = json_loads(line, 0, &e);
        cr_assert_not_null(j, "a log line is not JSON (%s): %s", e.text, line);
        json_array_append_new(all, j);
    }
    free(text);
    return all;
}

char *server_make_cert(char cert[256], char key[256])
{
    if (system("command -v openssl >/dev/null 2>&1") != 0)
        return why("the openssl command is missing (as root: apt-get install openssl); an "
                   "HTTPS test needs it to make a certificate");
    snprintf(cert, 256, "%s", test_path("cert.pem"));
    snprintf(key, 256, "%s", test_path("key.pem"));
    char cmd[1024];
    snprintf(cmd, sizeof cmd,
             "openssl req -x509 -newkey rsa:2048 -nodes -keyout '%s' -out '%s' -days 2 "
             "-subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1,DNS:localhost 2>&1",
             key, cert);
    int st;
    char *out = shell_output(cmd, &st);
    char *failed = st == 0 ? NULL : why("openssl failed: %s", out);
    free(out);
    return failed;
}

void server_put_golden(const char *root, const char *golden, const char *name)
{
    const char *corpus = getenv("TM_CORPUS");
    cr_assert_not_null(corpus, "TM_CORPUS is not set (run the tests through make)");
    char from[512], to[512];
    snprintf(from, sizeof from, "%s/golden/%s", corpus, golden);
    snprintf(to, sizeof to, "%s/%s", root, name);
    size_t n;
    char *bytes = read_all(from, &n);
    FILE *f = fopen(to, "wb");
    cr_assert_not_null(f, "%s", to);
    cr_assert_eq(fwrite(bytes, 1, n, f), n);
    cr_assert_eq(fclose(f), 0);
    free(bytes);
}
