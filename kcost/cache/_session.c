/* The session simulator, compiled: `kcost.cache.simulator.Simulator.run` written again, rule for rule, on arrays
 * and hash maps of 64-bit integers where the Python one keeps lists, tuples and dicts. It keeps the same state (the
 * interned spans, the current path, the checkpoints and their runs by the span they fall in, the lazy times) and
 * makes the same `Outcome` of every request, so a bill is the same either way; the Python simulator is the oracle
 * the tests hold this one to, and the fallback where this one is not built.
 *
 * Every token count and position is a 64-bit integer (kcost.bounds keeps a session far below that; a number past
 * it is an OverflowError, not a wrong answer); times are doubles, compared as Python compares its floats.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* the reasons in the order `kcost.cache.simulator.Reason` defines them (`setup` is given that tuple) */
enum {
    NEW_INPUT, COLD, PREFIX_CHANGED, OUTPUT_NOT_CACHED, EXPIRED, NO_CHECKPOINT, BLOCK_GRANULARITY, LAST_TOKEN,
    BELOW_MINIMUM, CACHING_OFF, REASONS
};

static PyObject *OUTCOME, *MISS_PART, *REASON[REASONS]; /* the Python classes and reasons an outcome is made of */
static PyObject *S_TIME, *S_KEEP, *S_APPEND, *S_TURN_START, *S_OUTPUT, *S_RESENT, *S_OUTPUT_TOKENS, *S_SEG,
    *S_START, *S_LENGTH;

#define ROOT (-1)
static const double NEVER = -INFINITY;

/* ---- growable arrays ------------------------------------------------------------------------------------------ */

typedef struct { int64_t *a; Py_ssize_t n, cap; } I64s;
typedef struct { int64_t seg, start, length; } SpanC;
typedef struct { int64_t first, last; } Run;
typedef struct { int64_t first, last; double t; } Stored;
typedef struct { SpanC *a; Py_ssize_t n, cap; } Spans;
typedef struct { Run *a; Py_ssize_t n, cap; } Runs;
typedef struct { Stored *a; Py_ssize_t n, cap; } StoredRuns;
typedef struct { int64_t length, next; double time; } Node; /* next: its next sibling, -1 after the last */
typedef struct { Node *a; Py_ssize_t n, cap; } Nodes;

static int grow(void **a, Py_ssize_t *cap, Py_ssize_t need, size_t size) {
    if (need <= *cap) return 0;
    Py_ssize_t cap2 = *cap ? *cap : 8;
    while (cap2 < need) cap2 *= 2;
    void *b = realloc(*a, (size_t)cap2 * size);
    if (!b) { PyErr_NoMemory(); return -1; }
    *a = b;
    *cap = cap2;
    return 0;
}
#define RESERVE(v, need) grow((void **)&(v)->a, &(v)->cap, (need), sizeof(*(v)->a))
#define PUSH(v, x) (RESERVE((v), (v)->n + 1) < 0 ? -1 : ((v)->a[(v)->n++] = (x), 0))

static int insert_at(I64s *v, Py_ssize_t i, int64_t x) {
    if (RESERVE(v, v->n + 1) < 0) return -1;
    memmove(&v->a[i + 1], &v->a[i], sizeof(int64_t) * (size_t)(v->n - i));
    v->a[i] = x;
    v->n++;
    return 0;
}

/* Python's bisect on a sorted int64 array */
static Py_ssize_t bisect_right(const int64_t *a, Py_ssize_t n, int64_t x) {
    Py_ssize_t lo = 0, hi = n;
    while (lo < hi) {
        Py_ssize_t mid = (lo + hi) / 2;
        if (x < a[mid]) hi = mid; else lo = mid + 1;
    }
    return lo;
}
static Py_ssize_t bisect_left(const int64_t *a, Py_ssize_t n, int64_t x) {
    Py_ssize_t lo = 0, hi = n;
    while (lo < hi) {
        Py_ssize_t mid = (lo + hi) / 2;
        if (a[mid] < x) lo = mid + 1; else hi = mid;
    }
    return lo;
}

/* ---- a hash map of four int64 keys (open addressing, linear probing, deletion by backward shift) ------------- */

typedef struct {
    int64_t k[4];
    union { int64_t i; double d; void *p; } v;
} Slot;
typedef struct { Slot *slots; size_t mask, n; } Map;
#define EMPTY INT64_MIN /* k[0] of an empty slot: every key's first part is a node or ROOT */

static uint64_t mix(const int64_t k[4]) {
    uint64_t z = 0x9E3779B97F4A7C15ull;
    for (int i = 0; i < 4; i++) {
        z ^= (uint64_t)k[i] + 0x9E3779B97F4A7C15ull + (z << 6) + (z >> 2);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    }
    return z ^ (z >> 31);
}

static int map_init(Map *m) {
    m->mask = 63;
    m->n = 0;
    m->slots = malloc(sizeof(Slot) * (m->mask + 1));
    if (!m->slots) { PyErr_NoMemory(); return -1; }
    for (size_t i = 0; i <= m->mask; i++) m->slots[i].k[0] = EMPTY;
    return 0;
}

