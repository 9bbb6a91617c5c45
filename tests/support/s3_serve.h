/* The S3-compatible server of the s3:// tests (tests/support/s3/serve.js: s3rver 3.7.1 with a
 * Signature V4 check and a private bucket, TM_S3_SERVER) on 127.0.0.1, a port the kernel
 * chooses, its data, log and output in the test's directory. Its log is read, and it is
 * stopped, with http_serve.h's calls (server_log_since, server_stop, ...). */
#ifndef TM_TEST_S3_SERVE_H
#define TM_TEST_S3_SERVE_H

#include "http_serve.h"

/* s3rver's own key pair, which the server checks signatures with */
#define S3_KEY "S3RVER"
#define S3_SECRET "S3RVER"

/* Start it (buckets "models", public, and "private", refusing unsigned requests). NULL when it
 * listens, else why not (malloc'ed): node, npm or s3rver missing, or it failed. */
char *s3_server_try_start(server *s);
/* Store the local file path as object key of bucket (through the server's own store). */
void s3_put(const server *s, const char *bucket, const char *key, const char *path);

#endif
