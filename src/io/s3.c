/* Amazon S3's conventions, as the AWS tools follow them: s3://BUCKET/KEY names an object, found
 * at AWS_ENDPOINT_URL_S3 or AWS_ENDPOINT_URL (path-style: ENDPOINT/BUCKET/KEY, as S3-compatible
 * stores expect) or else at https://BUCKET.s3.REGION.amazonaws.com/KEY; the credentials come
 * from AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY / AWS_SESSION_TOKEN, or else from the profile
 * (AWS_PROFILE, default "default") in ~/.aws/credentials and ~/.aws/config; without any, the
 * requests go unsigned (a public bucket). Plain string work: http.c signs and sends. */
#include "source.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#define DEFAULT_REGION "us-east-1"
/* A credentials or config file is a few lines: one larger than this is not read. */
#define INI_MAX (1u << 20)
/* What of an error body's <Code> and <Message> is shown. */
#define CODE_MAX 64
#define MESSAGE_MAX 200
/* tm__s3.credentials for the environment's key pair */
#define FROM_ENV "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"

static const char *env(const char *name)
{
    const char *v = getenv(name);
    return v && *v ? v : NULL;
}

/* ---- ~/.aws/credentials and ~/.aws/config ----------------------------------------------------- */

/* A value in a file's text (not terminated). */
typedef struct span {
    const char *p;
    size_t n;
} span;

enum { KEY_ID, SECRET, TOKEN, REGION, N_KEYS };
static const char *const ini_keys[N_KEYS] = {"aws_access_key_id", "aws_secret_access_key",
                                             "aws_session_token", "region"};

/* What one profile's section of a file says. */
typedef struct profile {
    char *text;          /* the file, read whole (the spans point into it) */
    bool found;          /* the section is there */
    span v[N_KEYS];      /* its values ({NULL, 0}: not set) */
} profile;

static span trim(const char *p, const char *end)
{
    while (p < end && (*p == ' ' || *p == '\t'))
        p++;
    while (end > p && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\r'))
        end--;
    return (span){p, (size_t)(end - p)};
}

static bool span_is(span s, const char *word)
{
    return s.n == strlen(word) && memcmp(s.p, word, s.n) == 0;
}

/* Whether a section header's name (between the brackets) is the profile's: the credentials
 * file names it NAME, the config file "profile NAME" ("default" either way). */
static bool is_section(span name, const char *want, bool config)
{
    if (span_is(name, want))
        return !config || strcmp(want, "default") == 0;
    if (config && name.n > 8 && memcmp(name.p, "profile", 7) == 0 &&
        (name.p[7] == ' ' || name.p[7] == '\t'))
        return span_is(trim(name.p + 8, name.p + name.n), want);
    return false;
}

/* The text of the file at path, read whole into *text (NUL-terminated) and its length; *text
 * NULL (and TM_OK) when there is no such file. */
static tm_status read_small(const char *path, char **text, size_t *len, tm_error *err)
{
    char q[300];
    tm__quote(q, sizeof q, path, strlen(path));
    *text = NULL;
    FILE *f = fopen(path, "rb");
    if (!f)
        return errno == ENOENT ? TM_OK
                               : tm__fail(err, TM_IO, TM_NO_OFFSET, "%s: %s", q, strerror(errno));
    char *buf = malloc(INI_MAX + 1);
    const size_t n = buf ? fread(buf, 1, INI_MAX + 1, f) : 0;
    const bool failed = buf && ferror(f);
    fclose(f);
    const char *nul = buf ? memchr(buf, '\0', n) : NULL;
    tm_status st = !buf     ? tm__fail(err, TM_NOMEM, TM_NO_OFFSET, "out of memory")
                   : failed ? tm__fail(err, TM_IO, TM_NO_OFFSET, "%s: cannot be read", q)
                   : n > INI_MAX
                       ? tm__fail(err, TM_LIMIT, TM_NO_OFFSET,
                                  "%s: larger than %u bytes, which no AWS credentials or config "
                                  "file is; not read", q, INI_MAX)
                   : nul ? tm__fail(err, TM_INVALID_ARG, (uint64_t)(nul - buf),
                                    "%s: holds a NUL byte at byte %zu, so it is not an AWS "
                                    "credentials or config file", q, (size_t)(nul - buf))
                         : TM_OK;
    if (st != TM_OK) {
        free(buf);
        return st;
    }
    buf[n] = '\0';
    *text = buf;
    *len = n;
    return TM_OK;
}

/* The values of the profile's section of the INI file at path (a later value wins), strictly:
 * each line is blank, a comment (# or ;), [SECTION] or KEY = VALUE, or the file is refused,
 * naming its line. */
static tm_status read_profile(const char *path, const char *name, bool config, profile *out,
                              tm_error *err)
{
    memset(out, 0, sizeof *out);
    size_t len;
    tm_status st = read_small(path, &out->text, &len, err);
    if (st != TM_OK || !out->text)
        return st;
    bool in = false;
    const char *p = out->text, *end = out->text + len;
    for (unsigned line = 1; p < end; line++) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *eol = nl ? nl : end;
        const span s = trim(p, eol);
        const char *eq = s.n ? memchr(s.p, '=', s.n) : NULL;
        p = nl ? nl + 1 : end;
        if (s.n == 0 || s.p[0] == '#' || s.p[0] == ';')
            continue;
        if (s.p[0] == '[' && s.p[s.n - 1] == ']' && s.n >= 2) {
            in = is_section(trim(s.p + 1, s.p + s.n - 1), name, config);
            out->found |= in;
        } else if (eq && eq > s.p) {
            const span key = trim(s.p, eq), value = trim(eq + 1, s.p + s.n);
            for (int k = 0; in && k < N_KEYS; k++)
                if (span_is(key, ini_keys[k]))
                    out->v[k] = value;
        } else {
            char q[300];
            tm__quote(q, sizeof q, path, strlen(path));
            st = tm__fail(err, TM_INVALID_ARG, (uint64_t)(s.p - out->text),
                          "%s line %u: neither [section], KEY = VALUE nor a comment", q, line);
            free(out->text);
            memset(out, 0, sizeof *out);
            return st;
        }
    }
    return TM_OK;
}