static Slot *map_get(const Map *m, const int64_t k[4]) {
    size_t i = mix(k) & m->mask;
    for (;;) {
        Slot *s = &m->slots[i];
        if (s->k[0] == EMPTY) return NULL;
        if (s->k[0] == k[0] && s->k[1] == k[1] && s->k[2] == k[2] && s->k[3] == k[3]) return s;
        i = (i + 1) & m->mask;
    }
}

static int map_grow(Map *m) {
    size_t old = m->mask + 1;
    Slot *slots = m->slots;
    m->mask = old * 2 - 1;
    m->slots = malloc(sizeof(Slot) * (m->mask + 1));
    if (!m->slots) { m->slots = slots; m->mask = old - 1; PyErr_NoMemory(); return -1; }
    for (size_t i = 0; i <= m->mask; i++) m->slots[i].k[0] = EMPTY;
    for (size_t j = 0; j < old; j++) {
        if (slots[j].k[0] == EMPTY) continue;
        size_t i = mix(slots[j].k) & m->mask;
        while (m->slots[i].k[0] != EMPTY) i = (i + 1) & m->mask;
        m->slots[i] = slots[j];
    }
    free(slots);
    return 0;
}

/* the slot of `k`, made (its value zeroed, `*made` set) where there is none; NULL on no memory */
static Slot *map_put(Map *m, const int64_t k[4], int *made) {
    Slot *s = map_get(m, k);
    *made = s == NULL;
    if (s) return s;
    if ((m->n + 1) * 4 > (m->mask + 1) * 3 && map_grow(m) < 0) return NULL;
    size_t i = mix(k) & m->mask;
    while (m->slots[i].k[0] != EMPTY) i = (i + 1) & m->mask;
    s = &m->slots[i];
    memcpy(s->k, k, sizeof(s->k));
    s->v.i = 0;
    m->n++;
    return s;
}

static void map_del(Map *m, Slot *s) {
    size_t i = (size_t)(s - m->slots), j = i;
    m->slots[i].k[0] = EMPTY;
    m->n--;
    for (;;) {
        j = (j + 1) & m->mask;
        if (m->slots[j].k[0] == EMPTY) return;
        size_t home = mix(m->slots[j].k) & m->mask;
        /* the entry at j may move to the hole at i unless its home lies cyclically in (i, j] */
        if ((i <= j) ? (i < home && home <= j) : (i < home || home <= j)) continue;
        m->slots[i] = m->slots[j];
        m->slots[j].k[0] = EMPTY;
        i = j;
    }
}

/* the array the value of `k` points to, made (zeroed, `size` bytes) where there is none: `setdefault` */
static void *map_setdefault(Map *m, const int64_t k[4], size_t size) {
    int made;
    Slot *slot = map_put(m, k, &made);
    if (!slot) return NULL;
    if (made && !(slot->v.p = calloc(1, size))) {
        map_del(m, slot);
        PyErr_NoMemory();
        return NULL;
    }
    return slot->v.p;
}

/* every entry dropped (and, with `owned`, the arrays their values point to freed) */
static void map_clear(Map *m, int owned, int runs) {
    if (m->n == 0) return;
    for (size_t i = 0; i <= m->mask; i++) {
        Slot *s = &m->slots[i];
        if (s->k[0] == EMPTY) continue;
        if (owned) {
            if (runs) free(((StoredRuns *)s->v.p)->a);
            else free(((I64s *)s->v.p)->a);
            free(s->v.p);
        }
        s->k[0] = EMPTY;
    }
    m->n = 0;
}

/* ---- the simulator -------------------------------------------------------------------------------------------- */

typedef struct {
    PyObject_HEAD
    /* the model */
    int64_t block, step, hit_step, min_tokens; /* step: `every` blocks in tokens, 0 for none; hit_step: model.step */
    int anywhere, none, output, has_ttl;
    double ttl;
    /* interned spans: (parent, seg, start, 0) -> the first of its siblings; where it has more than one,
     * (parent, seg, start, length) -> each of them */
    Map nodes, siblings;
    Nodes node; /* by id */
    /* checkpoints: (parent, seg, start, offset) -> time; their offsets by span, (parent, seg, start, 0) -> I64s* */
    Map ckpt, ckpt_in;
    I64s on_path; /* the live checkpoints' positions on the current path, sorted */
    Runs runs;     /* the runs kept every `step` on the path, sorted, disjoint */
    Map runs_in;   /* stored runs by span, (parent, seg, start, 0) -> StoredRuns* */
    /* the current prompt */
    I64s path, starts;
    Spans spans;
    int64_t len, prompt_len;
    int has_time;
    double time;
    Py_ssize_t fresh;
} Sim;

static int live(double t, double now, int has_ttl, double ttl) {
    return t != NEVER && (!has_ttl || now - t <= ttl);
}

static int64_t parent_of(const Sim *s, Py_ssize_t j) { return j > 0 ? s->path.a[j - 1] : ROOT; }

static int64_t new_node(Sim *s, int64_t length) {
    int64_t node = s->node.n;
    if (PUSH(&s->node, ((Node){length, -1, NEVER})) < 0) return -1;
    return node;
}

