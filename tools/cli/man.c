/* The man page, generated from the command table: each command's help text is the one source
 * of truth for `tensormap help NAME`, `NAME --help` and tensormap(1). `tensormap --man` prints
 * it; the Makefile writes $(B)/tensormap.1 from that. */
#include "cli.h"

#include <string.h>

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

void cli_man(FILE *out)
{
    fprintf(out, ".TH TENSORMAP 1 \"\" \"tensormap %s\" \"User Commands\"\n", TM_VERSION_STRING);
    fputs(".SH NAME\ntensormap \\- read GGUF and safetensors model files in place\n"
          ".SH SYNOPSIS\n.B tensormap\n[options] COMMAND [command options] FILE ...\n.br\n"
          ".B tensormap\n\\-\\-version | \\-\\-help | help COMMAND\n"
          ".SH DESCRIPTION\ntensormap maps a model file once and reads its header in place: it "
          "explains the file (metadata, tensors, the layout added up byte for byte) and pulls "
          "decoded weights out of it. FILE is a path, \\- for standard input, or "
          "ollama:NAME[:TAG], resolved through the Ollama store ($OLLAMA_MODELS or "
          "~/.ollama/models).\n"
          ".SH OPTIONS\n",
          out);
    static const char anywhere[] = "--no-mmap and --all-shards may also follow the command.\n";
    roff_text(out, anywhere, strlen(anywhere));
    for (const cli_global_option *o = cli_global_options; o->name; o++) {
        fputs(".TP\n.B ", out);
        if (o->short_name) {
            roff_text(out, o->short_name, strlen(o->short_name));
            fputs(", ", out);
        }
        roff_text(out, o->name, strlen(o->name));
        fputc('\n', out);
        roff_text(out, o->help, strlen(o->help));
        fputc('\n', out);
    }
    fputs(".SH COMMANDS\n", out);
    for (const cli_command *const *c = cli_commands; *c; c++) {
        fprintf(out, ".SS %s%s%s\n", (*c)->name, (*c)->alias ? ", " : "",
                (*c)->alias ? (*c)->alias : "");
        roff_text(out, (*c)->summary, strlen((*c)->summary));
        fputs("\n.PP\n.nf\n", out);
        roff_text(out, (*c)->help, strlen((*c)->help));
        fputs(".fi\n", out);
    }
    fputs(".SH EXIT STATUS\n0 success; 1 a bad or inconsistent file, or a failed operation; "
          "2 bad usage.\n.SH ENVIRONMENT\n.TP\n.B OLLAMA_MODELS\nthe Ollama store for "
          "ollama:NAME[:TAG]\n.TP\n.B TM_PROGRESS_AFTER_MS\nhow long a command runs before its "
          "progress line appears on a terminal (default 1000)\n.TP\n.B TM_ISA\nforce a decoding path: scalar, avx2, avx512 or "
          "neon\n",
          out);
}
