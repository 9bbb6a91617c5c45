/* Telling a model from anything else by its first bytes: a GGUF file, a safetensors file, or a
 * safetensors index. The opener hands tm__looks_like_model to the byte source, which stops
 * reading a stream that starts with anything else. */
#include "../common/internal.h"

static bool is_json_space(uint8_t c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

/* A safetensors file: a length, then '{' (the length is checked by the parse, so that a bad one
 * gets its own message rather than "not a model"). */
bool tm__safetensors_looks_like_file(const uint8_t *p, uint64_t size)
{
    return size >= 9 && p[8] == '{' && tm__load_le(p, 8) >= 2;
}

/* A JSON object (the index): '{' after optional whitespace. */
static bool looks_like_index(const uint8_t *p, uint64_t size)
{
    uint64_t i = 0;
    while (i < size && i < 4096 && is_json_space(p[i]))
        i++;
    return i < size && p[i] == '{';
}

bool tm__safetensors_sniff(const uint8_t *p, uint64_t size)
{
    return tm__safetensors_looks_like_file(p, size) || looks_like_index(p, size);
}

bool tm__looks_like_model(const uint8_t *p, uint64_t n)
{
    return (n >= 4 && memcmp(p, "GGUF", 4) == 0) || tm__safetensors_sniff(p, n);
}
