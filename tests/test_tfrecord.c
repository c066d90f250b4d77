/* lib/core/tfrecord: CRC32C against published vectors, the protobuf and Event encodings
 * against the bytes TensorBoard's own protobuf classes produce, TFRecord framing against
 * TensorBoard's RecordWriter, and our reader on cut and damaged buffers. */
#include <check.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/tfrecord.h"
#include "testutil.h"

#define LIT(s) (const uint8_t *)(s), sizeof(s) - 1

static void assert_bytes(const vt_pbuf *b, const uint8_t *want, size_t n, const char *what)
{
    ck_assert_msg(!b->failed, "%s: buffer failed", what);
    ck_assert_msg(b->n == n, "%s: %zu bytes, want %zu", what, b->n, n);
    for (size_t i = 0; i < n; i++)
        ck_assert_msg(b->p[i] == want[i], "%s: byte %zu is %02x, want %02x", what, i, b->p[i],
                      want[i]);
}

START_TEST(test_crc32c_vectors)
{
    uint8_t buf[32];
    ck_assert_uint_eq(vt_crc32c(0, "123456789", 9), 0xE3069283u);
    ck_assert_uint_eq(vt_crc32c(0, "", 0), 0);
    /* RFC 3720, B.4 */
    memset(buf, 0, sizeof buf);
    ck_assert_uint_eq(vt_crc32c(0, buf, 32), 0x8A9136AAu);
    memset(buf, 0xff, sizeof buf);
    ck_assert_uint_eq(vt_crc32c(0, buf, 32), 0x62A8AB43u);
    for (int i = 0; i < 32; i++) buf[i] = (uint8_t)i;
    ck_assert_uint_eq(vt_crc32c(0, buf, 32), 0x46DD794Eu);
    for (int i = 0; i < 32; i++) buf[i] = (uint8_t)(31 - i);
    ck_assert_uint_eq(vt_crc32c(0, buf, 32), 0x113FDB5Cu);
    /* continued in pieces = at once */
    for (size_t cut = 0; cut <= 32; cut++)
        ck_assert_uint_eq(vt_crc32c(vt_crc32c(0, buf, cut), buf + cut, 32 - cut), 0x113FDB5Cu);
    /* TFRecord's mask, as tensorboard's masked_crc32c(b"123456789") */
    ck_assert_uint_eq(vt_crc32c_mask(vt_crc32c(0, "123456789", 9)), 0xc78ab0e5u);
}
END_TEST

