/* The CPU-side parts of the CUDA backend's experimental bf16 and graphs, on any machine (no
 * GPU needed): the fp32 -> bf16 rounding that the operand conversion kernel runs
 * (lib/backend/bf16_math.h, compiled here as plain C, by nvcc as __host__ __device__, and used
 * by the CPU's bf16 products as vt_bf16_round), and the decisions of the training step's CUDA
 * graphs (cuda/graph_plan.c, linked here directly): warm-up, capture, replay, a shape change,
 * eviction, a failure; and the device layer's refusal of precision=bf16 on a GPU without
 * VT_CUDA_BF16=1 (asked of a CPU backend, which the CUDA settings leave alone).  The GPU sides are test_cuda_ops.c's test_gemm_bf16 / test_conv_bf16
 * and test_cuda_train.c's test_bf16_steps / test_graph_steps (skipped without a GPU). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/bf16_math.h"
#include "backend/device.h"
#include "backend/gemm.h"
#include "graph_plan.h"
#include "testutil.h"

static float fbits(uint32_t u) { return vt_f32_from_bits(u); }

/* An independent reference: the bf16 nearest to x in double arithmetic, ties to the even
 * mantissa, past the largest finite to infinity (finite, non-NaN x only). */
static uint16_t ref_round(float x)
{
    uint32_t u = vt_f32_bits(x);
    uint16_t lo = (uint16_t)(u >> 16); /* truncated toward zero */
    uint16_t hi = (uint16_t)(lo + 1);  /* next away from zero (same sign) */
    double dx = fabs((double)x), dlo = fabs((double)vt_bf16_widen(lo));
    double dhi = (lo & 0x7fff) == 0x7f7f ? ldexp(1.0, 128) : fabs((double)vt_bf16_widen(hi));
    if (dx - dlo < dhi - dx) return lo;
    if (dx - dlo > dhi - dx) return hi;
    return (lo & 1) ? hi : lo;
}

