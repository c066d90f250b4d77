/* The decisions of the CUDA graphs of the training step: see graph_plan.h. */
#include "graph_plan.h"

#include <string.h>

void vt_graph_plan_init(vt_graph_plan *p, int enabled, int warmup)
{
    memset(p, 0, sizeof *p);
    p->enabled = enabled != 0;
    p->warmup = warmup < 1 ? 1 : warmup;
}

int vt_graph_key_eq(const vt_graph_key *a, const vt_graph_key *b)
{
    return memcmp(a->v, b->v, sizeof a->v) == 0;
}

/* The slot of key k, else a free one, else the least recently used (*evict set when it holds a
 * graph). */
static int slot_for(vt_graph_plan *p, const vt_graph_key *k, int *evict)
{
    int free_slot = -1, oldest = 0;
    for (int i = 0; i < VT_GRAPH_SLOTS; i++) {
        const vt_graph_slot *s = &p->slot[i];
        if (s->used && vt_graph_key_eq(&s->key, k)) return i;
        if (!s->used && free_slot < 0) free_slot = i;
        if (s->used && s->stamp < p->slot[oldest].stamp) oldest = i;
    }
    int i = free_slot;
    if (i < 0) {
        i = oldest;
        if (p->slot[i].ready) *evict = i;
        p->evicted++;
    }
    memset(&p->slot[i], 0, sizeof p->slot[i]);
    p->slot[i].used = 1;
    p->slot[i].key = *k;
    return i;
}

vt_graph_action vt_graph_plan_begin(vt_graph_plan *p, const vt_graph_key *k, int *slot,
                                    int *evict)
{
    *slot = -1;
    *evict = -1;
    if (!p->enabled || p->disabled) return VT_GRAPH_PLAIN;
    int i = slot_for(p, k, evict);
    vt_graph_slot *s = &p->slot[i];
    s->stamp = ++p->clock;
    *slot = i;
    if (s->ready) return VT_GRAPH_REPLAY;
    if (s->steps < p->warmup) return VT_GRAPH_PLAIN;
    return VT_GRAPH_CAPTURE;
}

void vt_graph_plan_end(vt_graph_plan *p, int slot, vt_graph_action a, vt_graph_outcome o)
{
    vt_graph_slot *s = slot >= 0 && slot < VT_GRAPH_SLOTS ? &p->slot[slot] : NULL;
    if (a == VT_GRAPH_PLAIN || !s) {
        p->plain++;
        if (s && s->steps < p->warmup) s->steps++;
        return;
    }
    if (o == VT_GRAPH_FAILED) {
        p->failed++;
        p->plain++; /* the caller ran the region plainly */
        p->disabled = 1;
        s->ready = 0;
        return;
    }
    s->ready = 1;
    if (a == VT_GRAPH_CAPTURE) p->captured++;
    else p->replayed++;
    if (o == VT_GRAPH_REINSTANTIATED) p->reinstantiated++;
}
