/* The decisions of the experimental CUDA graphs of the training step (VT_CUDA_GRAPHS=1,
 * cuda/graph.cu), plain C without CUDA so that tests/test_cuda_host.c checks them on any
 * machine: when a step's region runs as plain launches, when it is captured into a new
 * executable graph, when an existing one is updated and replayed, and which graph a shape uses.
 *
 * A key is what the caller says fixes the region's launches (the trainer: the batch and the
 * image size).  Each key gets a slot holding one executable graph; the first `warmup` steps of a
 * key run plainly (the caching allocator, cuDNN's plans and the bf16 operand buffers reach
 * their sizes there, and nothing may allocate while a stream is captured), the next one is
 * captured, the later ones replay.  A shape change (the trailing batch of an epoch) is another
 * key: warmed up and captured on its own, without dropping the main batch's graph, up to
 * VT_GRAPH_SLOTS keys; beyond that the least recently used slot is evicted (the caller
 * destroys its graph) and its key starts over.  An update that the driver refuses (the region
 * recorded other kernels: cuBLAS chose another algorithm) re-instantiates the slot's graph.  A
 * failed capture turns graphs off for the backend's life: the caller runs the region plainly,
 * then and afterwards. */
#ifndef VT_CUDA_GRAPH_PLAN_H
#define VT_CUDA_GRAPH_PLAN_H

#ifdef __cplusplus
extern "C" {
#endif

#define VT_GRAPH_SLOTS 4
#define VT_GRAPH_WARMUP 2 /* plain steps of a key before its capture (VT_CUDA_GRAPHS_WARMUP) */
#define VT_GRAPH_KEY_INTS 4

typedef struct vt_graph_key {
    int v[VT_GRAPH_KEY_INTS];
} vt_graph_key;

typedef enum vt_graph_action {
    VT_GRAPH_PLAIN = 0,   /* launch as usual: graphs off, given up, or the key warming up */
    VT_GRAPH_CAPTURE = 1, /* record the region into the slot's first executable graph */
    VT_GRAPH_REPLAY = 2   /* record the region, update the slot's graph with it, launch that */
} vt_graph_action;

typedef enum vt_graph_outcome {
    VT_GRAPH_OK = 0,            /* the action happened (the graph was launched) */
    VT_GRAPH_REINSTANTIATED = 1, /* a replay whose update was refused: instantiated anew */
    VT_GRAPH_FAILED = 2          /* the capture or the launch failed: the caller ran it plainly */
} vt_graph_outcome;

typedef struct vt_graph_slot {
    vt_graph_key key;
    int used;                 /* holds a key */
    int ready;                /* holds an executable graph */
    int steps;                /* plain steps of the key so far (up to warmup) */
    unsigned long long stamp; /* last use, for eviction */
} vt_graph_slot;

typedef struct vt_graph_plan {
    int enabled;  /* VT_CUDA_GRAPHS=1 when the backend was made */
    int warmup;   /* >= 1 */
    int disabled; /* a capture failed: plain from then on */
    vt_graph_slot slot[VT_GRAPH_SLOTS];
    unsigned long long clock;
    /* steps by what ran them, and events */
    unsigned long long plain, captured, replayed, reinstantiated, evicted, failed;
} vt_graph_plan;

/* warmup < 1 is taken as 1 (a key's first step always runs plainly). */
void vt_graph_plan_init(vt_graph_plan *p, int enabled, int warmup);

/* Before a step's region with key k: the action, the slot it concerns (-1 for PLAIN when graphs
 * are off or given up), and in *evict a slot whose executable graph the caller must destroy
 * before anything else (-1: none). */
vt_graph_action vt_graph_plan_begin(vt_graph_plan *p, const vt_graph_key *k, int *slot,
                                    int *evict);

/* After the region: what became of the action vt_graph_plan_begin returned for that slot. */
void vt_graph_plan_end(vt_graph_plan *p, int slot, vt_graph_action a, vt_graph_outcome o);

int vt_graph_key_eq(const vt_graph_key *a, const vt_graph_key *b);

#ifdef __cplusplus
}
#endif

#endif