/* `_node`: the node of `span` after the path's end: the one interned, else a new one. As `_siblings` holds them: a
 * span's first node by (parent, seg, start), and where it has siblings (other lengths), every one of them by
 * (parent, seg, start, length) too (most spans have none, and hold no entry of the second kind) */
static int64_t node_of(Sim *s, SpanC span) {
    int64_t parent = s->path.n ? s->path.a[s->path.n - 1] : ROOT;
    int64_t key[4] = {parent, span.seg, span.start, 0};
    int made;
    Slot *first = map_put(&s->siblings, key, &made);
    if (!first) return -1;
    if (made) { /* the span's first node */
        int64_t node = new_node(s, span.length);
        if (node < 0) return -1;
        first->v.i = node; /* `first` stays valid: new_node touches no map */
        return node;
    }
    int64_t head = first->v.i;
    if (s->node.a[head].next < 0 && s->node.a[head].length == span.length) return head; /* the one, alone */
    key[3] = span.length;
    if (s->node.a[head].next >= 0) { /* siblings already: each by its length */
        Slot *found = map_get(&s->nodes, key);
        if (found) return found->v.i;
    } else { /* the first sibling: the one alone is indexed by its length from now on */
        int64_t its[4] = {parent, span.seg, span.start, s->node.a[head].length};
        Slot *slot = map_put(&s->nodes, its, &made);
        if (!slot) return -1;
        slot->v.i = head;
    }
    int64_t node = new_node(s, span.length);
    if (node < 0) return -1;
    Slot *slot = map_put(&s->nodes, key, &made);
    if (!slot) return -1;
    slot->v.i = node;
    /* after the first: the chain's order does not matter (its lengths are compared by max) */
    s->node.a[node].next = s->node.a[head].next;
    s->node.a[head].next = node;
    return node;
}

static int push(Sim *s, SpanC span) {
    if (span.length <= 0) return 0;
    Spans *spans = &s->spans;
    if (spans->n) {
        SpanC *last = &spans->a[spans->n - 1];
        if (last->seg == span.seg && last->start + last->length == span.start) {
            SpanC was = *last;
            spans->n--;
            int64_t joined = s->path.a[--s->path.n];
            if (s->path.n < s->fresh) { /* it leaves the path, used by the last request like all it kept */
                s->node.a[joined].time = s->has_time ? s->time : NEVER;
                s->fresh = s->path.n;
            }
            s->len = s->starts.a[--s->starts.n];
            span.start = was.start;
            span.length = was.length + span.length;
        }
    }
    int64_t node = node_of(s, span);
    if (node < 0) return -1;
    if (PUSH(&s->path, node) < 0 || PUSH(spans, span) < 0 || PUSH(&s->starts, s->len) < 0) return -1;
    s->len += span.length;
    return 0;
}

/* `_ckpt_key`: the identity of the prefix [0, pos) of the current path, pos > 0 */
static void ckpt_key(const Sim *s, int64_t pos, int64_t key[4]) {
    Py_ssize_t j = bisect_left(s->starts.a, s->starts.n, pos) - 1;
    SpanC span = s->spans.a[j];
    key[0] = parent_of(s, j);
    key[1] = span.seg;
    key[2] = span.start;
    key[3] = pos - s->starts.a[j];
}

static int add_run(Sim *s, int64_t first, int64_t last) {
    Runs *runs = &s->runs;
    int64_t step = s->step;
    Py_ssize_t i = 0, hi = runs->n; /* bisect_left(runs, (first, first)) */
    while (i < hi) {
        Py_ssize_t mid = (i + hi) / 2;
        Run r = runs->a[mid];
        if (r.first < first || (r.first == first && r.last < first)) i = mid + 1; else hi = mid;
    }
    if (i && runs->a[i - 1].last + step >= first) { /* touches the run before it */
        i--;
        first = runs->a[i].first;
    }
    Py_ssize_t j = i;
    while (j < runs->n && runs->a[j].first <= last + step) {
        if (runs->a[j].last > last) last = runs->a[j].last;
        j++;
    }
    Run joined = {first, last};
    if (j > i) { /* runs[i:j] = [joined] */
        runs->a[i] = joined;
        memmove(&runs->a[i + 1], &runs->a[j], sizeof(Run) * (size_t)(runs->n - j));
        runs->n -= j - i - 1;
        return 0;
    }
    if (RESERVE(runs, runs->n + 1) < 0) return -1;
    memmove(&runs->a[i + 1], &runs->a[i], sizeof(Run) * (size_t)(runs->n - i));
    runs->a[i] = joined;
    runs->n++;
    return 0;
}

/* `_store_run`: the run `first .. last` of the current path stored, split at its spans */
static int store_run(Sim *s, int64_t first, int64_t last, double t) {
    int64_t step = s->step;
    Py_ssize_t j = bisect_left(s->starts.a, s->starts.n, first) - 1;
    for (; j < s->spans.n && s->starts.a[j] < last; j++) {
        int64_t origin = s->starts.a[j], end = origin + s->spans.a[j].length;
        int64_t lo = (origin / step + 1) * step, hi = end / step * step;
        if (first > lo) lo = first;
        if (last < hi) hi = last;
        if (lo > hi) continue;
        int64_t key[4] = {parent_of(s, j), s->spans.a[j].seg, s->spans.a[j].start, 0};
        StoredRuns *stored = map_setdefault(&s->runs_in, key, sizeof(StoredRuns));
        Stored run = {lo - origin, hi - origin, t};
        if (!stored || PUSH(stored, run) < 0) return -1;
    }
    return 0;
}