START_TEST(test_bf16_cases)
{
    static const struct {
        uint32_t in;
        uint16_t out;
        const char *what;
    } cases[] = {
        {0x3f800000u, 0x3f80, "1.0 exact"},
        {0x3f808000u, 0x3f80, "tie, even below: stays"},
        {0x3f818000u, 0x3f82, "tie, odd below: up to even"},
        {0x3f808001u, 0x3f81, "just above the tie: up"},
        {0x3f807fffu, 0x3f80, "just below the tie: down"},
        {0xbf818000u, 0xbf82, "negative tie to even (magnitude up)"},
        {0x00000000u, 0x0000, "+0"},
        {0x80000000u, 0x8000, "-0"},
        {0x00000001u, 0x0000, "smallest subnormal: to 0"},
        {0x00008000u, 0x0000, "subnormal tie, even: 0"},
        {0x00018000u, 0x0002, "subnormal tie, odd: up"},
        {0x00010001u, 0x0001, "subnormal, kept (not flushed)"},
        {0x007fffffu, 0x0080, "largest subnormal: to the smallest normal"},
        {0x807f8000u, 0x8080, "negative subnormal tie to the smallest normal"},
        {0x7f7f0000u, 0x7f7f, "largest finite bf16"},
        {0x7f7f7fffu, 0x7f7f, "below halfway past it: stays finite"},
        {0x7f7f8000u, 0x7f80, "halfway past the largest (odd): infinity"},
        {0x7f7fffffu, 0x7f80, "largest float: infinity"},
        {0x7f800000u, 0x7f80, "+inf"},
        {0xff800000u, 0xff80, "-inf"},
        {0x7f800001u, 0x7fc0, "signalling NaN, low payload: quiet, not inf"},
        {0xff800001u, 0xffc0, "negative NaN keeps its sign"},
        {0x7fc00000u, 0x7fc0, "quiet NaN"},
        {0x7fffffffu, 0x7fff, "NaN with every payload bit: no carry into the sign"},
        {0x7f810000u, 0x7fc1, "NaN: upper payload kept, made quiet"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        uint16_t got = vt_bf16_rne(fbits(cases[i].in));
        ck_assert_msg(got == cases[i].out, "%s: 0x%08x -> 0x%04x, expected 0x%04x",
                      cases[i].what, cases[i].in, got, cases[i].out);
        /* the CPU backend's bf16 rounding is the same function */
        ck_assert_uint_eq(vt_bf16_round(fbits(cases[i].in)), got);
    }
    for (uint32_t h = 0; h < 0x10000u; h++) { /* every bf16 widens exactly and rounds back */
        float x = vt_bf16_widen((uint16_t)h);
        ck_assert_uint_eq(vt_f32_bits(x), h << 16);
        if (!isnan(x)) ck_assert_uint_eq(vt_bf16_rne(x), h);
        else ck_assert(isnan(vt_bf16_widen(vt_bf16_rne(x))));
    }
}
END_TEST

/* Every float whose low 16 bits are near a rounding boundary, and a pseudo-random sweep of the
 * rest, against the double-arithmetic reference. */
START_TEST(test_bf16_against_reference)
{
    static const uint16_t lows[] = {0x0000, 0x0001, 0x7ffe, 0x7fff, 0x8000, 0x8001, 0xfffe, 0xffff};
    unsigned long checked = 0;
    for (uint32_t hi = 0; hi < 0x10000u; hi++)
        for (size_t j = 0; j < sizeof lows / sizeof lows[0]; j++) {
            uint32_t u = hi << 16 | lows[j];
            float x = fbits(u);
            if (isnan(x)) continue;
            uint16_t got = vt_bf16_rne(x), want = ref_round(x);
            ck_assert_msg(got == want, "0x%08x -> 0x%04x, reference 0x%04x", u, got, want);
            checked++;
        }
    uint64_t r = 0x9E3779B97F4A7C15ull;
    for (int i = 0; i < 2000000; i++) {
        r ^= r << 13;
        r ^= r >> 7;
        r ^= r << 17;
        uint32_t u = (uint32_t)(r >> 17);
        float x = fbits(u);
        if (isnan(x)) {
            uint16_t h = vt_bf16_rne(x);
            ck_assert_msg(isnan(vt_bf16_widen(h)) && (h & 0x0040) && (h >> 15) == (u >> 31),
                          "NaN 0x%08x -> 0x%04x", u, h);
            continue;
        }
        ck_assert_uint_eq(vt_bf16_rne(x), ref_round(x));
        checked++;
    }
    ck_assert_uint_gt(checked, 2000000);
}
END_TEST

/* ---- precision=bf16 on a GPU: refused unless VT_CUDA_BF16=1 ----------------------------------- */

START_TEST(test_bf16_needs_env)
{
    vt_device d;
    ck_assert_int_eq(vt_device_parse("cuda:0", &d), VT_OK);
    ck_assert_ptr_nonnull(d.iface->set_precision);
    vt_backend *b;
    ck_assert_int_eq(vt_backend_cpu_create(&b, 1), VT_OK);
    static const char *const refused[] = {NULL, "", "0", "yes", "11"};
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        if (refused[i]) setenv("VT_CUDA_BF16", refused[i], 1);
        else unsetenv("VT_CUDA_BF16");
        ck_assert_int_eq(vt_cuda_bf16_wanted(), 0);
        ck_assert_int_eq(d.iface->set_precision(b, VT_DEVICE_PRECISION_BF16), VT_ERR_UNSUPPORTED);
        ck_assert_msg(strstr(vt_last_error(), "VT_CUDA_BF16=1") &&
                          strstr(vt_last_error(), "experimental"),
                      "message: %s", vt_last_error());
        /* the other precisions are never refused */
        ck_assert_int_eq(d.iface->set_precision(b, VT_DEVICE_PRECISION_FP32), VT_OK);
        ck_assert_int_eq(d.iface->set_precision(b, VT_DEVICE_PRECISION_DEFAULT), VT_OK);
    }
    setenv("VT_CUDA_BF16", "1", 1);
    ck_assert_int_eq(vt_cuda_bf16_wanted(), 1);
    ck_assert_int_eq(d.iface->set_precision(b, VT_DEVICE_PRECISION_BF16), VT_OK);
    vt_backend_destroy(b);
}
END_TEST

/* ---- the graphs' decisions ------------------------------------------------------------------ */

static vt_graph_key key(int n, int h)
{
    vt_graph_key k = {{n, h, h, 0}};
    return k;
}

/* One step through the plan: the action begin chose, the outcome reported as o. */
static vt_graph_action step(vt_graph_plan *p, vt_graph_key k, vt_graph_outcome o, int *slot,
                            int *evict)
{
    vt_graph_action a = vt_graph_plan_begin(p, &k, slot, evict);
    vt_graph_plan_end(p, *slot, a, a == VT_GRAPH_PLAIN ? VT_GRAPH_OK : o);
    return a;
}

