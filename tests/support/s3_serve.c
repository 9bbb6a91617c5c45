/* The S3-compatible server the s3:// tests run against, started and stopped by them. */
#include "s3_serve.h"

#include "test_cli.h"

#include <criterion/criterion.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char *why(const char *what)
{
    char *m = strdup(what);
    cr_assert_not_null(m);
    return m;
}

char *s3_server_try_start(server *s)
{
    memset(s, 0, sizeof *s);
    const char *script = getenv("TM_S3_SERVER");
    if (!script)
        return why("TM_S3_SERVER is not set (run the tests through make)");
    if (access("/usr/bin/node", X_OK) != 0)
        return why("the S3 test server needs node (as root: apt-get install nodejs npm; then "
                   "scripts/deps.sh test installs s3rver)");
    char module[600];
    snprintf(module, sizeof module, "%.*s/node_modules/s3rver/package.json",
             (int)(strrchr(script, '/') - script), script);
    if (access(module, R_OK) != 0)
        return why("s3rver is not installed in tests/support/s3/node_modules (scripts/deps.sh "
                   "test installs it with npm ci; it needs the npm registry)");
    char dir[256], port_file[256];
    snprintf(dir, sizeof dir, "%s/s3-data", test_dir());
    snprintf(port_file, sizeof port_file, "%s/s3.port", test_dir());
    snprintf(s->log, sizeof s->log, "%s/s3.log", test_dir());
    snprintf(s->out, sizeof s->out, "%s/s3.out", test_dir());
    cr_assert(mkdir(dir, 0700) == 0 || errno == EEXIST, "mkdir %s", dir);
    const char *argv[] = {"node", script, "--dir", dir, "--port-file", port_file,
                          "--log", s->log, NULL};
    return server_spawn(s, "/usr/bin/node", argv, port_file);
}

/* A hex escape of every byte but the unreserved ones, for a query value. */
static void query_encode(char *out, size_t cap, const char *s)
{
    size_t n = 0;
    for (; *s && n + 4 < cap; s++) {
        const unsigned char c = (unsigned char)*s;
        if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
            c == '-' || c == '_' || c == '.' || c == '/')
            out[n++] = (char)c;
        else
            n += (size_t)snprintf(out + n, cap - n, "%%%02X", c);
    }
    out[n] = '\0';
}

void s3_put(const server *s, const char *bucket, const char *key, const char *path)
{
    char b[256], k[768], p[768], req[2048];
    query_encode(b, sizeof b, bucket);
    query_encode(k, sizeof k, key);
    query_encode(p, sizeof p, path);
    snprintf(req, sizeof req, "GET /_put?bucket=%s&key=%s&path=%s HTTP/1.0\r\n"
             "Host: 127.0.0.1\r\n\r\n", b, k, p);
    char buf[1024];
    server_request(s, req, buf, sizeof buf);
    cr_assert(strstr(buf, " 200 ") && strstr(buf, "stored"), "storing %s as %s/%s: %s", path,
              bucket, key, buf);
}