/* `_leave_runs`: the path's runs past `keep` leave it for the store, with the time `t` of the last request */
static int leave_runs(Sim *s, int64_t keep, double t) {
    Runs *runs = &s->runs;
    int64_t step = s->step;
    while (runs->n && runs->a[runs->n - 1].last > keep) {
        Run r = runs->a[--runs->n];
        int64_t after = (keep / step + 1) * step;
        if (store_run(s, r.first > after ? r.first : after, r.last, t) < 0) return -1;
        if (r.first < after) {
            runs->a[runs->n++] = (Run){r.first, after - step}; /* where it was popped from: room is there */
            break;
        }
    }
    return 0;
}

static int truncate_to(Sim *s, int64_t keep) {
    if (keep >= s->len) return 0;
    double t = s->has_time ? s->time : NEVER;
    Py_ssize_t leaving = bisect_right(s->on_path.a, s->on_path.n, keep);
    for (Py_ssize_t i = leaving; i < s->on_path.n; i++) {
        int64_t key[4];
        int made;
        ckpt_key(s, s->on_path.a[i], key);
        Slot *slot = map_put(&s->ckpt, key, &made);
        if (!slot) return -1;
        slot->v.d = t;
    }
    s->on_path.n = leaving;
    if (leave_runs(s, keep, t) < 0) return -1;
    Py_ssize_t j = bisect_right(s->starts.a, s->starts.n, keep) - 1; /* the span holding token `keep` */
    int remnant = 0;
    SpanC cut_span = {0, 0, 0};
    if (j >= 0 && s->starts.a[j] == keep) j--;
    else { remnant = 1; cut_span = s->spans.a[j]; }
    Py_ssize_t cut = remnant ? j : j + 1;
    for (Py_ssize_t i = cut; i < s->path.n; i++) s->node.a[s->path.a[i]].time = t;
    s->path.n = s->spans.n = s->starts.n = cut;
    s->len = s->spans.n ? s->starts.a[s->spans.n - 1] + s->spans.a[s->spans.n - 1].length : 0;
    if (remnant) return push(s, (SpanC){cut_span.seg, cut_span.start, keep - s->len});
    return 0;
}

/* `_adopt_runs`: the stored runs of the span `key` (tokens `origin .. end` of the path) past `start`: alive ones
 * join the path and leave the store; expired ones go */
static int adopt_runs(Sim *s, const int64_t key[4], int64_t origin, int64_t end, int64_t start, double now) {
    Slot *slot = map_get(&s->runs_in, key);
    if (!slot) return 0;
    StoredRuns *stored = slot->v.p;
    int64_t step = s->step;
    int64_t lo = (start / step + 1) * step, hi = end / step * step;
    StoredRuns kept = {NULL, 0, 0};
    for (Py_ssize_t k = 0; k < stored->n; k++) {
        Stored r = stored->a[k];
        int64_t a = origin + r.first > lo ? origin + r.first : lo, b = origin + r.last < hi ? origin + r.last : hi;
        if (a > b) {
            if (PUSH(&kept, r) < 0) goto fail;
        } else if (live(r.t, now, s->has_ttl, s->ttl)) {
            if (add_run(s, a, b) < 0) goto fail;
            if (origin + r.first < a && PUSH(&kept, ((Stored){r.first, a - step - origin, r.t})) < 0) goto fail;
            if (origin + r.last > b && PUSH(&kept, ((Stored){b + step - origin, r.last, r.t})) < 0) goto fail;
        }
    }
    free(stored->a);
    if (kept.n) {
        *stored = kept;
    } else {
        free(kept.a);
        free(stored);
        map_del(&s->runs_in, slot);
    }
    return 0;
fail:
    free(kept.a);
    return -1;
}

/* `_adopt_checkpoints`: checkpoints stored for the path's blocks after `start`: alive ones join it, expired go */
static int adopt_checkpoints(Sim *s, int64_t start, double now) {
    if (!s->block || !(s->ckpt.n || s->runs_in.n)) return 0;
    Py_ssize_t first = bisect_right(s->starts.a, s->starts.n, start) - 1;
    if (first < 0) first = 0;
    for (Py_ssize_t j = first; j < s->path.n; j++) {
        SpanC span = s->spans.a[j];
        int64_t key[4] = {parent_of(s, j), span.seg, span.start, 0};
        int64_t origin = s->starts.a[j];
        if (s->runs_in.n && adopt_runs(s, key, origin, origin + span.length, start, now) < 0) return -1;
        Slot *slot = map_get(&s->ckpt_in, key);
        if (!slot) continue;
        I64s *offsets = slot->v.p;
        if (!offsets->n) continue;
        Py_ssize_t lo = bisect_right(offsets->a, offsets->n, start - origin);
        Py_ssize_t hi = bisect_right(offsets->a, offsets->n, span.length);
        Py_ssize_t w = lo; /* the offsets kept, written over the ones gone */
        for (Py_ssize_t i = lo; i < hi; i++) {
            int64_t offset = offsets->a[i];
            int64_t ck[4] = {key[0], key[1], key[2], offset};
            Slot *c = map_get(&s->ckpt, ck);
            if (!c) { PyErr_SetString(PyExc_SystemError, "a stored checkpoint without its time"); return -1; }
            if (live(c->v.d, now, s->has_ttl, s->ttl)) {
                if (PUSH(&s->on_path, origin + offset) < 0) return -1;
                offsets->a[w++] = offset;
            } else {
                map_del(&s->ckpt, c);
            }
        }
        if (w < hi) {
            memmove(&offsets->a[w], &offsets->a[hi], sizeof(int64_t) * (size_t)(offsets->n - hi));
            offsets->n -= hi - w;
        }
    }
    return 0;
}