/* $VAR, or else $HOME/.aws/NAME, malloc'd (NULL: out of memory, or no HOME). */
static char *aws_file(const char *var, const char *name)
{
    const char *set = env(var), *home = env("HOME");
    char *out = NULL;
    if (set)
        return strdup(set);
    if (home && asprintf(&out, "%s/.aws/%s", home, name) < 0)
        out = NULL;
    return out;
}

/* ---- the credentials -------------------------------------------------------------------------- */

static char *dup_span(span s) { return s.p ? strndup(s.p, s.n) : NULL; }

/* The profile's region and, when want_keys, its credentials, the credentials file's before the
 * config file's. named: the profile was asked for by name (AWS_PROFILE), so it must exist. */
static tm_status from_profile(tm__s3 *out, const char *name, bool named, bool want_keys,
                              tm_error *err)
{
    char *paths[2] = {want_keys ? aws_file("AWS_SHARED_CREDENTIALS_FILE", "credentials") : NULL,
                      aws_file("AWS_CONFIG_FILE", "config")};
    profile pf[2] = {{0}, {0}};
    tm_status st = TM_OK;
    for (int i = 0; i < 2 && st == TM_OK; i++)
        if (paths[i])
            st = read_profile(paths[i], name, i == 1, &pf[i], err);
    /* names reach messages quoted: they come from the environment and from files */
    char qname[200], qpath[2][300];
    tm__quote(qname, sizeof qname, name, strlen(name));
    for (int i = 0; i < 2; i++)
        tm__quote(qpath[i], sizeof qpath[i], paths[i] ? paths[i] : "", paths[i] ? strlen(paths[i]) : 0);
    const int with_keys = !want_keys ? -1 : pf[0].v[KEY_ID].p ? 0 : pf[1].v[KEY_ID].p ? 1 : -1;
    if (st == TM_OK && named && !pf[0].found && !pf[1].found)
        st = tm__fail(err, TM_NOT_FOUND, TM_NO_OFFSET,
                      "AWS_PROFILE names the profile %s, which neither %s nor %s has", qname,
                      qpath[0], qpath[1]);
    if (st == TM_OK && with_keys >= 0 && !pf[with_keys].v[SECRET].p)
        st = tm__fail(err, TM_INVALID_ARG, TM_NO_OFFSET,
                      "the profile %s in %s has aws_access_key_id but no aws_secret_access_key",
                      qname, qpath[with_keys]);
    if (st == TM_OK && with_keys >= 0) {
        const profile *k = &pf[with_keys];
        out->key = dup_span(k->v[KEY_ID]);
        out->secret = dup_span(k->v[SECRET]);
        out->token = dup_span(k->v[TOKEN]);
        if (asprintf(&out->credentials, "the profile %s in %s", qname, qpath[with_keys]) < 0)
            out->credentials = NULL;
        if (!out->key || !out->secret || (k->v[TOKEN].p && !out->token) || !out->credentials)
            st = tm__fail(err, TM_NOMEM, TM_NO_OFFSET, "out of memory");
    }
    if (st == TM_OK && pf[1].v[REGION].n && !(out->region = dup_span(pf[1].v[REGION])))
        st = tm__fail(err, TM_NOMEM, TM_NO_OFFSET, "out of memory");
    for (int i = 0; i < 2; i++) {
        free(pf[i].text);
        free(paths[i]);
    }
    return st;
}