START_TEST(test_graph_off)
{
    vt_graph_plan p;
    vt_graph_plan_init(&p, 0, 2);
    int slot, evict;
    for (int i = 0; i < 10; i++) {
        ck_assert_int_eq(step(&p, key(8, 32), VT_GRAPH_OK, &slot, &evict), VT_GRAPH_PLAIN);
        ck_assert_int_eq(slot, -1);
        ck_assert_int_eq(evict, -1);
    }
    ck_assert_uint_eq(p.plain, 10);
    ck_assert_uint_eq(p.captured + p.replayed, 0);
}
END_TEST

START_TEST(test_graph_warmup_capture_replay)
{
    vt_graph_plan p;
    vt_graph_plan_init(&p, 1, 3);
    int slot, evict;
    for (int i = 0; i < 3; i++)
        ck_assert_int_eq(step(&p, key(8, 32), VT_GRAPH_OK, &slot, &evict), VT_GRAPH_PLAIN);
    ck_assert_int_eq(step(&p, key(8, 32), VT_GRAPH_OK, &slot, &evict), VT_GRAPH_CAPTURE);
    int s0 = slot;
    for (int i = 0; i < 5; i++) {
        ck_assert_int_eq(step(&p, key(8, 32), VT_GRAPH_OK, &slot, &evict), VT_GRAPH_REPLAY);
        ck_assert_int_eq(slot, s0);
        ck_assert_int_eq(evict, -1);
    }
    ck_assert_uint_eq(p.plain, 3);
    ck_assert_uint_eq(p.captured, 1);
    ck_assert_uint_eq(p.replayed, 5);
    /* a warm-up below 1 is 1: a key's first step is always plain */
    vt_graph_plan_init(&p, 1, 0);
    ck_assert_int_eq(p.warmup, 1);
    ck_assert_int_eq(step(&p, key(8, 32), VT_GRAPH_OK, &slot, &evict), VT_GRAPH_PLAIN);
    ck_assert_int_eq(step(&p, key(8, 32), VT_GRAPH_OK, &slot, &evict), VT_GRAPH_CAPTURE);
}
END_TEST

/* The trailing batch of an epoch is another key: warmed up and captured on its own, and the
 * main batch's graph is kept (replayed at once when it comes back). */
START_TEST(test_graph_shape_change)
{
    vt_graph_plan p;
    vt_graph_plan_init(&p, 1, 1);
    int slot, evict, main_slot, tail_slot;
    ck_assert_int_eq(step(&p, key(16, 64), VT_GRAPH_OK, &slot, &evict), VT_GRAPH_PLAIN);
    ck_assert_int_eq(step(&p, key(16, 64), VT_GRAPH_OK, &main_slot, &evict), VT_GRAPH_CAPTURE);
    ck_assert_int_eq(step(&p, key(5, 64), VT_GRAPH_OK, &slot, &evict), VT_GRAPH_PLAIN);
    ck_assert_int_ne(slot, main_slot);
    ck_assert_int_eq(step(&p, key(16, 64), VT_GRAPH_OK, &slot, &evict), VT_GRAPH_REPLAY);
    ck_assert_int_eq(slot, main_slot);
    ck_assert_int_eq(step(&p, key(5, 64), VT_GRAPH_OK, &tail_slot, &evict), VT_GRAPH_CAPTURE);
    ck_assert_int_eq(step(&p, key(5, 64), VT_GRAPH_OK, &slot, &evict), VT_GRAPH_REPLAY);
    ck_assert_int_eq(slot, tail_slot);
    /* any field of the key is a different shape */
    vt_graph_key k = key(16, 64);
    k.v[3] = 2; /* another frozen prefix */
    ck_assert_int_eq(step(&p, k, VT_GRAPH_OK, &slot, &evict), VT_GRAPH_PLAIN);
    ck_assert_int_ne(slot, main_slot);
    ck_assert_int_eq(evict, -1);
    /* an update the driver refused: re-instantiated, still replaying */
    ck_assert_int_eq(step(&p, key(16, 64), VT_GRAPH_REINSTANTIATED, &slot, &evict),
                     VT_GRAPH_REPLAY);
    ck_assert_uint_eq(p.reinstantiated, 1);
    ck_assert_int_eq(step(&p, key(16, 64), VT_GRAPH_OK, &slot, &evict), VT_GRAPH_REPLAY);
}
END_TEST

/* More keys than slots: the least recently used one goes (its graph destroyed by the caller),
 * and comes back warming up again. */