static int retain(Sim *s, int64_t pos, double now) {
    int64_t key[4];
    int made;
    ckpt_key(s, pos, key);
    Slot *slot = map_put(&s->ckpt, key, &made);
    if (!slot) return -1;
    slot->v.d = now;
    if (made) { /* insort(ckpt_in.setdefault(key[:3], []), key[3]) */
        int64_t offset = key[3];
        key[3] = 0;
        I64s *offsets = map_setdefault(&s->ckpt_in, key, sizeof(I64s));
        if (!offsets || insert_at(offsets, bisect_right(offsets->a, offsets->n, offset), offset) < 0) return -1;
    }
    I64s *on = &s->on_path;
    Py_ssize_t i = bisect_left(on->a, on->n, pos);
    return i == on->n || on->a[i] != pos ? insert_at(on, i, pos) : 0;
}

/* `_shared`: tokens at the front of the current prompt that are cached and alive, to the token */
static int64_t shared(const Sim *s, int64_t keep, int prev_live, double now, int has_ttl, double ttl) {
    int64_t pos = prev_live ? keep : 0;
    Py_ssize_t j = bisect_right(s->starts.a, s->starts.n, pos) - 1;
    if (j >= 0 && s->starts.a[j] + s->spans.a[j].length <= pos) j++; /* the span at `pos` lies wholly kept */
    for (; j < s->path.n; j++) {
        int64_t start = s->starts.a[j];
        const Node *n = &s->node.a[s->path.a[j]];
        if (live(n->time, now, has_ttl, ttl)) {
            if (start + n->length > pos) pos = start + n->length;
            continue;
        }
        SpanC span = s->spans.a[j];
        int64_t key[4] = {parent_of(s, j), span.seg, span.start, 0}, covered = 0;
        Slot *first = map_get(&s->siblings, key);
        for (int64_t other = first ? first->v.i : -1; other >= 0; other = s->node.a[other].next)
            if (live(s->node.a[other].time, now, has_ttl, ttl) && s->node.a[other].length > covered)
                covered = s->node.a[other].length;
        int64_t reach = start + (covered < span.length ? covered : span.length);
        return reach > pos ? reach : pos;
    }
    return s->len > pos ? s->len : pos;
}

/* `_deepest_checkpoint`: the largest position <= limit with a live KDA checkpoint on this chain (0 if none) */
static int64_t deepest_checkpoint(const Sim *s, int64_t limit) {
    Py_ssize_t i = bisect_right(s->on_path.a, s->on_path.n, limit);
    int64_t deepest = i ? s->on_path.a[i - 1] : 0;
    Py_ssize_t lo = 0, hi = s->runs.n; /* bisect_right(runs, (limit, inf)): the runs starting at or before it */
    while (lo < hi) {
        Py_ssize_t mid = (lo + hi) / 2;
        if (limit < s->runs.a[mid].first) hi = mid; else lo = mid + 1;
    }
    if (lo) {
        int64_t last = s->runs.a[lo - 1].last, at = limit / s->step * s->step;
        int64_t reach = last < at ? last : at;
        if (reach > deepest) deepest = reach;
    }
    return deepest;
}

/* ---- a request's spans, read from its Python objects ---------------------------------------------------------- */

static int64_t int_attr(PyObject *obj, PyObject *name) {
    PyObject *v = PyObject_GetAttr(obj, name);
    if (!v) return -1;
    int64_t x = PyLong_AsLongLong(v);
    Py_DECREF(v);
    return x;
}

/* the spans of a tuple of `Span`s, into `out` (its length set); -1 with an exception set */
static int read_spans(PyObject *tuple, Spans *out) {
    out->n = 0;
    PyObject *seq = PySequence_Fast(tuple, "spans must be a sequence");
    if (!seq) return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    if (RESERVE(out, n) < 0) { Py_DECREF(seq); return -1; }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *span = PySequence_Fast_GET_ITEM(seq, i);
        SpanC c;
        c.seg = int_attr(span, S_SEG);
        if (c.seg == -1 && PyErr_Occurred()) goto fail;
        c.start = int_attr(span, S_START);
        if (c.start == -1 && PyErr_Occurred()) goto fail;
        c.length = int_attr(span, S_LENGTH);
        if (c.length == -1 && PyErr_Occurred()) goto fail;
        out->a[out->n++] = c;
    }
    Py_DECREF(seq);
    return 0;