/* The environment's credentials, or else the profile's, or none (anonymous). */
static tm_status credentials(tm__s3 *out, tm_error *err)
{
    const char *key = env("AWS_ACCESS_KEY_ID"), *secret = env("AWS_SECRET_ACCESS_KEY");
    if (key || secret) {
        if (!key || !secret)
            return tm__fail(err, TM_INVALID_ARG, TM_NO_OFFSET, "%s is set but %s is not",
                            key ? "AWS_ACCESS_KEY_ID" : "AWS_SECRET_ACCESS_KEY",
                            key ? "AWS_SECRET_ACCESS_KEY" : "AWS_ACCESS_KEY_ID");
        const char *token = env("AWS_SESSION_TOKEN");
        out->key = strdup(key);
        out->secret = strdup(secret);
        out->token = token ? strdup(token) : NULL;
        out->credentials = strdup(FROM_ENV);
        if (!out->key || !out->secret || (token && !out->token) || !out->credentials)
            return tm__fail(err, TM_NOMEM, TM_NO_OFFSET, "out of memory");
        /* the profile for its region only: the keys above win */
        return from_profile(out, env("AWS_PROFILE") ? env("AWS_PROFILE") : "default", false,
                            false, err);
    }
    const char *name = env("AWS_PROFILE");
    return from_profile(out, name ? name : "default", name != NULL, true, err);
}

/* ---- the name --------------------------------------------------------------------------------- */

/* A bucket name as S3 allows one (and as a host name part or a path segment takes it as is). */
static bool bucket_ok(const char *b, size_t n)
{
    if (n < 3 || n > 63)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!((b[i] >= 'a' && b[i] <= 'z') || (b[i] >= '0' && b[i] <= '9') || b[i] == '.' ||
              b[i] == '-' || b[i] == '_' || (b[i] >= 'A' && b[i] <= 'Z')))
            return false;
    return true;
}

tm_status tm__s3_resolve(const char *spec, tm__s3 *out, tm_error *err)
{
    memset(out, 0, sizeof *out);
    const char *bucket = spec + 5, *slash = strchr(bucket, '/');
    const char *key = slash ? slash + 1 : NULL;
    if (!key || !*key || key[strlen(key) - 1] == '/')
        return tm__fail(err, TM_INVALID_ARG, TM_NO_OFFSET,
                        "an S3 path is s3://BUCKET/KEY (the key of an object, not a folder)");
    const size_t bucket_len = (size_t)(slash - bucket);
    if (!bucket_ok(bucket, bucket_len))
        return tm__fail(err, TM_INVALID_ARG, TM_NO_OFFSET,
                        "a bucket name is 3 to 63 letters, digits, '.', '-' or '_'");
    tm_status st = credentials(out, err);
    const char *region = env("AWS_REGION") ? env("AWS_REGION")
                         : env("AWS_DEFAULT_REGION") ? env("AWS_DEFAULT_REGION")
                         : out->region ? out->region : DEFAULT_REGION;
    /* the region goes into a host name and the signature's scope: letters, digits and '-' */
    const size_t region_len = strlen(region);
    if (st == TM_OK && (region_len == 0 || region_len > 32 ||
                        strspn(region, "abcdefghijklmnopqrstuvwxyz0123456789-") != region_len)) {
        char q[100];
        tm__quote(q, sizeof q, region, region_len);
        st = tm__fail(err, TM_INVALID_ARG, TM_NO_OFFSET,
                      "the region %s is not one (lowercase letters, digits and '-', as us-east-1)",
                      q);
    }
    const char *endpoint = env("AWS_ENDPOINT_URL_S3") ? env("AWS_ENDPOINT_URL_S3")
                                                      : env("AWS_ENDPOINT_URL");
    size_t ep_len = endpoint ? strlen(endpoint) : 0;
    while (ep_len > 0 && endpoint[ep_len - 1] == '/')
        ep_len--;
    const size_t cap = ep_len + bucket_len + strlen(region) + 3 * strlen(key) + 64;
    char *url = st == TM_OK ? malloc(cap) : NULL;
    if (st == TM_OK && (!url || asprintf(&out->sigv4, "aws:amz:%s:s3", region) < 0)) {
        out->sigv4 = NULL;
        st = tm__fail(err, TM_NOMEM, TM_NO_OFFSET, "out of memory");
    }
    if (st != TM_OK) {
        free(url);
        tm__s3_free(out);
        return st;
    }
    int n = endpoint ? snprintf(url, cap, "%.*s/%.*s/", (int)ep_len, endpoint, (int)bucket_len,
                                bucket)
                     : snprintf(url, cap, "https://%.*s.s3.%s.amazonaws.com/", (int)bucket_len,
                                bucket, region);
    *tm__percent_encode(url + n, key, strlen(key), true) = '\0';
    out->url = url;
    return TM_OK;
}

