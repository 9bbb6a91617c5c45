/* ollama:NAME[:TAG] -> the GGUF blob Ollama keeps for it. The store is $OLLAMA_MODELS or
 * ~/.ollama/models; the manifest manifests/registry.ollama.ai/library/NAME/TAG (TAG "latest"
 * by default; NAME with a '/' is NAMESPACE/NAME, with two a HOST/NAMESPACE/NAME) lists layers,
 * and the one with mediaType application/vnd.ollama.image.model is blobs/sha256-<hex>. */
#include "cli.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define MODEL_MEDIA_TYPE "application/vnd.ollama.image.model"

/* A name component: letters, digits, '.', '-', '_' and not "." or ".." (so that a name cannot
 * walk out of the store). */
static bool safe_component(const char *s, size_t n)
{
    if (n == 0 || (n == 1 && s[0] == '.') || (n == 2 && s[0] == '.' && s[1] == '.'))
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '-' || c == '_'))
            return false;
    }
    return true;
}

static bool is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* The manifest path for "name[:tag]" under store, or NULL (message in msg). */
static char *manifest_path(const char *store, const char *spec, char *msg, size_t msg_size)
{
    const char *colon = strrchr(spec, ':');
    size_t name_len = colon ? (size_t)(colon - spec) : strlen(spec);
    const char *tag = colon ? colon + 1 : "latest";
    size_t slashes = 0;
    for (size_t i = 0, start = 0; i <= name_len; i++) {
        if (i < name_len && spec[i] != '/')
            continue;
        if (!safe_component(spec + start, i - start)) {
            snprintf(msg, msg_size, "'%s' is not a model name (NAME[:TAG], letters, digits, . - _)",
                     spec);
            return NULL;
        }
        slashes += i < name_len;
        start = i + 1;
    }
    if (slashes > 2 || !safe_component(tag, strlen(tag))) {
        snprintf(msg, msg_size, "'%s' is not a model name (NAME[:TAG], letters, digits, . - _)",
                 spec);
        return NULL;
    }
    const char *prefix = slashes == 0   ? "registry.ollama.ai/library/"
                         : slashes == 1 ? "registry.ollama.ai/"
                                        : "";
    char *path = NULL;
    if (asprintf(&path, "%s/manifests/%s%.*s/%s", store, prefix, (int)name_len, spec, tag) < 0) {
        snprintf(msg, msg_size, "out of memory");
        return NULL;
    }
    return path;
}

/* The digest of the model layer in the manifest, or NULL (message in msg). */
static const char *model_digest(json_t *manifest, const char *mpath, char *msg, size_t msg_size)
{
    json_t *layers = json_object_get(manifest, "layers");
    size_t i;
    json_t *layer;
    json_array_foreach(layers, i, layer)
    {
        const char *mt = json_string_value(json_object_get(layer, "mediaType"));
        const char *digest = json_string_value(json_object_get(layer, "digest"));
        if (mt && strcmp(mt, MODEL_MEDIA_TYPE) == 0) {
            if (!digest || strncmp(digest, "sha256:", 7) != 0 || strlen(digest) != 7 + 64 ||
                strspn(digest + 7, "0123456789abcdef") != 64) {
                snprintf(msg, msg_size,
                         "manifest %s: the model layer's digest is not sha256:<64 hex>", mpath);
                return NULL;
            }
            return digest + 7;
        }
    }
    snprintf(msg, msg_size, "manifest %s has no layer of media type %s", mpath, MODEL_MEDIA_TYPE);
    return NULL;
}

char *cli_ollama_path(const char *spec, char *msg, size_t msg_size)
{
    char *home_store = NULL;
    const char *store = getenv("OLLAMA_MODELS");
    if (!store || !*store) {
        const char *home = getenv("HOME");
        if (!home || asprintf(&home_store, "%s/.ollama/models", home) < 0) {
            snprintf(msg, msg_size, "no Ollama store: OLLAMA_MODELS and HOME are not set");
            return NULL;
        }
        store = home_store;
    }
    char *result = NULL, *mpath = NULL;
    json_t *manifest = NULL;
    if (!is_dir(store)) {
        snprintf(msg, msg_size, "no Ollama store at %s (set OLLAMA_MODELS)", store);
        goto done;
    }
    mpath = manifest_path(store, spec, msg, msg_size);
    if (!mpath)
        goto done;
    json_error_t jerr;
    manifest = json_load_file(mpath, JSON_REJECT_DUPLICATES, &jerr);
    if (!manifest) {
        struct stat st;
        if (stat(mpath, &st) != 0)
            snprintf(msg, msg_size, "no model '%s' in the Ollama store %s (no %s)", spec, store,
                     mpath);
        else
            snprintf(msg, msg_size, "manifest %s: line %d: %s", mpath, jerr.line, jerr.text);
        goto done;
    }
    const char *hex = model_digest(manifest, mpath, msg, msg_size);
    if (!hex)
        goto done;
    if (asprintf(&result, "%s/blobs/sha256-%s", store, hex) < 0) {
        result = NULL;
        snprintf(msg, msg_size, "out of memory");
        goto done;
    }
    struct stat st;
    if (stat(result, &st) != 0) {
        snprintf(msg, msg_size, "the manifest %s names the blob %s, which is missing", mpath,
                 result);
        free(result);
        result = NULL;
    }
done:
    json_decref(manifest);
    free(mpath);
    free(home_store);
    return result;
}
