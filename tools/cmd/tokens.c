/* tensormap tokens: the first entries of the vocabulary (tokenizer.ggml.tokens), with their ids,
 * types and scores, printed so that no token can drive the terminal. */
#include "../cli/cli.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static const char help[] =
    "usage: tensormap tokens [--json] FILE [N]\n"
    "\n"
    "Print the first N (default 10) entries of tokenizer.ggml.tokens: the id, the token type\n"
    "from tokenizer.ggml.token_type when the file has it (normal, unknown, control,\n"
    "user_defined, unused, byte), the score from tokenizer.ggml.scores when present, and the\n"
    "token itself in quotes with control bytes, backslash, quote and invalid UTF-8 escaped.\n"
    "\n"
    "  --json    a JSON object with the count and the tokens (invalid UTF-8 as {\"hex\"})\n";

/* llama.cpp's token types (llama_token_type). */
static const char *type_name(int64_t t)
{
    static const char *const names[] = {"undefined",    "normal", "unknown", "control",
                                        "user_defined", "unused", "byte"};
    return t >= 0 && t < (int64_t)(sizeof names / sizeof names[0]) ? names[t] : "?";
}

static int run(int argc, char **argv)
{
    bool json = false;
    const cli_flag flags[] = {{"json", &json}, {NULL, NULL}};
    int first = 0;
    int rc = cli_flag_args(argc, argv, &cmd_tokens, flags, 1, 2, &first);
    if (rc >= 0)
        return rc;
    uint64_t want = 10;
    if (argc - first == 2 && !cli_parse_u64(argv[first + 1], &want)) {
        cli_errorf("tokens: N is a count, not '%s'", argv[first + 1]);
        return cli_usage(&cmd_tokens);
    }
    const char *arg = argv[first];
    tm_file *f = cli_open(arg, 0);
    if (!f)
        return CLI_FAIL;
    const tm_kv *tokens = tm_kv_find(f, "tokenizer.ggml.tokens");
    const tm_kv *types = tm_kv_find(f, "tokenizer.ggml.token_type");
    const tm_kv *scores = tm_kv_find(f, "tokenizer.ggml.scores");
    tm_str_iter it;
    if (!tokens || tm_kv_strings(tokens, &it) != TM_OK) {
        cli_errorf("%s: no tokenizer.ggml.tokens array of strings", arg);
        tm_close(f);
        return CLI_FAIL;
    }
    /* the side arrays are used only when they line up with the tokens */
    if (types && (types->type != TM_V_ARRAY || types->count != tokens->count))
        types = NULL;
    if (scores && (scores->type != TM_V_ARRAY || scores->count != tokens->count ||
                   (scores->elem_type != TM_V_F32 && scores->elem_type != TM_V_F64)))
        scores = NULL;
    json_t *list = json ? json_array() : NULL;
    if (!json)
        printf("%s: %" PRIu64 " tokens, the first %" PRIu64 "\n\n%8s  %-12s %12s  %s\n", arg,
               tokens->count, want < tokens->count ? want : tokens->count, "id", "type", "score",
               "token");
    tm_str s;
    for (uint64_t id = 0; id < want && tm_str_next(&it, &s); id++) {
        tm_value tv = {0}, sv = {0};
        bool has_type = types && tm_kv_elem(types, id, &tv) == TM_OK;
        bool has_score = scores && tm_kv_elem(scores, id, &sv) == TM_OK;
        int64_t type = !has_type ? -1
                       : tv.type == TM_V_I8 || tv.type == TM_V_I16 || tv.type == TM_V_I32 ||
                               tv.type == TM_V_I64
                           ? tv.as.i
                           : (int64_t)tv.as.u;
        if (json) {
            json_t *o = json_pack("{s:o, s:o}", "id", cli_json_u64(id), "token", cli_json_str(s));
            if (has_type)
                json_object_set_new(o, "type", json_string(type_name(type)));
            if (has_score)
                json_object_set_new(o, "score", sv.type == TM_V_F32 ? cli_json_f32((float)sv.as.f)
                                                                    : cli_json_f64(sv.as.f));
            json_array_append_new(list, o);
            continue;
        }
        printf("%8" PRIu64 "  %-12s ", id, has_type ? type_name(type) : "");
        char score[32] = "";
        if (has_score)
            cli_float_text(sv.as.f, sv.type == TM_V_F32, score, sizeof score);
        printf("%12s  \"", score);
        cli_print_str(stdout, s, UINT64_MAX);
        printf("\"\n");
    }
    rc = json ? cli_json_emit(
                    json_pack("{s:o, s:o}", "count", cli_json_u64(tokens->count), "tokens", list))
              : cli_finish_output(CLI_OK);
    tm_close(f);
    return rc;
}

const cli_command cmd_tokens = {
    .name = "tokens",
    .alias = NULL,
    .summary = "the first N vocabulary entries: id, type, score, the token escaped",
    .help = help,
    .run = run,
};
