/* What every command does the same way: open the file the user named, report a library error,
 * print a string that came out of a file without letting it drive the terminal. */
#include "cli_util.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

static void escape(FILE *out, const char *text, uint64_t n, bool quoting);

/* The message is escaped as a whole: a path, a name or a library message quoting a file's
 * bytes cannot reach the terminal raw, whoever built it. */
void cli_errorf(const char *fmt, ...)
{
    char msg[8192];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fputs("tensormap: ", stderr);
    escape(stderr, msg, n < 0 ? 0 : (size_t)n < sizeof msg ? (uint64_t)n : sizeof msg - 1, false);
    fputc('\n', stderr);
}

void cli_report(const char *context, const tm_error *err)
{
    /* The library's messages usually name the offset already ("... at byte 402 ..."); say it
     * again only when they do not. */
    char at[48] = "";
    if (err->offset != TM_NO_OFFSET) {
        char num[24];
        snprintf(num, sizeof num, "%" PRIu64, err->offset);
        if (!strstr(err->message, num))
            snprintf(at, sizeof at, " (at byte %s)", num);
    }
    cli_errorf("%s: %s%s", context, err->message[0] ? err->message : tm_status_str(err->code),
               at);
}

tm_file *cli_open(const char *arg, unsigned extra_flags)
{
    tm_error err = {0};
    tm_file *f = cli_open_err(arg, extra_flags, &err);
    if (!f && err.code != TM_OK)
        cli_report(arg, &err);
    return f;
}

tm_file *cli_open_err(const char *arg, unsigned extra_flags, tm_error *err)
{
    unsigned flags = cli_open_flags | extra_flags;
    if (strcmp(arg, "-") == 0)
        flags |= TM_OPEN_NO_MMAP; /* a pipe cannot be mapped */
    const char *path = arg;
    char *resolved = NULL;
    /* ---- ollama:NAME[:TAG] is resolved here, to the blob the manifest names (cli_ollama.c) */
    if (strncmp(arg, "ollama:", 7) == 0) {
        char msg[TM_ERROR_MESSAGE_MAX];
        resolved = cli_ollama_path(arg + 7, msg, sizeof msg);
        if (!resolved) {
            cli_errorf("%s: %s", arg, msg);
            return NULL;
        }
        path = resolved;
    }
    tm_file *f = NULL;
    cli_in_place_recover(path); /* an in-place edit that died is undone before it is read */
    cli_sigbus_watch(arg); /* before tm_open: the header walk reads the mapping too */
    if (tm_open(path, flags, &f, err) != TM_OK) {
        f = NULL;
    } else {
        cli_sigbus_mapped(f);
        cli_output_protect_file(f, arg);
    }
    free(resolved);
    return f;
}

/* Length of the well-formed UTF-8 sequence at p (at most n bytes), or 0 when there is none. */
static uint64_t utf8_seq(const char *p, uint64_t n)
{
    const unsigned char c = (unsigned char)p[0];
    uint64_t len = c < 0x80 ? 1 : c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3
                 : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
    return len && len <= n && cli_utf8_valid(p, len) ? len : 0;
}

void cli_float_text(double v, bool is_f32, char *buf, size_t size)
{
    for (int prec = 1; prec <= 17; prec++) { /* NaN never reads back equal: stays "nan" */
        snprintf(buf, size, "%.*g", prec, v);
        double back = strtod(buf, NULL);
        if (is_f32 ? (float)back == (float)v : back == v)
            break;
    }
}

void cli_scalar_text(const tm_value *v, char *buf, size_t size)
{
    buf[0] = '\0';
    switch (v->type) {
    case TM_V_U8:
    case TM_V_U16:
    case TM_V_U32:
    case TM_V_U64:
        snprintf(buf, size, "%" PRIu64, v->as.u);
        break;
    case TM_V_I8:
    case TM_V_I16:
    case TM_V_I32:
    case TM_V_I64:
        snprintf(buf, size, "%" PRId64, v->as.i);
        break;
    case TM_V_F32:
    case TM_V_F64:
        cli_float_text(v->as.f, v->type == TM_V_F32, buf, size);
        break;
    case TM_V_BOOL:
        snprintf(buf, size, "%s", v->as.b ? "true" : "false");
        break;
    case TM_V_STRING:
    case TM_V_ARRAY:
    default:
        break;
    }
}

/* Characters a terminal acts on although they print nothing: C1 controls (U+009B alone is a
 * CSI on many terminals) and the invisible direction marks and overrides that can make a name
 * read as another (U+061C, U+200E/F, U+2028..U+202E, U+2066..U+2069). */
static bool acts_on_terminal(uint32_t cp)
{
    return (cp >= 0x80 && cp <= 0x9f) || cp == 0x61c || cp == 0x200e || cp == 0x200f ||
           (cp >= 0x2028 && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069);
}

/* The code point of a well-formed sequence of seq bytes. */
static uint32_t code_point(const unsigned char *p, uint64_t seq)
{
    static const unsigned char lead_bits[5] = {0, 0x7f, 0x1f, 0x0f, 0x07};
    uint32_t cp = p[0] & lead_bits[seq];
    for (uint64_t k = 1; k < seq; k++)
        cp = cp << 6 | (p[k] & 0x3fu);
    return cp;
}

/* The one escaping helper: every string that came from a file reaches the terminal through
 * here (cli_print_str, cli_name, and every message through cli_errorf). Control bytes, DEL,
 * invalid UTF-8 become \xHH; C1 controls and bidirectional controls \uHHHH. quoting also
 * escapes backslash and double quote, so that the escaped text reads back unambiguously;
 * messages keep them, and keep newlines and tabs. */
static void escape(FILE *out, const char *text, uint64_t n, bool quoting)
{
    const unsigned char *p = (const unsigned char *)text;
    for (uint64_t i = 0; i < n;) {
        const unsigned char c = p[i];
        const uint64_t seq = utf8_seq(text + i, n - i);
        if (quoting && (c == '\\' || c == '"')) {
            fputc('\\', out);
            fputc(c, out);
        } else if (c == '\n' || c == '\t') {
            fputs(quoting ? (c == '\n' ? "\\n" : "\\t") : (c == '\n' ? "\n" : "\t"), out);
        } else if (c == '\r' && quoting) {
            fputs("\\r", out);
        } else if (c < 0x20 || c == 0x7f || seq == 0) {
            fprintf(out, "\\x%02x", c);
        } else if (acts_on_terminal(code_point(p + i, seq))) {
            fprintf(out, "\\u%04x", (unsigned)code_point(p + i, seq));
            i += seq;
            continue;
        } else {
            fwrite(text + i, 1, (size_t)seq, out);
            i += seq;
            continue;
        }
        i++;
    }
}

void cli_print_text(FILE *out, const char *text) { escape(out, text, strlen(text), false); }

void cli_print_str(FILE *out, tm_str s, uint64_t max_bytes)
{
    /* A sequence cut by max_bytes counts as invalid and is escaped, so exactly n bytes of the
     * string are shown and "and N more bytes" stays true. */
    escape(out, s.ptr, s.len < max_bytes ? s.len : max_bytes, true);
}

int cli_simple_args(int argc, char **argv, const cli_command *cmd, const cli_flag *flags,
                    const char **file)
{
    int first;
    int rc = cli_flag_args(argc, argv, cmd, flags, 1, 1, &first);
    if (rc < 0)
        *file = argv[first];
    return rc;
}

int cli_finish_output(int rc)
{
    if (fflush(stdout) != 0 || ferror(stdout)) {
        cli_errorf("could not write the output");
        return CLI_FAIL;
    }
    return rc;
}
