/* The man page, generated from the command table: each command's help text is the one source
 * of truth for `tensormap help NAME`, `NAME --help` and tensormap(1). `tensormap --man` prints
 * it; the Makefile writes $(B)/tensormap.1 from that. The usage lines at the top of each help
 * text also give the synopsis here and what each command takes in `tensormap --help`. */
#include "cli.h"

#include <string.h>

size_t cli_usage_line(const cli_command *cmd, size_t k, char *buf, size_t cap)
{
    static const char first[] = "usage: tensormap ", more[] = "       tensormap ";
    size_t n = 0, found = 0;
    buf[0] = '\0';
    /* the usage block is everything before the first empty line */
    for (const char *line = cmd->help; *line && *line != '\n';) {
        const size_t len = strcspn(line, "\n");
        const bool starts = strncmp(line, first, sizeof first - 1) == 0 ||
                            strncmp(line, more, sizeof more - 1) == 0;
        const char *text = starts ? line + sizeof first - 1 : line + strspn(line, " ");
        const size_t text_len = len - (size_t)(text - line);
        if (starts && found++ == k + 1)
            break; /* the next usage line: this one is whole */
        if (found == k + 1 && n + text_len + 2 < cap) {
            if (n)
                buf[n++] = ' '; /* a continuation line */
            memcpy(buf + n, text, text_len);
            buf[n += text_len] = '\0';
        }
        line += len + (line[len] == '\n');
    }
    return n;
}

void cli_usage_args(const char *usage, char *buf, size_t cap)
{
    const char *p = usage + strcspn(usage, " "); /* after the command's name */
    size_t n = 0;
    buf[0] = '\0';
    while (*p) {
        p += strspn(p, " ");
        size_t len = strcspn(p, " ");
        if (p[0] == '[' && p[1] == '-') { /* an option group, up to its matching ']' */
            int depth = 0;
            len = 0;
            do
                depth += (p[len] == '[') - (p[len] == ']');
            while (p[++len] && depth > 0);
            if (strncmp(p + len, "...", 3) == 0) /* "[--set KEY=VALUE]...": repeatable */
                len += 3;
        } else if (len && n + len + 2 < cap) {
            if (n)
                buf[n++] = ' ';
            memcpy(buf + n, p, len);
            buf[n += len] = '\0';
        }
        p += len;
    }
}

const char *cli_inputs_help(void)
{
    static const char what[] =
        "FILE (and A, B, FIRST_SHARD) is a path, - for standard input, ollama:NAME[:TAG] (a model\n"
        "Ollama has pulled: $OLLAMA_MODELS or ~/.ollama/models), or a URL.\n",
        remote[] =
        "A URL is http://..., https://..., s3://BUCKET/KEY (AWS's variables and ~/.aws files;\n"
        "$AWS_ENDPOINT_URL for MinIO, Ceph, R2), or hf:OWNER/REPO/FILE[@REVISION] for a file on\n"
        "the Hugging Face Hub ($HF_ENDPOINT, default https://huggingface.co; $HF_TOKEN for a\n"
        "private repository), read from the hub cache when it is there ($HF_HUB_OFFLINE=1: only\n"
        "from there): only the header is downloaded, and a tensor's bytes when a command decodes\n"
        "it. split, merge and edit take local files only.\n",
        no_remote[] =
        "A URL (http://..., https://..., s3://..., hf:OWNER/REPO/FILE) is refused: this tensormap\n"
        "was built without libcurl.\n",
        shards[] =
        "A safetensors checkpoint in shards opens through its model.safetensors.index.json, or\n"
        "through any one shard with --all-shards. A split GGUF set (NAME-00001-of-00003.gguf ...)\n"
        "opens as one model through its first shard, or any shard with --all-shards; --one-shard\n"
        "opens a shard alone.\n";
    static char text[sizeof what + sizeof remote + sizeof shards];
    if (!text[0])
        snprintf(text, sizeof text, "%s%s%s", what, tm_remote_supported() ? remote : no_remote,
                 shards);
    return text;
}

/* Text into roff: a backslash is \e, and a line starting with '.' or '\'' is not a request. */
static void roff_text(FILE *out, const char *s, size_t n)
{
    bool line_start = true;
    for (size_t i = 0; i < n; i++) {
        if (line_start && (s[i] == '.' || s[i] == '\''))
            fputs("\\&", out);
        if (s[i] == '\\')
            fputs("\\e", out);
        else if (s[i] == '-')
            fputs("\\-", out);
        else
            fputc(s[i], out);
        line_start = s[i] == '\n';
    }
}

static void roff_str(FILE *out, const char *s)
{
    roff_text(out, s, strlen(s));
}

/* One .TP entry: the name in bold, then what it is. */
static void roff_item(FILE *out, const char *name, const char *what)
{
    fputs(".TP\n.B ", out);
    roff_str(out, name);
    fputc('\n', out);
    roff_str(out, what);
    fputc('\n', out);
}

