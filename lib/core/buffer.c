/* The buffer rule (see buffer.h and visiontrain.h, "Buffers"). */
#include "core/buffer.h"

vt_status vt_buffer_args(const char *call, const void *buf, size_t cap)
{
    if (!buf && cap > 0)
        return vt_fail(VT_ERR_INVALID_ARGUMENT, "%s: the buffer is NULL but its capacity is %zu "
                       "(NULL goes with capacity 0, to ask for the size)", call, cap);
    return VT_OK;
}

vt_status vt_buffer_args_int(const char *call, const void *buf, int cap)
{
    if (cap < 0) return vt_fail(VT_ERR_INVALID_ARGUMENT, "%s: negative capacity %d", call, cap);
    return vt_buffer_args(call, buf, (size_t)cap);
}

vt_status vt_buffer_fits(const char *call, const void *buf, size_t cap, size_t needed,
                         const char *unit)
{
    vt_status st = vt_buffer_args(call, buf, cap);
    if (st || !buf || needed <= cap) return st;
    return vt_fail(VT_ERR_BUFFER_TOO_SMALL, "%s: the result needs %zu %s, the buffer holds %zu",
                   call, needed, unit, cap);
}

vt_status vt_buffer_fits_int(const char *call, const void *buf, int cap, size_t needed,
                             const char *unit)
{
    vt_status st = vt_buffer_args_int(call, buf, cap);
    return st ? st : vt_buffer_fits(call, buf, (size_t)cap, needed, unit);
}

vt_status vt_buffer_fits_text(const char *call, char *buf, size_t cap, size_t needed)
{
    vt_status st = vt_buffer_fits(call, buf, cap, needed, "bytes");
    if (st == VT_ERR_BUFFER_TOO_SMALL && cap > 0) buf[0] = '\0';
    return st;
}