fail:
    Py_DECREF(seq);
    return -1;
}

/* ---- one request ---------------------------------------------------------------------------------------------- */

typedef struct { int reason; int64_t lo, hi; } Part;

static PyObject *made_outcome(int64_t length, int64_t hit, PyObject *output, const Part *parts, int n) {
    int m = 0;
    int64_t tokens[16], at[16];
    int reasons[16];
    for (int i = 0; i < n; i++) { /* merged: a part empty is none, one that goes on the one before joins it */
        const Part *p = &parts[i];
        if (p->hi <= p->lo) continue;
        if (m && reasons[m - 1] == p->reason && at[m - 1] + tokens[m - 1] == p->lo) {
            tokens[m - 1] += p->hi - p->lo;
        } else {
            reasons[m] = p->reason;
            tokens[m] = p->hi - p->lo;
            at[m] = p->lo;
            m++;
        }
    }
    PyObject *tuple = PyTuple_New(m);
    if (!tuple) return NULL;
    for (int i = 0; i < m; i++) {
        PyObject *args[3] = {REASON[reasons[i]], PyLong_FromLongLong(tokens[i]), PyLong_FromLongLong(at[i])};
        if (!args[1] || !args[2]) {
            Py_XDECREF(args[1]);
            Py_XDECREF(args[2]);
            Py_DECREF(tuple);
            return NULL;
        }
        PyObject *miss = PyObject_Vectorcall(MISS_PART, args, 3, NULL);
        Py_DECREF(args[1]);
        Py_DECREF(args[2]);
        if (!miss) { Py_DECREF(tuple); return NULL; }
        PyTuple_SET_ITEM(tuple, i, miss);
    }
    PyObject *args[4] = {PyLong_FromLongLong(length), PyLong_FromLongLong(hit), output, tuple};
    PyObject *outcome = NULL;
    if (args[0] && args[1]) outcome = PyObject_Vectorcall(OUTCOME, args, 4, NULL);
    Py_XDECREF(args[0]);
    Py_XDECREF(args[1]);
    Py_DECREF(tuple);
    return outcome;
}

/* `_why`'s parts, in order (at most 10) */
static int why(const Sim *s, int64_t turn_start, int resent, int64_t r0, int64_t r1, int64_t hit, int64_t shared_,
               int64_t shared_any, int64_t cap, int first, int64_t found, Part *parts) {
    int n = 0;
    int64_t length = s->prompt_len;
#define PART(r, a, b) (parts[n++] = (Part){(r), (a), (b)})
#define MAX(a, b) ((a) > (b) ? (a) : (b))
#define MIN(a, b) ((a) < (b) ? (a) : (b))
    PART(BELOW_MINIMUM, hit, found);
    hit = found;
    int64_t cached_end = MIN(shared_, length);
    if (s->anywhere) {
        int64_t limit = MIN(cached_end, cap);
        PART(BLOCK_GRANULARITY, hit, limit);
        PART(LAST_TOKEN, MAX(hit, limit), cached_end);
    } else {
        int64_t block_end = cached_end / s->block * s->block, usable = MIN(block_end, cap);
        PART(NO_CHECKPOINT, hit, usable);
        PART(LAST_TOKEN, MAX(hit, usable), block_end);
        PART(BLOCK_GRANULARITY, MAX(hit, block_end), cached_end);
    }
    int64_t expired_end = MAX(cached_end, MIN(shared_any, length));
    PART(EXPIRED, cached_end, expired_end);
    int64_t rest = expired_end, turn = MAX(rest, MIN(turn_start, length));
    int carried = first ? COLD : PREFIX_CHANGED;
    if (resent) {
        int64_t o0 = MAX(rest, MIN(r0, turn)), o1 = MAX(rest, MIN(r1, turn));
        int out_reason = first ? COLD : s->output ? PREFIX_CHANGED : OUTPUT_NOT_CACHED;
        PART(carried, rest, o0);
        PART(out_reason, o0, o1);
        PART(carried, o1, turn);
    } else {
        PART(carried, rest, turn);
    }
    PART(NEW_INPUT, turn, length);
    return n;
}

static int finish(Sim *s, double now, int64_t turn_start, const Spans *output, int64_t hit) {
    s->time = now;
    s->has_time = 1;
    s->fresh = s->path.n; /* the whole prompt was used now; an output pushed after it was not */
    int64_t block = s->block;
    if (!block) {
        if (s->output && s->anywhere)
            for (Py_ssize_t i = 0; i < output->n; i++)
                if (push(s, output->a[i]) < 0) return -1;
        return 0;
    }
    int64_t length = s->prompt_len, cap = (length - 1) / block * block;
    int64_t ts = turn_start / block * block; /* `kept_points`: the turn's start and the end, past the hit */
    int64_t a = MIN(ts, cap), b = cap;
    if (a > hit && retain(s, a, now) < 0) return -1;
    if (b != a && b > hit && retain(s, b, now) < 0) return -1;
    if (s->step) { /* `kept_run` */
        int64_t first = (hit / s->step + 1) * s->step, last = cap / s->step * s->step;
        if (first <= last && add_run(s, first, last) < 0) return -1;
    }
    if (s->output) { /* decoding ends with a checkpoint after the output, even an empty one */
        for (Py_ssize_t i = 0; i < output->n; i++)
            if (push(s, output->a[i]) < 0) return -1;
        if (adopt_checkpoints(s, length, now) < 0) return -1;
        int64_t end = s->len / block * block;
        if (end > cap && retain(s, end, now) < 0) return -1;
    }
    return 0;
}