void cli_man(FILE *out)
{
    fprintf(out, ".TH TENSORMAP 1 \"\" \"tensormap %s\" \"User Commands\"\n", TM_VERSION_STRING);
    fputs(".SH NAME\ntensormap \\- read GGUF and safetensors model files in place\n"
          ".SH SYNOPSIS\n",
          out);
    for (const cli_command *const *c = cli_commands; *c; c++) {
        char line[512];
        for (size_t k = 0; cli_usage_line(*c, k, line, sizeof line); k++) {
            fputs(".B tensormap\n[options] ", out);
            roff_str(out, line);
            fputs("\n.br\n", out);
        }
    }
    fputs(".B tensormap\n\\-\\-version | \\-\\-help | help COMMAND\n"
          ".SH DESCRIPTION\ntensormap maps a model file once and reads its header in place: it "
          "explains the file (metadata, tensors, the layout added up byte for byte) and pulls "
          "decoded weights out of it.\n.PP\n",
          out);
    roff_str(out, cli_inputs_help());
    fputs(".SH OPTIONS\n", out);
    roff_str(out, "--no-mmap, --all-shards and --one-shard may also follow the command.\n");
    for (const cli_global_option *o = cli_global_options; o->name; o++) {
        char names[64];
        snprintf(names, sizeof names, "%s%s%s", o->short_name ? o->short_name : "",
                 o->short_name ? ", " : "", o->name);
        roff_item(out, names, o->help);
    }
    fputs(".SH COMMANDS\n", out);
    for (const cli_command *const *c = cli_commands; *c; c++) {
        fprintf(out, ".SS %s%s%s\n", (*c)->name, (*c)->alias ? ", " : "",
                (*c)->alias ? (*c)->alias : "");
        roff_str(out, (*c)->summary);
        fputs("\n.PP\n.nf\n", out);
        roff_str(out, (*c)->help);
        fputs(".fi\n", out);
    }
    fputs(".SH EXIT STATUS\n0 success; 1 a bad or inconsistent file, or a failed operation; "
          "2 bad usage.\n.SH ENVIRONMENT\n",
          out);
    static const char *const env[][2] = {
        {"OLLAMA_MODELS", "the Ollama store for ollama:NAME[:TAG]"},
        {"HF_ENDPOINT", "where hf:OWNER/REPO/FILE is fetched from (default https://huggingface.co)"},
        {"HF_TOKEN", "sent as \"Authorization: Bearer\" to HF_ENDPOINT's scheme, host and port "
                     "(never over plain http for an https endpoint), for a private repository"},
        {"HF_HUB_CACHE", "the Hugging Face hub cache hf: names are read from and download writes "
                         "(default $HF_HOME/hub, $XDG_CACHE_HOME/huggingface/hub, "
                         "~/.cache/huggingface/hub)"},
        {"HF_HUB_OFFLINE", "1 (or true, yes, on): hf: names only from the hub cache, never the "
                           "network"},
        {"AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN",
         "the key pair (and token) s3:// requests are signed with (AWS Signature V4); without "
         "them AWS_PROFILE's in ~/.aws/credentials, else unsigned"},
        {"AWS_PROFILE, AWS_SHARED_CREDENTIALS_FILE, AWS_CONFIG_FILE",
         "the profile and the files it is read from (default: default, ~/.aws/credentials, "
         "~/.aws/config)"},
        {"AWS_REGION, AWS_DEFAULT_REGION", "the region s3:// requests are signed for (else the "
                                           "profile's, else us-east-1)"},
        {"AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL", "an S3-compatible store (MinIO, Ceph, R2) "
                                                  "addressed path-style: ENDPOINT/BUCKET/KEY"},
        {"CURL_CA_BUNDLE", "a CA certificate file to verify https:// servers with, instead of the "
                           "system's"},
        {"TM_HTTP_CHUNK", "the first range fetched of a remote file, and each further step of "
                          "its header walk (default 2M: bytes, or with a K, M or G suffix)"},
        {"TM_HTTP_HEAD_LIMIT", "the most header bytes read from a remote model, all its files "
                               "together (default 256M)"},
        {"TM_HTTP_TIMEOUT", "seconds each step of a remote read may take, retries included "
                            "(default 120; 0: no deadline)"},
        {"TM_DOWNLOAD_CHUNK", "the piece download fetches (four ranges at once) and records "
                              "for resuming (default 16M)"},
        {"TM_PREFETCH_LIMIT", "the most bytes of a remote file fetched ahead of decoding "
                              "(default 256M)"},
        {"TM_PREFETCH_METHOD", "how a local file is read ahead: kernel (the default: the "
                               "kernel's own readahead), madvise, fadvise or thread; none turns "
                               "remote plans off too"},
        {"TM_READ_WHOLE_LIMIT", "with --no-mmap, files up to this size are read whole, larger "
                                "ones as needed (default 64M)"},
        {"TM_STREAM_LIMIT", "the most bytes read from a stream such as standard input (default "
                            "64G)"},
        {"TM_PROGRESS_AFTER_MS", "how long a command runs before its progress line appears on a "
                                 "terminal (default 1000)"},
        {"TM_ISA", "force a decoding path: scalar, avx2, avx512, avx512fp16 or neon"},
    };
    for (size_t i = 0; i < sizeof env / sizeof env[0]; i++)
        roff_item(out, env[i][0], env[i][1]);
}