START_TEST(test_graph_eviction)
{
    vt_graph_plan p;
    vt_graph_plan_init(&p, 1, 1);
    int slot, evict, slots[VT_GRAPH_SLOTS];
    for (int k = 0; k < VT_GRAPH_SLOTS; k++) {
        ck_assert_int_eq(step(&p, key(k + 1, 32), VT_GRAPH_OK, &slot, &evict), VT_GRAPH_PLAIN);
        ck_assert_int_eq(step(&p, key(k + 1, 32), VT_GRAPH_OK, &slots[k], &evict),
                         VT_GRAPH_CAPTURE);
        ck_assert_int_eq(evict, -1);
    }
    /* key 1 used again: key 2 is now the least recently used */
    ck_assert_int_eq(step(&p, key(1, 32), VT_GRAPH_OK, &slot, &evict), VT_GRAPH_REPLAY);
    ck_assert_int_eq(step(&p, key(99, 32), VT_GRAPH_OK, &slot, &evict), VT_GRAPH_PLAIN);
    ck_assert_int_eq(evict, slots[1]);
    ck_assert_int_eq(slot, slots[1]);
    ck_assert_uint_eq(p.evicted, 1);
    ck_assert_int_eq(step(&p, key(1, 32), VT_GRAPH_OK, &slot, &evict), VT_GRAPH_REPLAY);
    ck_assert_int_eq(evict, -1);
    /* key 2 comes back: it evicts the least recently used (key 3) and warms up again */
    ck_assert_int_eq(step(&p, key(2, 32), VT_GRAPH_OK, &slot, &evict), VT_GRAPH_PLAIN);
    ck_assert_int_eq(evict, slots[2]);
    ck_assert_int_eq(step(&p, key(2, 32), VT_GRAPH_OK, &slot, &evict), VT_GRAPH_CAPTURE);
}
END_TEST

/* A failed capture or launch: plain for the plan's life, whatever the key. */
START_TEST(test_graph_failure_is_final)
{
    vt_graph_plan p;
    vt_graph_plan_init(&p, 1, 1);
    int slot, evict;
    ck_assert_int_eq(step(&p, key(8, 32), VT_GRAPH_OK, &slot, &evict), VT_GRAPH_PLAIN);
    ck_assert_int_eq(step(&p, key(8, 32), VT_GRAPH_FAILED, &slot, &evict), VT_GRAPH_CAPTURE);
    ck_assert(p.disabled);
    ck_assert_uint_eq(p.failed, 1);
    ck_assert_uint_eq(p.plain, 2); /* the failed step ran plainly */
    for (int i = 0; i < 4; i++) {
        ck_assert_int_eq(step(&p, key(8, 32), VT_GRAPH_OK, &slot, &evict), VT_GRAPH_PLAIN);
        ck_assert_int_eq(slot, -1);
        ck_assert_int_eq(step(&p, key(4, 16), VT_GRAPH_OK, &slot, &evict), VT_GRAPH_PLAIN);
    }
    ck_assert_uint_eq(p.captured + p.replayed, 0);
    /* a replay that fails does the same */
    vt_graph_plan_init(&p, 1, 1);
    step(&p, key(8, 32), VT_GRAPH_OK, &slot, &evict);
    step(&p, key(8, 32), VT_GRAPH_OK, &slot, &evict);
    ck_assert_int_eq(step(&p, key(8, 32), VT_GRAPH_FAILED, &slot, &evict), VT_GRAPH_REPLAY);
    ck_assert(p.disabled);
    ck_assert_int_eq(step(&p, key(8, 32), VT_GRAPH_OK, &slot, &evict), VT_GRAPH_PLAIN);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("cuda_host");
    TCase *tr = tcase_create("bf16");
    tcase_set_timeout(tr, 60);
    tcase_add_test(tr, test_bf16_cases);
    tcase_add_test(tr, test_bf16_against_reference);
    tcase_add_test(tr, test_bf16_needs_env);
    suite_add_tcase(s, tr);
    TCase *tg = tcase_create("graphs");
    tcase_add_test(tg, test_graph_off);
    tcase_add_test(tg, test_graph_warmup_capture_replay);
    tcase_add_test(tg, test_graph_shape_change);
    tcase_add_test(tg, test_graph_eviction);
    tcase_add_test(tg, test_graph_failure_is_final);
    suite_add_tcase(s, tg);
    return s;
}

int main(void) { return vt_test_run(suite()); }