START_TEST(test_protobuf_encoding)
{
    static const struct {
        uint64_t v;
        const char *bytes;
        size_t n;
    } varints[] = {{0, "\x00", 1}, {1, "\x01", 1}, {127, "\x7f", 1}, {128, "\x80\x01", 2},
                   {300, "\xac\x02", 2}, {16384, "\x80\x80\x01", 3},
                   {UINT64_MAX, "\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 10}};
    for (size_t i = 0; i < sizeof varints / sizeof varints[0]; i++) {
        vt_pbuf b = {0};
        vt_pb_varint(&b, varints[i].v);
        assert_bytes(&b, (const uint8_t *)varints[i].bytes, varints[i].n, "varint");
        vt_pb_free(&b);
    }
    vt_pbuf b = {0};
    vt_pb_int(&b, 2, -1); /* int64: two's complement, 10 bytes */
    vt_pb_double(&b, 1, 1.5);
    vt_pb_float(&b, 2, 0.5f);
    vt_pb_string(&b, 1, "ab");
    vt_pb_bytes(&b, 15, "", 0);
    vt_pb_int(&b, 16, 1); /* a two-byte key */
    assert_bytes(&b,
                 LIT("\x10\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01"
                     "\x09\x00\x00\x00\x00\x00\x00\xf8\x3f"
                     "\x15\x00\x00\x00\x3f"
                     "\x0a\x02\x61\x62"
                     "\x7a\x00"
                     "\x80\x01\x01"),
                 "fields");
    vt_pb_free(&b);
    /* growth past the first allocation keeps every byte */
    for (int i = 0; i < 5000; i++) vt_pb_varint(&b, (uint64_t)(i & 0x7f));
    ck_assert(!b.failed);
    ck_assert_uint_eq(b.n, 5000);
    int same = 1;
    for (int i = 0; i < 5000; i++) same &= b.p[i] == (uint8_t)(i & 0x7f);
    ck_assert(same);
    vt_pb_free(&b);
}
END_TEST

/* The expected bytes are event_pb2.Event(...).SerializeToString() of tensorboard 2.21. */
START_TEST(test_event_encoding)
{
    vt_pbuf b = {0};
    vt_tfevent_file_version(&b, 1700000000.25);
    assert_bytes(&b,
                 LIT("\x09\x00\x00\x10\x40\xfc\x54\xd9\x41\x1a\x0d\x62\x72\x61\x69\x6e\x2e\x45"
                     "\x76\x65\x6e\x74\x3a\x32"),
                 "file_version");
    vt_pb_free(&b);

    const char *tags[] = {"train/loss", "skipped", "lr"};
    const double values[] = {0.5, NAN, 0.001};
    vt_tfevent_scalars(&b, 1700000000.25, 42, tags, values, 3);
    assert_bytes(&b,
                 LIT("\x09\x00\x00\x10\x40\xfc\x54\xd9\x41\x10\x2a\x2a\x1e\x0a\x11\x0a\x0a\x74"
                     "\x72\x61\x69\x6e\x2f\x6c\x6f\x73\x73\x15\x00\x00\x00\x3f\x0a\x09\x0a\x02"
                     "\x6c\x72\x15\x6f\x12\x83\x3a"),
                 "scalars");
    vt_pb_free(&b);

    vt_tfevent_image(&b, 2.0, 7, "plots/x", 3, 2, 3, "PNGDATA", 7);
    assert_bytes(&b,
                 LIT("\x09\x00\x00\x00\x00\x00\x00\x00\x40\x10\x07\x2a\x1c\x0a\x1a\x0a\x07\x70"
                     "\x6c\x6f\x74\x73\x2f\x78\x22\x0f\x08\x02\x10\x03\x18\x03\x22\x07\x50\x4e"
                     "\x47\x44\x41\x54\x41"),
                 "image");
    vt_pb_free(&b);

    vt_tfevent_session_start(&b, 3.0, 11);
    assert_bytes(&b, LIT("\x09\x00\x00\x00\x00\x00\x00\x08\x40\x10\x0b\x3a\x02\x08\x01"),
                 "session_log");
    vt_pb_free(&b);
}
END_TEST

/* Five records of 0, 1, 5, 300 and 70000 bytes. */
static const size_t rec_len[] = {0, 1, 5, 300, 70000};
enum { NREC = 5 };

static uint8_t *record_data(int r)
{
    uint8_t *d = malloc(rec_len[r] + 1);
    ck_assert_ptr_nonnull(d);
    for (size_t i = 0; i < rec_len[r]; i++) d[i] = (uint8_t)(r * 31 + i * 7);
    return d;
}

/* The five records framed one after the other; bound[r]: where record r starts (bound[NREC]:
 * the end). */
static vt_pbuf five_records(size_t bound[NREC + 1])
{
    vt_pbuf b = {0};
    bound[0] = 0;
    for (int r = 0; r < NREC; r++) {
        uint8_t *d = record_data(r);
        vt_tfrecord_frame(&b, d, rec_len[r]);
        free(d);
        bound[r + 1] = b.n;
    }
    ck_assert(!b.failed);
    return b;
}

/* Read buf[0..len): the number of whole records before the result `*end`. */
static int read_all(const uint8_t *buf, size_t len, vt_tfrecord_result *end)
{
    size_t off = 0, n;
    const uint8_t *d;
    int k = 0;
    vt_tfrecord_result r;
    while ((r = vt_tfrecord_next(buf, len, &off, &d, &n)) == VT_TFR_RECORD) {
        /* plain tests inside the loops: every ck_assert is a write to Check's pipe */
        int same = k < NREC && n == rec_len[k];
        for (size_t i = 0; same && i < n; i++) same = d[i] == (uint8_t)(k * 31 + i * 7);
        if (!same) ck_abort_msg("record %d: %zu bytes, not the ones written", k, n);
        k++;
    }
    *end = r;
    return k;
}

START_TEST(test_record_framing)
{
    vt_pbuf b = {0};
    vt_tfrecord_frame(&b, "hello", 5);
    /* tensorboard.summary.writer.record_writer.RecordWriter's bytes for b"hello" */
    assert_bytes(&b,
                 LIT("\x05\x00\x00\x00\x00\x00\x00\x00\xea\xb2\x04\x3e\x68\x65\x6c\x6c\x6f\xbb"
                     "\x1f\x1c\x19"),
                 "record");
    vt_pb_free(&b);

    size_t bound[NREC + 1];
    b = five_records(bound);
    vt_tfrecord_result end;
    ck_assert_int_eq(read_all(b.p, b.n, &end), NREC);
    ck_assert_int_eq(end, VT_TFR_END);
    vt_pb_free(&b);
}
END_TEST

/* A file cut anywhere reads the records wholly before the cut, then stops: at the end when
 * the cut is a record boundary, else on a truncated record. */
START_TEST(test_record_truncation)
{
    size_t bound[NREC + 1];
    vt_pbuf b = five_records(bound);
    for (int r = 0; r < NREC; r++) ck_assert_uint_eq(bound[r + 1] - bound[r], 16 + rec_len[r]);
    for (size_t cut = 0; cut <= b.n; cut++) {
        int whole = 0;
        while (whole < NREC && bound[whole + 1] <= cut) whole++;
        vt_tfrecord_result end;
        int k = read_all(b.p, cut, &end);
        if (k != whole || end != (cut == bound[whole] ? VT_TFR_END : VT_TFR_TRUNCATED))
            ck_abort_msg("cut at %zu: %d records then result %d, want %d", cut, k, end, whole);
    }
    vt_pb_free(&b);
}
END_TEST

/* Any damaged byte (length, either CRC, data) is a CRC mismatch at its record. */
START_TEST(test_record_corruption)
{
    size_t bound[NREC + 1];
    vt_pbuf b = five_records(bound);
    /* every byte of the small records, a sample of the large one */
    for (size_t at = 0; at < b.n; at += at < bound[4] + 64 ? 1 : 997) {
        int rec = 0;
        while (bound[rec + 1] <= at) rec++;
        for (int bit = 0; bit < 8; bit += 7) {
            b.p[at] ^= (uint8_t)(1u << bit);
            vt_tfrecord_result end;
            int k = read_all(b.p, b.n, &end);
            if (k != rec || end != VT_TFR_CORRUPT)
                ck_abort_msg("byte %zu bit %d: %d records then %d, want %d then corrupt", at,
                             bit, k, end, rec);
            b.p[at] ^= (uint8_t)(1u << bit);
        }
    }
    vt_pb_free(&b);
}
END_TEST

START_TEST(test_record_file)
{
    const char *path = vt_test_path("events.out.tfevents.test");
    vt_tfrecord_file f;
    ck_assert_int_eq(vt_tfrecord_create(&f, path), VT_OK);
    for (int r = 0; r < NREC; r++) {
        uint8_t *d = record_data(r);
        ck_assert_int_eq(vt_tfrecord_write(&f, d, rec_len[r]), VT_OK);
        free(d);
        if (r == 2) ck_assert_int_eq(vt_tfrecord_sync(&f), VT_OK);
    }
    vt_tfrecord_close(&f);
    vt_tfrecord_close(&f); /* twice is harmless */
    ck_assert_int_eq(vt_tfrecord_write(&f, "x", 1), VT_ERR_BAD_STATE);
    size_t n;
    uint8_t *buf = vt_test_read_file(path, &n);
    ck_assert_ptr_nonnull(buf);
    vt_tfrecord_result end;
    ck_assert_int_eq(read_all(buf, n, &end), NREC);
    ck_assert_int_eq(end, VT_TFR_END);
    free(buf);
    /* never appended to by a second writer */
    ck_assert_int_eq(vt_tfrecord_create(&f, path), VT_ERR_IO);
    ck_assert_int_eq(errno, EEXIST);
    ck_assert_ptr_nonnull(strstr(vt_last_error(), path));
    ck_assert_int_eq(vt_tfrecord_create(&f, vt_test_path("no/such/folder/x")), VT_ERR_IO);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("tfrecord");
    TCase *tc = tcase_create("tfrecord");
    tcase_add_checked_fixture(tc, vt_test_scratch_setup, vt_test_scratch_teardown);
    tcase_add_test(tc, test_crc32c_vectors);
    tcase_add_test(tc, test_protobuf_encoding);
    tcase_add_test(tc, test_event_encoding);
    tcase_add_test(tc, test_record_framing);
    tcase_add_test(tc, test_record_truncation);
    tcase_add_test(tc, test_record_corruption);
    tcase_add_test(tc, test_record_file);
    suite_add_tcase(s, tc);
    return vt_test_run(s);
}