static Spans APPEND, OUT; /* a request's spans, read anew for each (the GIL keeps them to one call at a time) */

static PyObject *Sim_run(Sim *s, PyObject *req) {
    PyObject *v = PyObject_GetAttr(req, S_TIME);
    if (!v) return NULL;
    double now = PyFloat_AsDouble(v);
    Py_DECREF(v);
    if (now == -1.0 && PyErr_Occurred()) return NULL;
    int64_t keep = int_attr(req, S_KEEP);
    if (keep == -1 && PyErr_Occurred()) return NULL;
    int64_t turn_start = int_attr(req, S_TURN_START);
    if (turn_start == -1 && PyErr_Occurred()) return NULL;
    if (!(v = PyObject_GetAttr(req, S_APPEND))) return NULL;
    int bad = read_spans(v, &APPEND);
    Py_DECREF(v);
    if (bad < 0) return NULL;
    if (!(v = PyObject_GetAttr(req, S_OUTPUT))) return NULL;
    bad = read_spans(v, &OUT);
    Py_DECREF(v);
    if (bad < 0) return NULL;
    int resent = 0;
    int64_t r0 = 0, r1 = 0;
    if (!(v = PyObject_GetAttr(req, S_RESENT))) return NULL;
    if (v != Py_None) {
        PyObject *a = PySequence_GetItem(v, 0), *b = a ? PySequence_GetItem(v, 1) : NULL;
        if (b) {
            r0 = PyLong_AsLongLong(a);
            r1 = PyLong_AsLongLong(b);
        }
        Py_XDECREF(a);
        Py_XDECREF(b);
        Py_DECREF(v);
        if (!b || PyErr_Occurred()) return NULL;
        resent = 1;
    } else {
        Py_DECREF(v);
    }

    int first = !s->has_time;
    if (keep > s->prompt_len)
        return PyErr_Format(PyExc_ValueError, "keep=%lld is longer than the previous prompt (%lld)",
                            (long long)keep, (long long)s->prompt_len);
    if (keep < 0) return PyErr_Format(PyExc_ValueError, "keep=%lld is negative", (long long)keep);
    int prev_live = !first && (!s->has_ttl || now - s->time <= s->ttl);
    if (!first && !prev_live) { /* every entry was last used by the previous request at the latest */
        map_clear(&s->ckpt, 0, 0);
        map_clear(&s->ckpt_in, 1, 0);
        s->on_path.n = 0;
        s->runs.n = 0;
        map_clear(&s->runs_in, 1, 1);
    }
    if (truncate_to(s, keep) < 0) return NULL;
    s->fresh = s->path.n;
    for (Py_ssize_t i = 0; i < APPEND.n; i++)
        if (push(s, APPEND.a[i]) < 0) return NULL;
    if (adopt_checkpoints(s, keep, now) < 0) return NULL;
    int64_t length = s->prompt_len = s->len;
    if (length < 1) return PyErr_Format(PyExc_ValueError, "a request needs at least one prompt token");

    PyObject *output = PyObject_GetAttr(req, S_OUTPUT_TOKENS);
    if (!output) return NULL;
    if (output == Py_None) {
        Py_DECREF(output);
        int64_t sum = 0;
        for (Py_ssize_t i = 0; i < OUT.n; i++) sum += OUT.a[i].length;
        if (!(output = PyLong_FromLongLong(sum))) return NULL;
    }
    Part parts[12];
    int n;
    int64_t hit;
    if (s->none) {
        hit = 0;
        parts[0] = (Part){CACHING_OFF, 0, length};
        n = 1;
    } else {
        int64_t sh = shared(s, keep, prev_live, now, s->has_ttl, s->ttl);
        int64_t sh_any = s->has_ttl && sh < length && !first ? shared(s, keep, 1, now, 0, 0.0) : sh;
        int64_t cap = s->anywhere ? length - 1 : (length - 1) / s->block * s->block;
        int64_t limit = MIN(sh, cap);
        int64_t found = s->anywhere ? limit / s->hit_step * s->hit_step : deepest_checkpoint(s, limit);
        hit = found >= s->min_tokens ? found : 0; /* a provider caches nothing shorter */
        n = why(s, turn_start, resent, r0, r1, hit, sh, sh_any, cap, first, found, parts);
    }
    if (finish(s, now, turn_start, &OUT, hit) < 0) {
        Py_DECREF(output);
        return NULL;
    }
    PyObject *outcome = made_outcome(length, hit, output, parts, n);
    Py_DECREF(output);
    return outcome;
}

/* ---- the type ------------------------------------------------------------------------------------------------- */

