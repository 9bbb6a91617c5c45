/* Status codes and the messages that go with them. */
#include "internal.h"

#include <stdio.h>

tm_status tm__fail(tm_error *err, tm_status code, uint64_t offset, const char *fmt, ...)
{
    if (!err)
        return code;
    err->code = code;
    err->offset = offset;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->message, sizeof err->message, fmt, ap);
    va_end(ap);
    return code;
}

/* Names in messages come from the file: they may hold quotes, control bytes or megabytes of
 * garbage. Printable ASCII passes, everything else becomes \xNN, and a long name is cut with
 * "..." so the message keeps room for the offset that follows it. */
void tm__quote(char *buf, size_t cap, const char *s, uint64_t len)
{
    if (cap < 8) {
        if (cap)
            buf[0] = '\0';
        return;
    }
    size_t n = 0;
    buf[n++] = '\'';
    uint64_t i = 0;
    for (; i < len; i++) {
        unsigned char ch = (unsigned char)s[i];
        bool plain = ch >= 0x20 && ch < 0x7f && ch != '\'' && ch != '\\';
        if (n + (plain ? 1 : 4) + sizeof "...'" > cap)
            break;
        if (plain)
            buf[n++] = (char)ch;
        else
            n += (size_t)snprintf(buf + n, cap - n, "\\x%02x", ch);
    }
    if (i < len) {
        memcpy(buf + n, "...", 3);
        n += 3;
    }
    buf[n++] = '\'';
    buf[n] = '\0';
}

const char *tm_status_str(tm_status status)
{
    switch (status) {
#define TM_STATUS_STR(name, value, text) \
    case TM_##name:                      \
        return text;
        TM_STATUS_LIST(TM_STATUS_STR)
#undef TM_STATUS_STR
    }
    return "unknown status";
}

const char *tm_status_name(tm_status status)
{
    switch (status) {
#define TM_STATUS_NAME(name, value, text) \
    case TM_##name:                       \
        return #name;
        TM_STATUS_LIST(TM_STATUS_NAME)
#undef TM_STATUS_NAME
    }
    return "UNKNOWN";
}