void tm__s3_free(tm__s3 *s3)
{
    free(s3->url);
    free(s3->sigv4);
    free(s3->key);
    free(s3->secret);
    free(s3->token);
    free(s3->credentials);
    free(s3->region);
    memset(s3, 0, sizeof *s3);
}

/* ---- what S3 says when it refuses ------------------------------------------------------------- */

/* The text between <tag> and </tag> in body, at most max bytes of it; {NULL, 0} when absent. */
static span xml_element(const uint8_t *body, size_t len, const char *tag, size_t max)
{
    char open[32], close[32];
    snprintf(open, sizeof open, "<%s>", tag);
    snprintf(close, sizeof close, "</%s>", tag);
    const char *start = memmem(body, len, open, strlen(open));
    if (!start)
        return (span){NULL, 0};
    start += strlen(open);
    const size_t left = len - (size_t)((const uint8_t *)start - body);
    const char *stop = memmem(start, left < max + strlen(close) ? left : max + strlen(close),
                              close, strlen(close));
    return stop ? (span){start, (size_t)(stop - start)} : (span){NULL, 0};
}

bool tm__s3_explain(const char *credentials, long code, const uint8_t *body, size_t len,
                    char *out, size_t cap)
{
    const span c = xml_element(body, len, "Code", CODE_MAX);
    /* what to check for the secret and for the access key */
    const bool env_keys = credentials && strcmp(credentials, FROM_ENV) == 0;
    char secret[400], key[400];
    snprintf(secret, sizeof secret, "%s%s", env_keys ? "AWS_SECRET_ACCESS_KEY" : "aws_secret_access_key of ",
             env_keys || !credentials ? "" : credentials);
    snprintf(key, sizeof key, "%s%s", env_keys ? "AWS_ACCESS_KEY_ID" : "aws_access_key_id of ",
             env_keys || !credentials ? "" : credentials);
    if (span_is(c, "NoSuchKey"))
        snprintf(out, cap, "NoSuchKey: the bucket has no object of that key (check the name "
                           "after the bucket)");
    else if (span_is(c, "NoSuchBucket"))
        snprintf(out, cap, "NoSuchBucket: there is no such bucket (check its name%s)",
                 env("AWS_ENDPOINT_URL_S3") || env("AWS_ENDPOINT_URL")
                     ? ", and AWS_ENDPOINT_URL_S3 / AWS_ENDPOINT_URL"
                     : "");
    else if (span_is(c, "SignatureDoesNotMatch"))
        snprintf(out, cap, "SignatureDoesNotMatch: the secret key does not match the access key: "
                           "check %s", secret);
    else if (span_is(c, "InvalidAccessKeyId"))
        snprintf(out, cap, "InvalidAccessKeyId: the server knows no such access key: check %s "
                           "(and that the endpoint is the one it is for)", key);
    else if (span_is(c, "AccessDenied") && credentials)
        snprintf(out, cap, "AccessDenied: the credentials of %s may not read this object (check "
                           "the bucket's policy, or use another profile)", credentials);
    else if (span_is(c, "AccessDenied") || ((code == 401 || code == 403) && !c.p && !credentials))
        snprintf(out, cap, "%s: the bucket is not public, and no credentials are set (set "
                           "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE)",
                 c.p ? "AccessDenied" : "access refused");
    else if ((code == 401 || code == 403) && !c.p)
        snprintf(out, cap, "access refused to the credentials of %s", credentials);
    else if (code >= 300 && code < 400 && !c.p)
        snprintf(out, cap, "a redirect, which an S3 request does not follow (a signed request "
                           "would go elsewhere): check AWS_ENDPOINT_URL_S3 / AWS_ENDPOINT_URL "
                           "and AWS_REGION");
    else if (span_is(c, "ExpiredToken") || span_is(c, "InvalidToken"))
        snprintf(out, cap, "%.*s: the session token is expired or not valid: renew %s",
                 (int)c.n, c.p, env_keys ? "AWS_SESSION_TOKEN" : "aws_session_token");
    else if (span_is(c, "PermanentRedirect") || span_is(c, "AuthorizationHeaderMalformed"))
        snprintf(out, cap, "%.*s: the bucket is in another region than the one the request was "
                           "signed for: set AWS_REGION", (int)c.n, c.p);
    else if (c.p) {
        const span m = xml_element(body, len, "Message", MESSAGE_MAX);
        char qc[3 * CODE_MAX + 8], qm[3 * MESSAGE_MAX + 8];
        tm__quote(qc, sizeof qc, c.p, c.n);
        tm__quote(qm, sizeof qm, m.p ? m.p : "", m.n);
        snprintf(out, cap, "S3 error %s: %s", qc, qm);
    } else
        return false;
    return true;
}
