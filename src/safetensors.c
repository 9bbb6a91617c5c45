/* The safetensors walk, into the same index as GGUF. (Placeholder: refuses everything until the
 * real walk lands.) */
#include "internal.h"

bool tm__safetensors_sniff(const uint8_t *p, uint64_t size)
{
    (void)p;
    (void)size;
    return false;
}

tm_status tm__safetensors_parse(tm_file *f, unsigned flags, tm_error *err)
{
    (void)flags;
    return tm__fail(err, TM_UNSUPPORTED, 0, "%s: safetensors is not supported yet",
                    f->maps[0].path ? f->maps[0].path : "buffer");
}
