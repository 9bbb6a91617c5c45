/* The Hugging Face Hub's conventions, as its own tools follow them: hf:OWNER/REPO/FILE names a
 * file on HF_ENDPOINT (default https://huggingface.co), and HF_TOKEN is the token for that
 * endpoint. Plain string work: http.c does the requests. */
#include "source.h"

#include <stdio.h>
#include <stdlib.h>

#define DEFAULT_HF_ENDPOINT "https://huggingface.co"

static const char *endpoint(void)
{
    const char *e = getenv("HF_ENDPOINT");
    return e && *e ? e : DEFAULT_HF_ENDPOINT;
}

/* hf:OWNER/REPO/FILE[@REVISION] -> $HF_ENDPOINT/OWNER/REPO/resolve/REVISION/FILE (REVISION
 * percent-encoded whole, as the Hub does for refs/pr/1; FILE keeps its slashes). */
char *tm__percent_encode(char *o, const char *s, size_t n, bool keep_slash)
{
    static const char hex[] = "0123456789ABCDEF";
    for (size_t i = 0; i < n; i++) {
        const unsigned char c = (unsigned char)s[i];
        if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
            c == '-' || c == '_' || c == '.' || c == '~' || (keep_slash && c == '/')) {
            *o++ = (char)c;
        } else {
            *o++ = '%';
            *o++ = hex[c >> 4];
            *o++ = hex[c & 15];
        }
    }
    return o;
}

tm_status tm__hf_parse(const char *spec, tm__hf_name *n, tm_error *err)
{
    const char *owner = spec + 3;
    const char *s1 = strchr(owner, '/');
    const char *s2 = s1 ? strchr(s1 + 1, '/') : NULL;
    const char *file = s2 ? s2 + 1 : NULL;
    const char *at = file ? strchr(file, '@') : NULL;
    const char *file_end = at ? at : file ? file + strlen(file) : NULL;
    if (!file || s1 == owner || s2 == s1 + 1 || file_end == file || file_end[-1] == '/' ||
        (at && !at[1]))
        return tm__fail(err, TM_INVALID_ARG, TM_NO_OFFSET,
                        "a Hugging Face path is hf:OWNER/REPO/FILE or "
                        "hf:OWNER/REPO/FILE@REVISION");
    *n = (tm__hf_name){.owner = owner, .owner_len = (size_t)(s1 - owner),
                       .repo = s1 + 1, .repo_len = (size_t)(s2 - s1 - 1),
                       .file = file, .file_len = (size_t)(file_end - file),
                       .rev = at ? at + 1 : "main", .rev_len = at ? strlen(at + 1) : 4};
    return TM_OK;
}

tm_status tm__hf_resolve(const char *spec, char **out, tm_error *err)
{
    tm__hf_name n;
    tm_status st = tm__hf_parse(spec, &n, err);
    if (st != TM_OK)
        return st;
    const char *ep = endpoint();
    size_t ep_len = strlen(ep);
    while (ep_len > 0 && ep[ep_len - 1] == '/')
        ep_len--;
    char *url = malloc(ep_len + 3 * strlen(spec) + 32);
    if (!url)
        return tm__fail(err, TM_NOMEM, TM_NO_OFFSET, "out of memory");
    char *o = url + ep_len;
    memcpy(url, ep, ep_len);
    *o++ = '/';
    o = tm__percent_encode(o, n.owner, (size_t)(n.repo + n.repo_len - n.owner), true);
    memcpy(o, "/resolve/", 9);
    o = tm__percent_encode(o + 9, n.rev, n.rev_len, false);
    *o++ = '/';
    o = tm__percent_encode(o, n.file, n.file_len, true);
    *o = '\0';
    *out = url;
    return TM_OK;
}

tm_status tm__hf_auth(tm__http_auth *auth, char **line, tm_error *err)
{
    const char *token = getenv("HF_TOKEN");
    *auth = (tm__http_auth){0};
    *line = NULL;
    if (!token || !*token)
        return TM_OK;
    size_t cap = strlen(token) + 32;
    if (!(*line = malloc(cap)))
        return tm__fail(err, TM_NOMEM, TM_NO_OFFSET, "out of memory");
    snprintf(*line, cap, "Authorization: Bearer %s", token);
    *auth = (tm__http_auth){.origin = endpoint(), .header = *line};
    return TM_OK;
}