static int Sim_init(Sim *s, PyObject *args, PyObject *kwds) {
    static char *names[] = {"block", "step", "hit_step", "min_tokens", "anywhere", "none", "output", "ttl", NULL};
    long long block, step, hit_step, min_tokens;
    int anywhere, none, output;
    PyObject *ttl;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "LLLLpppO", names, &block, &step, &hit_step, &min_tokens,
                                     &anywhere, &none, &output, &ttl))
        return -1;
    if (!OUTCOME) {
        PyErr_SetString(PyExc_RuntimeError, "kcost.cache._session.setup was not called");
        return -1;
    }
    if (s->nodes.slots) {
        PyErr_SetString(PyExc_RuntimeError, "a simulator is made once");
        return -1;
    }
    if (hit_step < 1 || block < 0 || step < 0 || (!anywhere && !none && block < 1) || (step && !block)) {
        PyErr_SetString(PyExc_ValueError, "a block, step and hit step the Python simulator would not make");
        return -1;
    }
    s->block = block;
    s->step = step;
    s->hit_step = hit_step;
    s->min_tokens = min_tokens;
    s->anywhere = anywhere;
    s->none = none;
    s->output = output;
    s->has_ttl = ttl != Py_None;
    s->ttl = s->has_ttl ? PyFloat_AsDouble(ttl) : 0.0;
    if (s->has_ttl && s->ttl == -1.0 && PyErr_Occurred()) return -1;
    if (map_init(&s->nodes) < 0 || map_init(&s->siblings) < 0 || map_init(&s->ckpt) < 0 ||
        map_init(&s->ckpt_in) < 0 || map_init(&s->runs_in) < 0)
        return -1;
    return 0;
}

static PyObject *Sim_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    (void)args;
    (void)kwds;
    Sim *s = (Sim *)type->tp_alloc(type, 0); /* zeroed: every array empty, every map unmade */
    return (PyObject *)s;
}

static void Sim_dealloc(Sim *s) {
    map_clear(&s->ckpt_in, 1, 0);
    map_clear(&s->runs_in, 1, 1);
    Map *maps[] = {&s->nodes, &s->siblings, &s->ckpt, &s->ckpt_in, &s->runs_in};
    for (int i = 0; i < 5; i++) free(maps[i]->slots);
    free(s->node.a);
    free(s->on_path.a);
    free(s->runs.a);
    free(s->path.a);
    free(s->starts.a);
    free(s->spans.a);
    Py_TYPE(s)->tp_free((PyObject *)s);
}

static PyMethodDef SIM_METHODS[] = {
    {"run", (PyCFunction)Sim_run, METH_O, "run(request) -> Outcome: as kcost.cache.simulator.Simulator.run"},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject SIM_TYPE = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "kcost.cache._session.Simulator",
    .tp_basicsize = sizeof(Sim),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Simulator(block, step, hit_step, min_tokens, anywhere, none, output, ttl): one session's cache "
              "under one model, as kcost.cache.simulator.Simulator keeps it",
    .tp_new = Sim_new,
    .tp_init = (initproc)Sim_init,
    .tp_dealloc = (destructor)Sim_dealloc,
    .tp_methods = SIM_METHODS,
};

static PyObject *py_setup(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *outcome, *miss_part, *reasons;
    if (!PyArg_ParseTuple(args, "OOO!", &outcome, &miss_part, &PyTuple_Type, &reasons)) return NULL;
    if (PyTuple_GET_SIZE(reasons) < REASONS) {
        PyErr_SetString(PyExc_ValueError, "fewer reasons than the compiled simulator gives");
        return NULL;
    }
    Py_XSETREF(OUTCOME, Py_NewRef(outcome));
    Py_XSETREF(MISS_PART, Py_NewRef(miss_part));
    for (int i = 0; i < REASONS; i++) Py_XSETREF(REASON[i], Py_NewRef(PyTuple_GET_ITEM(reasons, i)));
    Py_RETURN_NONE;
}

static PyMethodDef METHODS[] = {
    {"setup", py_setup, METH_VARARGS,
     "setup(Outcome, MissPart, reasons): the classes an outcome is made of, and the reasons in Reason's order"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef MODULE = {PyModuleDef_HEAD_INIT, "_session", "kcost's compiled session simulator.", -1,
                                    METHODS, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__session(void) {
    if (PyType_Ready(&SIM_TYPE) < 0) return NULL;
    const char *names[] = {"time", "keep", "append", "turn_start", "output", "resent_output", "output_tokens",
                           "seg", "start", "length"};
    PyObject **slots[] = {&S_TIME, &S_KEEP, &S_APPEND, &S_TURN_START, &S_OUTPUT, &S_RESENT, &S_OUTPUT_TOKENS,
                          &S_SEG, &S_START, &S_LENGTH};
    for (int i = 0; i < 10; i++)
        if (!(*slots[i] = PyUnicode_InternFromString(names[i]))) return NULL;
    PyObject *m = PyModule_Create(&MODULE);
    if (!m) return NULL;
    Py_INCREF(&SIM_TYPE);
    if (PyModule_AddObject(m, "Simulator", (PyObject *)&SIM_TYPE) < 0) {
        Py_DECREF(&SIM_TYPE);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
