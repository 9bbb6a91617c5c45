/* tensormap download: a whole file from a URL or the Hub, through the library's tm_download
 * (resumable, checked, the hub cache's layout for hf: names), with a progress line on a
 * terminal. */
#include "../cli/cli.h"

#include <stdlib.h>
#include <string.h>

static const char help[] =
    "usage: tensormap download [-o PATH] URL|hf:OWNER/REPO/FILE[@REVISION]\n"
    "\n"
    "Fetch the whole file, in pieces of 16 MiB (TM_DOWNLOAD_CHUNK) sent as four range requests\n"
    "at once, and print where it is. An hf: name goes into the Hugging Face cache\n"
    "($HF_HUB_CACHE, else $HF_HOME/hub, else ~/.cache/huggingface/hub) as huggingface_hub lays\n"
    "it out, where `hf:` names then open without the network (and huggingface_hub finds it);\n"
    "a URL goes to its last path component in the current directory. While it runs the bytes\n"
    "go to PATH.incomplete, with what is done recorded in PATH.incomplete.tensormap: the same\n"
    "command after an interruption fetches only what is missing. The file takes its name only\n"
    "once it is whole and checked: its size, and the SHA-256 the Hub gives (a mismatch is\n"
    "refused and the download removed). A file already at PATH is replaced only then.\n"
    "\n"
    "  -o, --output PATH  write PATH (an hf: name then does not go into the cache)\n"
    "\n"
    "Exit status: 0 when the file is in place, 1 when it could not be fetched or checked, 2 for\n"
    "bad usage.\n";

static void on_progress(uint64_t done, uint64_t total, void *ctx)
{
    cli_progress *p = ctx;
    if (!p->what)
        cli_progress_start(p, "downloading", "bytes", total);
    cli_progress_add(p, done - p->done);
}

/* A URL's last path component (before any query), or NULL when it has none. */
static char *url_basename(const char *url)
{
    const char *end = url + strcspn(url, "?#");
    const char *start = end;
    while (start > url && start[-1] != '/')
        start--;
    const char *scheme = strstr(url, "://");
    if (start == end || (scheme && start <= scheme + 3) || (end - start == 2 && start[0] == '.' &&
                                                            start[1] == '.') ||
        (end - start == 1 && start[0] == '.'))
        return NULL;
    return strndup(start, (size_t)(end - start));
}

static int run(int argc, char **argv)
{
    static const struct option opts[] = {{"output", required_argument, NULL, 'o'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    const char *out = NULL;
    optind = 1;
    for (int c; (c = cli_getopt(argc, argv, "o:h", opts, &cmd_download)) != -1;) {
        if (c == 'o')
            out = optarg;
        else if (c == 'h')
            return fputs(help, stdout), CLI_OK;
        else
            return cli_usage(&cmd_download);
    }
    int rc = cli_count_args(&cmd_download, argc - optind, 1, 1);
    if (rc >= 0)
        return rc;
    const char *src = argv[optind];
    char *derived = NULL;
    if (!out && strncmp(src, "hf:", 3) != 0) {
        if (!(derived = url_basename(src))) {
            cli_errorf("download: the URL names no file to write: give -o PATH");
            return CLI_USAGE;
        }
        out = derived;
    }
    cli_progress bar = {0};
    tm_download_opts o = {.struct_size = sizeof o, .progress = on_progress, .ctx = &bar};
    tm_download_result res;
    tm_error err;
    tm_status st = tm_download(src, out, &o, &res, &err);
    cli_progress_end(&bar);
    if (st != TM_OK) {
        cli_report(src, &err);
        rc = CLI_FAIL;
    } else {
        cli_print_text(stdout, res.path);
        putchar('\n');
        rc = CLI_OK;
    }
    free(derived);
    return cli_finish_output(rc);
}

const cli_command cmd_download = {
    .name = "download",
    .alias = NULL,
    .summary = "fetch a whole file from a URL or the Hub (resumable, checked; the hub cache)",
    .help = help,
    .run = run,
};
