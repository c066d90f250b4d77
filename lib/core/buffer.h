/* The buffer rule of the public header (visiontrain.h, "Buffers"): every public call that fills
 * a caller's buffer checks it through these, so the statuses and messages are the same
 * everywhere.  `call` is the public function's name, `unit` what one element is ("points",
 * "bytes"), for the message. */
#ifndef VT_CORE_BUFFER_H
#define VT_CORE_BUFFER_H

#include <stddef.h>

#include "core/core.h"

/* Before any work: a capacity without a buffer (buf NULL, cap > 0) is VT_ERR_INVALID_ARGUMENT.
 * The _int form is for calls whose capacity is an int: a negative one is invalid too. */
vt_status vt_buffer_args(const char *call, const void *buf, size_t cap);
vt_status vt_buffer_args_int(const char *call, const void *buf, int cap);

/* Once the result's size `needed` (in units) is known, before anything is written: VT_OK when
 * the caller may go on, which is to fill buf when it is non-NULL (then needed <= cap) and to
 * write nothing when it is NULL (a size query: cap is 0); VT_ERR_INVALID_ARGUMENT as
 * vt_buffer_args; VT_ERR_BUFFER_TOO_SMALL, naming the call, the size needed and the capacity,
 * when the whole result does not fit.  Writes nothing into buf. */
vt_status vt_buffer_fits(const char *call, const void *buf, size_t cap, size_t needed,
                         const char *unit);
vt_status vt_buffer_fits_int(const char *call, const void *buf, int cap, size_t needed,
                             const char *unit);

/* The same for text: needed counts the bytes with the NUL; a buffer too small for it is set to
 * "" (when cap >= 1), so it is never left unterminated. */
vt_status vt_buffer_fits_text(const char *call, char *buf, size_t cap, size_t needed);

#endif
