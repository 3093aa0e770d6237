/* The compiled replay core of `kcost trace`: one pass that reads a request trace, checks each line, and serves
 * every request in every run (a cache model over a fleet) before reading the next.
 *
 * It is the Python engine (kcost/fleet/replay.py, cluster.py, pool.py, prefill.py) written again, rule for rule
 * and floating-point operation for operation, so both give byte-identical reports; the Python engine is the
 * oracle the tests hold this one to. Where this core meets anything it does not replay exactly (a line the
 * Python reader would reject, a number past 64 bits, NaN, a lone carriage return), it declines: `replay`
 * returns None and the caller runs the Python engine, whose reader then names the bad line.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <ctype.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* set by each call from kcost's own constants (kcost.model.k3.HASH_BLOCK, kcost.fleet.routing.AFFINITY_BLOCKS):
 * the tokens of a block, and the full blocks that key a session without an id */
static int64_t HASH_BLOCK = 512, AFFINITY_BLOCKS = 4, MAX_TOKENS = 1000000000; /* and kcost.model.bounds.MAX_TOKENS */
enum { K3 = 0, SHARED = 1, IDEAL = 2, NONE = 3 };
enum { KV = 0, CKPT = 1 };

/* ---- a hash map of (key, kind) to nodes on one recency list ------------------------------------------------ */

typedef struct {
    int64_t key;
    double last;
    int32_t prev, next; /* recency list: least recently used at the head */
    int32_t pages, pins;
    uint8_t kind;
} Node;

typedef struct {
    Node *nodes;
    int32_t cap_nodes, free_head, count;
    int32_t *slots; /* node index + 1; 0: empty */
    uint64_t mask;
    int32_t head, tail;
} Map;

static uint64_t mix(int64_t key, int kind) {
    uint64_t z = (uint64_t)key * 2u + (uint64_t)kind + 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static int map_init(Map *m) {
    memset(m, 0, sizeof(*m));
    m->cap_nodes = 1024;
    m->nodes = malloc(sizeof(Node) * (size_t)m->cap_nodes);
    m->mask = 2047;
    m->slots = calloc(m->mask + 1, sizeof(int32_t));
    if (!m->nodes || !m->slots) return -1;
    for (int32_t i = 0; i < m->cap_nodes; i++) m->nodes[i].next = i + 1 < m->cap_nodes ? i + 1 : -1;
    m->free_head = 0;
    m->head = m->tail = -1;
    return 0;
}

static void map_free(Map *m) {
    free(m->nodes);
    free(m->slots);
    m->nodes = NULL;
    m->slots = NULL;
}

static int32_t map_get(const Map *m, int64_t key, int kind) {
    uint64_t i = mix(key, kind) & m->mask;
    for (;;) {
        int32_t s = m->slots[i];
        if (!s) return -1;
        const Node *n = &m->nodes[s - 1];
        if (n->key == key && n->kind == kind) return s - 1;
        i = (i + 1) & m->mask;
    }
}

static void slot_put(Map *m, int32_t idx) {
    uint64_t i = mix(m->nodes[idx].key, m->nodes[idx].kind) & m->mask;
    while (m->slots[i]) i = (i + 1) & m->mask;
    m->slots[i] = idx + 1;
}

static int map_grow(Map *m) {
    if ((uint64_t)(m->count + 1) * 2 > m->mask + 1) { /* keep the table at most half full */
        uint64_t size = (m->mask + 1) * 2;
        int32_t *slots = calloc(size, sizeof(int32_t));
        if (!slots) return -1;
        free(m->slots);
        m->slots = slots;
        m->mask = size - 1;
        for (int32_t i = m->head; i >= 0; i = m->nodes[i].next) slot_put(m, i);
    }
    if (m->free_head < 0) {
        int32_t old = m->cap_nodes, size = old * 2;
        Node *nodes = realloc(m->nodes, sizeof(Node) * (size_t)size);
        if (!nodes) return -1;
        m->nodes = nodes;
        m->cap_nodes = size;
        for (int32_t i = old; i < size; i++) nodes[i].next = i + 1 < size ? i + 1 : -1;
        m->free_head = old;
    }
    return 0;
}

static void list_unlink(Map *m, int32_t idx) {
    Node *n = &m->nodes[idx];
    if (n->prev >= 0) m->nodes[n->prev].next = n->next; else m->head = n->next;
    if (n->next >= 0) m->nodes[n->next].prev = n->prev; else m->tail = n->prev;
}

static void list_append(Map *m, int32_t idx) {
    Node *n = &m->nodes[idx];
    n->prev = m->tail;
    n->next = -1;
    if (m->tail >= 0) m->nodes[m->tail].next = idx; else m->head = idx;
    m->tail = idx;
}

static void map_touch(Map *m, int32_t idx) { /* move to the most recent end */
    if (m->tail == idx) return;
    list_unlink(m, idx);
    list_append(m, idx);
}

/* a new node at the most recent end; -1 when out of memory */
static int32_t map_add(Map *m, int64_t key, int kind) {
    if (map_grow(m) < 0) return -1;
    int32_t idx = m->free_head;
    Node *n = &m->nodes[idx];
    m->free_head = n->next;
    n->key = key;
    n->kind = (uint8_t)kind;
    n->pins = 0;
    n->pages = 0;
    n->last = 0.0;
    slot_put(m, idx);
    list_append(m, idx);
    m->count++;
    return idx;
}

static void map_remove(Map *m, int32_t idx) {
    uint64_t i = mix(m->nodes[idx].key, m->nodes[idx].kind) & m->mask;
    while (m->slots[i] != idx + 1) i = (i + 1) & m->mask;
    m->slots[i] = 0;
    uint64_t j = i; /* backward-shift deletion: no tombstones */
    for (;;) {
        j = (j + 1) & m->mask;
        int32_t s = m->slots[j];
        if (!s) break;
        uint64_t home = mix(m->nodes[s - 1].key, m->nodes[s - 1].kind) & m->mask;
        if (((j - home) & m->mask) >= ((j - i) & m->mask)) {
            m->slots[i] = s;
            m->slots[j] = 0;
            i = j;
        }
    }
    list_unlink(m, idx);
    m->nodes[idx].next = m->free_head;
    m->free_head = idx;
    m->count--;
}

static void map_clear(Map *m) {
    while (m->head >= 0) map_remove(m, m->head);
}

/* ---- the pool (pool.py) ---------------------------------------------------------------------------------- */

typedef struct {
    Map map;
    int64_t capacity; /* pages; -1: unlimited */
    double ttl;       /* seconds; < 0: none */
    int64_t used, evictions;
    int sweep;
} Pool;

static void pool_free_entry(Pool *p, int32_t idx) {
    p->used -= p->map.nodes[idx].pages;
    map_remove(&p->map, idx);
}

static int32_t pool_find(Pool *p, int kind, int64_t key, double now) {
    int32_t idx = map_get(&p->map, key, kind);
    if (idx < 0) return -1;
    Node *n = &p->map.nodes[idx];
    if (p->ttl >= 0 && now - n->last > p->ttl) {
        pool_free_entry(p, idx);
        return -1;
    }
    n->last = now;
    map_touch(&p->map, idx);
    return idx;
}

static int pool_make_room(Pool *p, int64_t pages, double now, int32_t **victims, int64_t *victims_cap) {
    int64_t need = p->used + pages - p->capacity, count = 0;
    for (int32_t i = p->map.head; i >= 0; i = p->map.nodes[i].next) {
        if (need <= 0) break;
        if (p->map.nodes[i].pins == 0) {
            if (count == *victims_cap) {
                int64_t size = *victims_cap ? *victims_cap * 2 : 256;
                int32_t *grown = realloc(*victims, sizeof(int32_t) * (size_t)size);
                if (!grown) return -1;
                *victims = grown;
                *victims_cap = size;
            }
            (*victims)[count++] = i;
            need -= p->map.nodes[i].pages;
        }
    }
    if (need > 0) return 0;
    double oldest_live = p->ttl >= 0 ? now - p->ttl : -INFINITY;
    for (int64_t k = 0; k < count; k++) {
        int32_t idx = (*victims)[k];
        if (p->map.nodes[idx].last >= oldest_live) p->evictions++;
        pool_free_entry(p, idx);
    }
    return 1;
}

/* the entry, pinned; -1 when it cannot fit; -2 when out of memory */
static int32_t pool_put(Pool *p, int kind, int64_t key, int64_t pages, double now, int32_t **victims,
                        int64_t *victims_cap) {
    int32_t idx = map_get(&p->map, key, kind);
    if (idx >= 0) {
        Node *n = &p->map.nodes[idx];
        n->last = now;
        n->pins++;
        map_touch(&p->map, idx);
        return idx;
    }
    if (p->sweep) {
        double oldest_live = now - p->ttl;
        while (p->map.head >= 0) {
            Node *n = &p->map.nodes[p->map.head];
            if (n->last >= oldest_live || n->pins) break;
            pool_free_entry(p, p->map.head);
        }
    }
    if (p->capacity >= 0 && p->used + pages > p->capacity) {
        int room = pool_make_room(p, pages, now, victims, victims_cap);
        if (room < 0) return -2;
        if (!room) return -1;
    }
    idx = map_add(&p->map, key, kind);
    if (idx < 0) return -2;
    Node *n = &p->map.nodes[idx];
    n->pages = (int32_t)pages;
    n->last = now;
    n->pins = 1;
    p->used += pages;
    return idx;
}

/* ---- the times to first token (prefill.py: Percentiles) -------------------------------------------------- */

typedef struct {
    int64_t count, zeros;
    int sketched;
    double *exact;
    int64_t n_exact, cap_exact;
    int64_t *buckets; /* counts for keys lo .. lo + n_buckets - 1 */
    int64_t lo, n_buckets;
} Times;

static long long EXACT_TIMES = 65536;
static double LOG_GAMMA = 0.0;

static int times_bucket(Times *t, double value) {
    if (value <= 0) {
        t->zeros++;
        return 0;
    }
    int64_t key = (int64_t)ceil(log(value) / LOG_GAMMA);
    if (!t->n_buckets) {
        t->buckets = calloc(64, sizeof(int64_t));
        if (!t->buckets) return -1;
        t->lo = key - 32;
        t->n_buckets = 64;
    }
    if (key < t->lo || key >= t->lo + t->n_buckets) {
        int64_t lo = key < t->lo ? key - t->n_buckets : t->lo;
        int64_t hi = key >= t->lo + t->n_buckets ? key + t->n_buckets : t->lo + t->n_buckets;
        int64_t *grown = calloc((size_t)(hi - lo), sizeof(int64_t));
        if (!grown) return -1;
        memcpy(grown + (t->lo - lo), t->buckets, sizeof(int64_t) * (size_t)t->n_buckets);
        free(t->buckets);
        t->buckets = grown;
        t->lo = lo;
        t->n_buckets = hi - lo;
    }
    t->buckets[key - t->lo]++;
    return 0;
}

static int times_add(Times *t, double value) {
    t->count++;
    if (!t->sketched) {
        if (t->n_exact == t->cap_exact) {
            int64_t size = t->cap_exact ? t->cap_exact * 2 : 64;
            double *grown = realloc(t->exact, sizeof(double) * (size_t)size);
            if (!grown) return -1;
            t->exact = grown;
            t->cap_exact = size;
        }
        t->exact[t->n_exact++] = value;
        if (t->n_exact > EXACT_TIMES) {
            for (int64_t i = 0; i < t->n_exact; i++)
                if (times_bucket(t, t->exact[i]) < 0) return -1;
            free(t->exact);
            t->exact = NULL;
            t->n_exact = t->cap_exact = 0;
            t->sketched = 1;
        }
        return 0;
    }
    return times_bucket(t, value);
}

static void times_free(Times *t) {
    free(t->exact);
    free(t->buckets);
}

/* (count, exact values or None, zeros, {bucket: count}) */
static PyObject *times_export(const Times *t) {
    PyObject *exact = Py_None, *buckets = PyDict_New();
    if (!buckets) return NULL;
    Py_INCREF(Py_None);
    if (!t->sketched) {
        Py_DECREF(Py_None);
        exact = PyList_New((Py_ssize_t)t->n_exact);
        if (!exact) goto fail;
        for (int64_t i = 0; i < t->n_exact; i++) {
            PyObject *v = PyFloat_FromDouble(t->exact[i]);
            if (!v) goto fail;
            PyList_SET_ITEM(exact, (Py_ssize_t)i, v);
        }
    } else {
        for (int64_t i = 0; i < t->n_buckets; i++) {
            if (!t->buckets[i]) continue;
            PyObject *k = PyLong_FromLongLong(t->lo + i), *v = PyLong_FromLongLong(t->buckets[i]);
            int bad = !k || !v || PyDict_SetItem(buckets, k, v) < 0;
            Py_XDECREF(k);
            Py_XDECREF(v);
            if (bad) goto fail;
        }
    }
    PyObject *out = Py_BuildValue("(LOLO)", (long long)t->count, exact, (long long)t->zeros, buckets);
    Py_DECREF(exact);
    Py_DECREF(buckets);
    return out;
fail:
    Py_XDECREF(exact);
    Py_DECREF(buckets);
    return NULL;
}

/* ---- a prefill queue (prefill.py: Prefill) --------------------------------------------------------------- */

typedef struct {
    double arrival, work;
    uint8_t cls;
} Waiting;

typedef struct {
    Waiting *items;
    int64_t head, len, cap;
} Queue;

enum { SHORT = 0, LONG = 1 };

typedef struct {
    double rate, share; /* share < 0: no budget */
    double now;
    Queue q[2];
    Times done[2];
} Prefill;

static int queue_push(Queue *q, Waiting w) {
    if (q->len == q->cap) {
        int64_t size = q->cap ? q->cap * 2 : 16;
        Waiting *items = malloc(sizeof(Waiting) * (size_t)size);
        if (!items) return -1;
        for (int64_t i = 0; i < q->len; i++) items[i] = q->items[(q->head + i) % q->cap];
        free(q->items);
        q->items = items;
        q->head = 0;
        q->cap = size;
    }
    q->items[(q->head + q->len) % q->cap] = w;
    q->len++;
    return 0;
}

static Waiting *queue_front(Queue *q) { return &q->items[q->head]; }

static Waiting queue_pop(Queue *q) {
    Waiting w = q->items[q->head];
    q->head = (q->head + 1) % q->cap;
    q->len--;
    return w;
}

/* The classes busy and their rates, in the order prefill.py's `_rates` yields them. */
static int prefill_rates(const Prefill *p, int *cls, double *rate) {
    int busy_short = p->q[SHORT].len > 0, busy_long = p->q[LONG].len > 0;
    if (busy_short && busy_long && p->share >= 0) {
        cls[0] = LONG;
        rate[0] = p->share;
        cls[1] = SHORT;
        rate[1] = 1 - p->share;
        return 2;
    }
    int n = 0;
    if (busy_short) { cls[n] = SHORT; rate[n++] = 1.0; }
    if (busy_long) { cls[n] = LONG; rate[n++] = 1.0; }
    return n;
}

static int prefill_advance(Prefill *p, double until) {
    for (;;) {
        int cls[2];
        double rate[2];
        int n = prefill_rates(p, cls, rate);
        if (!n) {
            if (until != INFINITY) p->now = p->now > until ? p->now : until;
            return 0;
        }
        int best = -1;
        double left = 0;
        for (int i = 0; i < n; i++) {
            if (!(rate[i] > 0)) continue;
            double t = queue_front(&p->q[cls[i]])->work / rate[i];
            if (best < 0 || t < left) { best = i; left = t; }
        }
        if (p->now + left > until) {
            for (int i = 0; i < n; i++) queue_front(&p->q[cls[i]])->work -= (until - p->now) * rate[i];
            p->now = until;
            return 0;
        }
        for (int i = 0; i < n; i++) queue_front(&p->q[cls[i]])->work -= left * rate[i];
        p->now += left;
        Waiting w = queue_pop(&p->q[cls[best]]);
        if (times_add(&p->done[w.cls], p->now - w.arrival) < 0) return -1;
    }
}

static int prefill_arrive(Prefill *p, double time, int64_t tokens, int cls) {
    if (prefill_advance(p, time) < 0) return -1;
    Waiting w = {time, (double)tokens / p->rate, (uint8_t)cls};
    return queue_push(&p->q[p->share >= 0 ? cls : SHORT], w);
}

static void prefill_free(Prefill *p) {
    for (int i = 0; i < 2; i++) {
        free(p->q[i].items);
        times_free(&p->done[i]);
    }
}

/* ---- one cluster's cache (cluster.py: ClusterCache) ------------------------------------------------------ */

typedef struct {
    Pool pool;
    Map seen;
    int64_t seen_limit; /* -1: none */
    double seen_window; /* < 0: none */
} Cluster;

typedef struct {
    int kind;
    int64_t block, every; /* every: 0 for none */
    double ttl;           /* < 0: none */
    int64_t capacity, kv_pages, ckpt_pages, seen_limit;
    double seen_window;
    int clusters;
    int64_t n_failures;
    int64_t *fail_cluster;
    double *fail_start, *fail_end;
    char *fail_cleared;
    int successor, times;
    double prefill_rate, long_share;
    int64_t long_from;
    /* state */
    Cluster *cache;
    int64_t (*tally)[7]; /* requests, input, hit, output, evictions, recovery requests, recovery misses */
    Prefill *queues, *budgeted;
    /* a curve: the runs of one model over one fleet but their capacity, served by the first (its `lead`) */
    int lead, n_members;    /* lead: the first run's place, or -1 for a run alone */
    int members[32];
    struct Curve *curves;   /* the first run's: one a cluster */
} Run;

typedef struct {
    int32_t *pinned;
    int64_t n_pinned, cap_pinned;
    int64_t *kept;
    int64_t cap_kept;
    int32_t *victims;
    int64_t cap_victims;
} Scratch;

static int pin(Scratch *s, int32_t idx) {
    if (s->n_pinned == s->cap_pinned) {
        int64_t size = s->cap_pinned ? s->cap_pinned * 2 : 256;
        int32_t *grown = realloc(s->pinned, sizeof(int32_t) * (size_t)size);
        if (!grown) return -1;
        s->pinned = grown;
        s->cap_pinned = size;
    }
    s->pinned[s->n_pinned++] = idx;
    return 0;
}

/* rules.py: kept_checkpoints; the count, sorted and distinct, in s->kept: the run every `step` past `hit` (in
 * order, past it already), the turn's start merged in at its place, the end last (no other is past it) */
static int64_t kept_checkpoints(Scratch *s, int64_t turn_start, int64_t cap, int64_t hit, int64_t step) {
    int64_t most = 2 + (step > 0 ? cap / step + 1 : 0), n = 0;
    if (most > s->cap_kept) {
        int64_t *grown = realloc(s->kept, sizeof(int64_t) * (size_t)most);
        if (!grown) return -1;
        s->kept = grown;
        s->cap_kept = most;
    }
    int64_t start = turn_start < cap ? turn_start : cap, *kept = s->kept;
    int placed = start <= hit;
    if (step > 0)
        for (int64_t b = (hit / step + 1) * step; b <= cap; b += step) {
            if (!placed && start <= b) {
                if (start < b) kept[n++] = start;
                placed = 1;
            }
            kept[n++] = b;
        }
    if (!placed) kept[n++] = start;
    if (cap > hit && (n == 0 || kept[n - 1] != cap)) kept[n++] = cap;
    return n;
}

/* python floor division of non-negative numbers is C's */
/* blocks[from, full) seen at `now` (those before `from` were touched already), then the ids no longer recent
 * forgotten (cluster.py: _Recent.update) */
static int seen_update(Cluster *c, const int64_t *blocks, int64_t from, int64_t full, double now) {
    Map *m = &c->seen;
    for (int64_t i = from; i < full; i++) {
        int32_t idx = map_get(m, blocks[i], 0);
        if (idx < 0) {
            idx = map_add(m, blocks[i], 0);
            if (idx < 0) return -1;
        } else {
            map_touch(m, idx);
        }
        m->nodes[idx].last = now;
    }
    if (c->seen_limit >= 0)
        while (m->count > c->seen_limit) map_remove(m, m->head);
    if (c->seen_window >= 0) {
        double oldest = now - c->seen_window;
        while (m->head >= 0 && m->nodes[m->head].last < oldest) map_remove(m, m->head);
    }
    return 0;
}

/* the hit tokens of one request; -1 when out of memory */
static int64_t serve(Run *r, Cluster *c, Scratch *s, const int64_t *blocks, int64_t length, double now) {
    int kind = r->kind;
    int64_t full = length / HASH_BLOCK, cap = (length - 1) / HASH_BLOCK;
    if (kind == NONE) return 0;
    int64_t seen = 0;
    if (kind == K3) { /* only K3 keeps a checkpoint where the newest turn starts */
        int32_t idx;
        while (seen < full && (idx = map_get(&c->seen, blocks[seen], 0)) >= 0) {
            map_touch(&c->seen, idx); /* touched as it is found: the same order as touching them all after */
            c->seen.nodes[idx].last = now;
            seen++;
        }
        if (seen_update(c, blocks, seen, full, now) < 0) return -1;
    }
    Pool *p = &c->pool;
    s->n_pinned = 0;
    int64_t cached = 0;
    while (cached < full) {
        int32_t idx = pool_find(p, KV, blocks[cached], now);
        if (idx < 0) break;
        p->map.nodes[idx].pins++;
        if (pin(s, idx) < 0) return -1;
        cached++;
    }
    int64_t step = kind == SHARED ? r->block / HASH_BLOCK : 1;
    if (kind == SHARED) cap = (length - 1) / r->block * r->block / HASH_BLOCK;
    int64_t usable = cached < cap ? cached : cap, hit = 0;
    if (kind == IDEAL) {
        hit = usable;
    } else {
        for (int64_t n = usable / step * step; n > 0; n -= step) {
            int32_t idx = pool_find(p, CKPT, blocks[n - 1], now);
            if (idx >= 0) {
                p->map.nodes[idx].pins++;
                if (pin(s, idx) < 0) return -1;
                hit = n;
                break;
            }
        }
    }
    int64_t stored = cached;
    for (int64_t i = cached; i < full; i++) {
        int32_t idx = pool_put(p, KV, blocks[i], r->kv_pages, now, &s->victims, &s->cap_victims);
        if (idx == -2) return -1;
        if (idx < 0) break;
        if (pin(s, idx) < 0) return -1;
        stored++;
    }
    if (kind != IDEAL) {
        int64_t n_kept = kind == SHARED ? kept_checkpoints(s, cap, cap, hit, step)
                                        : kept_checkpoints(s, seen, cap, hit, r->every);
        if (n_kept < 0) return -1;
        for (int64_t k = 0; k < n_kept; k++) {
            int64_t n = s->kept[k];
            if (n > stored) continue;
            int32_t idx = pool_put(p, CKPT, blocks[n - 1], r->ckpt_pages, now, &s->victims, &s->cap_victims);
            if (idx == -2) return -1;
            if (idx < 0) break;
            if (pin(s, idx) < 0) return -1;
        }
    }
    for (int64_t k = 0; k < s->n_pinned; k++) p->map.nodes[s->pinned[k]].pins--;
    return hit * HASH_BLOCK;
}

/* ---- the capacity curve in one stack pass (curve.py: CurveCache) ----------------------------------------
 *
 * Every capacity of one model over one fleet from one recency list of KV blocks: each capacity holds a prefix of
 * it (its newest blocks), its own checkpoints on a list of their own, merged with the blocks by the tick of
 * their last touch wherever the pool takes its least recently used entry. curve.py says why this is the pool at
 * each capacity, rule for rule; this is that code written again. */

#define CURVE_MAX 32
#define AHEAD 16 /* lookups fetched ahead of the one at hand: about what a core keeps in flight */

typedef struct {
    int64_t key;
    int32_t val; /* index + 1; 0: empty */
} Slot;

typedef struct { /* an open-addressing index of int64 keys */
    Slot *slots;
    uint64_t mask;
    int64_t count;
} Index;

static uint64_t hash_key(int64_t key) {
    uint64_t z = (uint64_t)key + 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static int index_init(Index *x) {
    x->mask = 1023;
    x->count = 0;
    x->slots = calloc(x->mask + 1, sizeof(Slot));
    return x->slots ? 0 : -1;
}

static int32_t index_get(const Index *x, int64_t key) {
    for (uint64_t i = hash_key(key) & x->mask;; i = (i + 1) & x->mask) {
        const Slot *s = &x->slots[i];
        if (!s->val) return -1;
        if (s->key == key) return s->val - 1;
    }
}

static void index_place(Slot *slots, uint64_t mask, int64_t key, int32_t val) {
    uint64_t i = hash_key(key) & mask;
    while (slots[i].val) i = (i + 1) & mask;
    slots[i].key = key;
    slots[i].val = val;
}

/* `key` (absent) -> `val`; -1 when out of memory */
static int index_put(Index *x, int64_t key, int32_t val) {
    if ((uint64_t)(x->count + 1) * 2 > x->mask + 1) { /* at most half full */
        uint64_t size = (x->mask + 1) * 2;
        Slot *slots = calloc(size, sizeof(Slot));
        if (!slots) return -1;
        for (uint64_t i = 0; i <= x->mask; i++)
            if (x->slots[i].val) index_place(slots, size - 1, x->slots[i].key, x->slots[i].val);
        free(x->slots);
        x->slots = slots;
        x->mask = size - 1;
    }
    index_place(x->slots, x->mask, key, val + 1);
    x->count++;
    return 0;
}

static void index_del(Index *x, int64_t key) {
    uint64_t i = hash_key(key) & x->mask;
    while (x->slots[i].key != key || !x->slots[i].val) i = (i + 1) & x->mask;
    x->slots[i].val = 0;
    for (uint64_t j = i;;) { /* backward-shift deletion */
        j = (j + 1) & x->mask;
        if (!x->slots[j].val) break;
        uint64_t home = hash_key(x->slots[j].key) & x->mask;
        if (((j - home) & x->mask) >= ((j - i) & x->mask)) {
            x->slots[i] = x->slots[j];
            x->slots[j].val = 0;
            i = j;
        }
    }
    x->count--;
}

/* The shared recency list is a log: a block's touch appends an entry (its node, the tick and the time) and leaves
 * its older entry dead, so the list in recency order is the log's live entries in order. Each capacity's KV blocks
 * and seen ids are the list from an end of its own (a position on the log): capacity k holds a block while the
 * block's entry is at or past end[k], and no bit a capacity is cleared as it evicts. So a capacity's eviction
 * walks the log forward, in memory order, without reading a node; nodes are read only by the shared work: a
 * block's touch, and its release once every end has passed it (the log's trailing edge `lo`, moved on after
 * each request). Dead entries are dropped as the log fills (c_compact). */
typedef struct { /* a block: its live entry on the log and which capacities keep a checkpoint at its end (bit k) */
    int64_t key, tick;
    double last;
    int64_t pos; /* its live entry; -1: off the list (no capacity holds it) */
    uint32_t ck;
    int32_t serial; /* the request that looked it up last */
    int32_t group; /* with a checkpoint somewhere: where its checkpoints are (c_group); free: the next free node */
    uint8_t alive;
} CNode;

typedef struct { /* one touch of a block: its node (-1: dead, touched again since), its tick and time */
    int32_t node;
    int64_t tick;
    double last;
} Entry;

typedef struct { /* a checkpoint of one capacity */
    int64_t tick;
    double last;
    int32_t prev, next; /* least recently used at the head; next: the next free one */
    int32_t block; /* its block's node (kept while a checkpoint names it: c_release) */
} CkNode;

typedef struct {
    CkNode *nodes;
    int32_t cap, free_head, head, tail;
} CkMap;

typedef struct Curve {
    int n, kind;
    int64_t block, every, kv_pages, ckpt_pages;
    double ttl; /* < 0: none */
    int64_t capacity[CURVE_MAX]; /* pages; -1: unlimited */
    int64_t seen_limit[CURVE_MAX];
    double seen_window[CURVE_MAX];
    Index index;
    CNode *nodes;
    int32_t cap_nodes, free_head, serial;
    int64_t tick;
    Entry *log;
    int64_t lo, len, cap_log; /* the entries [lo, len) kept (the older ones passed by every end) */
    uint64_t *live_bits; /* bit p: entry p is live (an end skips the dead a word at a time) */
    uint64_t *own_bits;  /* bit p: entry p is a block's of the request being put (c_passed); else none */
    int marked;          /* own_bits is marked */
    int64_t passed;      /* while it is put: a node of the request with an older tick than this is touched */
    int64_t guard;       /* while a capacity puts: no entry of the request is before this one */
    int64_t full;        /* the blocks of the request being put */
    uint32_t live, dropped;
    double newest; /* the latest time appended */
    int unordered; /* 1 once an entry was appended with an earlier time than the one before it */
    int64_t used[CURVE_MAX], evictions[CURVE_MAX], seen_count[CURVE_MAX];
    int64_t end[CURVE_MAX], seen_end[CURVE_MAX]; /* positions on the log */
    CkMap ck[CURVE_MAX];
    int32_t *groups; /* a block's checkpoints, n a group: group g's at capacity k is groups[g * n + k] where the
                      * block's bit k says it has one (one read finds them all); a free group's first: the next */
    int32_t cap_groups, free_group;
    int32_t *row;   /* a request's blocks' nodes */
    int64_t *pos;   /* their entries on the log before the request (INT64_MAX: a block again, touched before) */
    int64_t *fresh; /* the distinct blocks before each one (which the request has pinned there) */
    int64_t cap_row;
} Curve;

/* a node's two cache lines fetched ahead (a node straddles two where it does not start a line) */
static inline void prefetch_node(const CNode *n) {
    __builtin_prefetch(n);
    __builtin_prefetch((const char *)n + sizeof(CNode) - 1);
}

#define EACH_BIT(k, bits) for (uint32_t _m = (bits), k; _m && ((k = (uint32_t)__builtin_ctz(_m)), 1); _m &= _m - 1)
#define PASS_AHEAD 8 /* the log's nodes fetched ahead of a pass over it */
#define RUN_AHEAD 16 /* the log's entries fetched ahead of a run of evictions */

static void ckmap_init(CkMap *m) {
    memset(m, 0, sizeof(*m));
    m->free_head = m->head = m->tail = -1;
}

static void ckmap_clear(CkMap *m) {
    while (m->head >= 0) {
        int32_t j = m->head;
        m->head = m->nodes[j].next;
        m->nodes[j].next = m->free_head;
        m->free_head = j;
    }
    m->tail = -1;
}

static void ck_unlink(CkMap *m, int32_t j) {
    CkNode *e = &m->nodes[j];
    if (e->prev >= 0) m->nodes[e->prev].next = e->next; else m->head = e->next;
    if (e->next >= 0) m->nodes[e->next].prev = e->prev; else m->tail = e->prev;
}

static void ck_append(CkMap *m, int32_t j) {
    CkNode *e = &m->nodes[j];
    e->prev = m->tail;
    e->next = -1;
    if (m->tail >= 0) m->nodes[m->tail].next = j; else m->head = j;
    m->tail = j;
}

static void ck_touch(CkMap *m, int32_t j, double now, int64_t tick) {
    m->nodes[j].last = now;
    m->nodes[j].tick = tick;
    if (m->tail != j) {
        ck_unlink(m, j);
        ck_append(m, j);
    }
}

/* a checkpoint at `block`'s end: its place, or -1 when out of memory */
static int32_t ck_add(CkMap *m, int32_t block, double now, int64_t tick) {
    if (m->free_head < 0) {
        int32_t old = m->cap, size = old ? old * 2 : 64;
        CkNode *grown = realloc(m->nodes, sizeof(CkNode) * (size_t)size);
        if (!grown) return -1;
        m->nodes = grown;
        m->cap = size;
        for (int32_t j = old; j < size; j++) grown[j].next = j + 1 < size ? j + 1 : -1;
        m->free_head = old;
    }
    int32_t j = m->free_head;
    m->free_head = m->nodes[j].next;
    m->nodes[j].block = block;
    ck_append(m, j);
    ck_touch(m, j, now, tick);
    return j;
}

static void ck_remove(CkMap *m, int32_t j) {
    ck_unlink(m, j);
    m->nodes[j].next = m->free_head;
    m->free_head = j;
}

static void curve_free(Curve *c) {
    free(c->index.slots);
    free(c->nodes);
    free(c->log);
    free(c->live_bits);
    free(c->own_bits);
    free(c->row);
    free(c->pos);
    free(c->fresh);
    free(c->groups);
    for (int k = 0; k < c->n; k++) free(c->ck[k].nodes);
}

/* a node off the list out of the table, unless a checkpoint or the request in flight still names it */
static void c_release(Curve *c, int32_t i) {
    CNode *n = &c->nodes[i];
    if (n->pos >= 0 || n->ck || n->serial == c->serial) return;
    index_del(&c->index, n->key);
    n->alive = 0;
    n->group = c->free_head;
    c->free_head = i;
}

/* group g's place for capacity k (k 0: a free group's link to the next) */
static inline int32_t *c_place(const Curve *c, int32_t g, int k) { return &c->groups[(size_t)g * c->n + k]; }

/* a group for a block's first checkpoint; -1 when out of memory */
static int32_t c_group(Curve *c) {
    if (c->free_group < 0) {
        int32_t old = c->cap_groups, size = old ? old * 2 : 256;
        int32_t *grown = realloc(c->groups, sizeof(int32_t) * (size_t)size * (size_t)c->n);
        if (!grown) return -1;
        c->groups = grown;
        c->cap_groups = size;
        for (int32_t g = old; g < size; g++) *c_place(c, g, 0) = g + 1 < size ? g + 1 : -1;
        c->free_group = old;
    }
    int32_t g = c->free_group;
    c->free_group = *c_place(c, g, 0);
    return g;
}

/* node i's checkpoint at capacity k gone (its group freed with its last) */
static void c_ck_gone(Curve *c, int32_t i, int k) {
    CNode *n = &c->nodes[i];
    n->ck &= ~(1u << k);
    if (!n->ck) {
        *c_place(c, n->group, 0) = c->free_group;
        c->free_group = n->group;
    }
}

/* the ends to move with the log's entries: each live capacity's, and its seen memory's where one is kept */
static int c_ends(Curve *c, int64_t **ends) {
    int n = 0;
    EACH_BIT(k, c->live) {
        ends[n++] = &c->end[k];
        if (c->kind == K3) ends[n++] = &c->seen_end[k];
    }
    return n;
}

/* the log's dead entries and those before `lo` dropped, live ones moved down in order (and their nodes and the
 * ends told), then room made for at least one more; -1 when out of memory */
static int c_compact(Curve *c) {
    int64_t *ends[2 * CURVE_MAX];
    int n = c_ends(c, ends);
    for (int a = 1; a < n; a++) /* by position: n is small */
        for (int b = a; b > 0 && *ends[b - 1] > *ends[b]; b--) {
            int64_t *t = ends[b];
            ends[b] = ends[b - 1];
            ends[b - 1] = t;
        }
    Entry *log = c->log;
    int64_t out = 0;
    int e = 0;
    for (int64_t p = c->lo; p < c->len; p++) {
        while (e < n && *ends[e] <= p) *ends[e++] = out;
        if (p + PASS_AHEAD < c->len && log[p + PASS_AHEAD].node >= 0)
            __builtin_prefetch(&c->nodes[log[p + PASS_AHEAD].node].pos, 1);
        if (log[p].node < 0) continue;
        c->nodes[log[p].node].pos = out;
        log[out++] = log[p];
    }
    while (e < n) *ends[e++] = out;
    c->lo = 0;
    c->len = out;
    if (out * 4 > c->cap_log) { /* over a quarter live: the log doubles */
        int64_t size = c->cap_log * 2;
        Entry *grown = realloc(c->log, sizeof(Entry) * (size_t)size);
        if (!grown) return -1;
        c->log = grown;
        uint64_t *bits = realloc(c->live_bits, sizeof(uint64_t) * (size_t)(size / 64));
        if (!bits) return -1;
        c->live_bits = bits;
        uint64_t *own = realloc(c->own_bits, sizeof(uint64_t) * (size_t)(size / 64));
        if (!own) return -1;
        memset(own + c->cap_log / 64, 0, sizeof(uint64_t) * (size_t)((size - c->cap_log) / 64));
        c->own_bits = own;
        c->cap_log = size;
    }
    memset(c->live_bits, 0, sizeof(uint64_t) * (size_t)(c->cap_log / 64));
    memset(c->live_bits, 0xFF, sizeof(uint64_t) * (size_t)(out / 64));
    if (out % 64) c->live_bits[out / 64] = (1ull << (out % 64)) - 1;
    return 0;
}

/* the node touched at `tick`, `now`: to the list's new end (its older entry dead); -1 when out of memory */
static int c_touch(Curve *c, int32_t i, int64_t tick, double now) {
    CNode *n = &c->nodes[i];
    n->tick = tick;
    n->last = now;
    if (n->pos >= 0) { /* appended even where it is the newest: an end may be past it */
        c->log[n->pos].node = -1;
        c->live_bits[n->pos >> 6] &= ~(1ull << (n->pos & 63));
    }
    if (c->len == c->cap_log && c_compact(c) < 0) return -1;
    if (now < c->newest) c->unordered = 1; /* else the entries' times grow along the log, as their ticks do */
    c->newest = now;
    c->log[c->len] = (Entry){.node = i, .tick = tick, .last = now};
    c->live_bits[c->len >> 6] |= 1ull << (c->len & 63);
    n->pos = c->len++;
    return 0;
}

/* the log's trailing edge to the oldest end: the nodes no capacity holds leave the list (and the table, unless
 * a checkpoint or the request in flight names them) */
static void c_trail(Curve *c) {
    int64_t *ends[2 * CURVE_MAX], lo = c->len;
    int n = c_ends(c, ends);
    for (int e = 0; e < n; e++)
        if (*ends[e] < lo) lo = *ends[e];
    Entry *log = c->log;
    for (int64_t p = c->lo; p < lo; p++) {
        if (p + PASS_AHEAD < lo && log[p + PASS_AHEAD].node >= 0) prefetch_node(&c->nodes[log[p + PASS_AHEAD].node]);
        int32_t i = log[p].node;
        if (i < 0) continue;
        c->nodes[i].pos = -1;
        c_release(c, i);
    }
    if (lo > c->lo) c->lo = lo;
}

static int32_t c_node(Curve *c, int64_t key) {
    if (c->free_head < 0) {
        int32_t old = c->cap_nodes, size = old ? old * 2 : 1024;
        CNode *grown = realloc(c->nodes, sizeof(CNode) * (size_t)size);
        if (!grown) return -1;
        c->nodes = grown;
        c->cap_nodes = size;
        for (int32_t j = old; j < size; j++) {
            grown[j].group = j + 1 < size ? j + 1 : -1;
            grown[j].alive = 0;
        }
        c->free_head = old;
    }
    int32_t i = c->free_head;
    if (index_put(&c->index, key, i) < 0) return -1;
    CNode *n = &c->nodes[i];
    c->free_head = n->group;
    memset(n, 0, sizeof(*n));
    n->key = key;
    n->tick = -1;
    n->pos = -1;
    n->alive = 1;
    n->serial = c->serial;
    return i;
}

/* the first live entry at or past position p of a log of `len` entries */
static inline int64_t live_from(const uint64_t *bits, int64_t p, int64_t len) {
    if (p >= len) return p;
    int64_t w = p >> 6, last = (len - 1) >> 6; /* no bit is set past the log's end */
    uint64_t word = bits[w] & (~0ull << (p & 63));
    while (!word) {
        if (++w > last) return len;
        word = bits[w];
    }
    return (w << 6) + __builtin_ctzll(word);
}

/* the n-th live entry (n >= 1) at or past position p of a log of `len` entries; len where there are fewer */
static inline int64_t nth_live(const uint64_t *bits, int64_t p, int64_t len, int64_t n) {
    if (p >= len) return len;
    int64_t w = p >> 6, last = (len - 1) >> 6;
    uint64_t word = bits[w] & (~0ull << (p & 63));
    for (int64_t count; (count = __builtin_popcountll(word)) < n; word = bits[w]) {
        n -= count;
        if (++w > last) return len;
    }
    while (--n) word &= word - 1;
    return (w << 6) + __builtin_ctzll(word);
}

static inline int64_t c_live(const Curve *c, int64_t p) { return live_from(c->live_bits, p, c->len); }

/* While a request's KV blocks are put, capacity by capacity and before any of them is touched (curve_serve), the
 * list a capacity sees at the request's block i is the log as it stands less the entries of the blocks before i
 * (touched by then: on the list's new end, pinned). An end passes those as it passes the dead: their nodes carry
 * the tick their touch will set, and their entries are marked (own_bits) once an end comes as far as the first
 * of them (guard), which most requests' ends never do. Out of that phase i is of no matter (UNMARKED). */
#define UNMARKED INT64_MAX

static void c_mark(Curve *c, int on) {
    for (int64_t i = 0; i < c->full; i++) {
        int64_t p = c->pos[i];
        if (p < 0 || p == INT64_MAX) continue;
        if (on) c->own_bits[p >> 6] |= 1ull << (p & 63); else c->own_bits[p >> 6] &= ~(1ull << (p & 63));
    }
    c->marked = on;
}

static inline int c_passed(Curve *c, int64_t a, int64_t i) {
    if (a < c->guard) return 0;
    if (!c->marked) c_mark(c, 1);
    return (c->own_bits[a >> 6] >> (a & 63) & 1) && c->nodes[c->log[a].node].tick < c->passed + 2 * i;
}

/* the first entry at or past capacity k's end of the request's blocks, in c->guard */
static void c_guard(Curve *c, int k) {
    int64_t guard = INT64_MAX, end = c->end[k];
    for (int64_t i = 0; i < c->full; i++)
        if (c->pos[i] >= end && c->pos[i] < guard) guard = c->pos[i];
    c->guard = guard;
}

/* the least recently used unpinned entry of capacity k at block i (its KV entry's position in *kv or a
 * checkpoint in *ck, the other -1); 0 when every entry is pinned */
static int c_oldest(Curve *c, int k, int64_t base, int64_t i, int64_t *kv, int32_t *ck) {
    int64_t a = c_live(c, c->end[k]);
    while (a < c->len && c_passed(c, a, i)) a = c_live(c, a + 1);
    c->end[k] = a;
    int32_t b = c->ck[k].head;
    if (a >= c->len || c->log[a].tick > base) a = -1;
    if (b >= 0 && c->ck[k].nodes[b].tick > base) b = -1;
    if (a >= 0 && b >= 0) {
        if (c->ck[k].nodes[b].tick < c->log[a].tick) a = -1; else b = -1;
    }
    *kv = a;
    *ck = b;
    return a >= 0 || b >= 0;
}

/* capacity k's checkpoint j out of its pool; its last use */
static double c_free_checkpoint(Curve *c, int k, int32_t j) {
    CkMap *m = &c->ck[k];
    double last = m->nodes[j].last;
    int32_t i = m->nodes[j].block;
    ck_remove(m, j);
    c_ck_gone(c, i, k);
    c->used[k] -= c->ckpt_pages;
    c_release(c, i);
    return last;
}

/* pool.py: Pool._make_room at capacity k, at block i; 0 when `pages` cannot fit (nothing evicted where the pins
 * say so first). The KV entries older than the oldest checkpoint go in one run along the log (as c_oldest would
 * take them one by one: their ticks grow along it), then that checkpoint, and so on. */
static int c_room(Curve *c, int k, int64_t pages, int64_t pinned, double now, int64_t base, int64_t i) {
    int64_t need = c->used[k] + pages - c->capacity[k];
    if (need <= 0) return 1;
    if (c->used[k] - pinned < need) return 0;
    double oldest_live = c->ttl >= 0 ? now - c->ttl : -INFINITY;
    const uint64_t *bits = c->live_bits;
    const Entry *log = c->log;
    CkMap *m = &c->ck[k];
    int64_t len = c->len, kv = c->kv_pages, end = c->end[k], freed = 0, evicted = 0;
    int ok = 1;
    while (need > 0) {
        int32_t b = m->head;
        int64_t bound = base; /* the newest tick a KV entry may have to go before the oldest checkpoint */
        if (b >= 0 && m->nodes[b].tick <= base) bound = m->nodes[b].tick; else b = -1;
        if (i == UNMARKED && !c->unordered) { /* the run's last entry read, not each: times and ticks grow along it */
            int64_t n = (need + kv - 1) / kv, q = nth_live(bits, end, len, n);
            if (q < len && log[q].tick <= bound) {
                int64_t a = live_from(bits, end, len);
                if (log[a].last >= oldest_live) {
                    evicted += n;
                } else if (log[q].last >= oldest_live) {
                    for (; a <= q; a = live_from(bits, a + 1, len)) evicted += log[a].last >= oldest_live;
                }
                end = q + 1;
                need -= n * kv;
                freed += n * kv;
                break;
            }
        }
        for (int64_t a = live_from(bits, end, len); need > 0; a = live_from(bits, a + 1, len)) {
            end = a;
            if (a >= len) break;
            __builtin_prefetch(&log[a + RUN_AHEAD]); /* past the log's end: a hint, never a fault */
            if (c_passed(c, a, i)) continue;
            const Entry *e = &log[a];
            if (e->tick > bound) break;
            end = a + 1;
            need -= kv;
            freed += kv;
            evicted += e->last >= oldest_live;
        }
        if (need <= 0) break;
        if (b < 0) { /* not reached: the pins were counted */
            ok = 0;
            break;
        }
        need -= c->ckpt_pages;
        evicted += c_free_checkpoint(c, k, b) >= oldest_live;
    }
    c->end[k] = end;
    c->used[k] -= freed;
    c->evictions[k] += evicted;
    __builtin_prefetch(&log[end]); /* the next one to go, for the next put */
    return ok;
}

/* pool.py: Pool._expire of an unlimited pool k, at block i */
static void c_sweep(Curve *c, int k, double now, int64_t base, int64_t i) {
    double oldest_live = now - c->ttl;
    for (;;) {
        int64_t a;
        int32_t b;
        if (!c_oldest(c, k, base, i, &a, &b)) return;
        if ((a >= 0 ? c->log[a].last : c->ck[k].nodes[b].last) >= oldest_live) return;
        if (a >= 0) {
            c->end[k] = a + 1;
            c->used[k] -= c->kv_pages;
        } else {
            c_free_checkpoint(c, k, b);
        }
    }
}

/* capacity k's checkpoints gone: their nodes told (and released where nothing else keeps them) */
static void c_drop_checkpoints(Curve *c, int k) {
    CkMap *m = &c->ck[k];
    for (int32_t j = m->head; j >= 0; j = m->nodes[j].next) {
        int32_t i = m->nodes[j].block;
        c_ck_gone(c, i, k);
        c_release(c, i);
    }
    ckmap_clear(m);
}

/* capacity k off the shared list (replayed on its own): its ends no longer count, its checkpoints gone */
static void c_drop(Curve *c, int k) {
    uint32_t bit = 1u << k;
    c->live &= ~bit;
    c->dropped |= bit;
    c_drop_checkpoints(c, k);
}

/* every capacity's pool emptied (a failed cluster); the seen memory stays */
static void curve_clear(Curve *c) {
    for (int k = 0; k < c->n; k++) {
        c->used[k] = 0;
        c->end[k] = c->len;
        c_drop_checkpoints(c, k);
    }
    c_trail(c);
}

/* cluster.py: _Recent.update's trimming at capacity k */
static void c_forget(Curve *c, int k, double now) {
    for (;;) {
        int64_t p = c->seen_end[k] = c_live(c, c->seen_end[k]);
        if (p >= c->len) return;
        int over = c->seen_limit[k] >= 0 && c->seen_count[k] > c->seen_limit[k];
        if (!over && !(c->seen_window[k] >= 0 && c->log[p].last < now - c->seen_window[k])) return;
        c->seen_end[k] = p + 1;
        c->seen_count[k]--;
    }
}

/* a finite capacity k puts blocks [from, full) of the request in flight (Pool.put, block by block): one it does
 * not hold makes room and adds its pages; where its own pins fill its pool it leaves the curve (c_drop) */
static void c_put(Curve *c, int k, int64_t from, int64_t full, int64_t pinned_ck, double now, int64_t base) {
    const int64_t *pos = c->pos, *fresh = c->fresh, kv = c->kv_pages;
    c_guard(c, k);
    for (int64_t i = from; i < full; i++) {
        if (pos[i] >= c->end[k]) continue; /* held (or the request's already): its touch keeps it */
        if (!c_room(c, k, kv, fresh[i] * kv + pinned_ck, now, base, i)) {
            c_drop(c, k);
            return;
        }
        c->used[k] += kv;
    }
}

/* the unlimited capacity k puts blocks [from, full) of the request in flight: one it does not hold (or finds
 * expired first) sweeps the expired entries out before it, once, and adds its pages; 1 where it swept */
static int c_put_unlimited(Curve *c, int k, int64_t from, int64_t full, double now, int64_t base) {
    const int64_t *pos = c->pos;
    double ttl = c->ttl;
    int swept = 0;
    for (int64_t i = from; i < full; i++) {
        if (pos[i] >= c->end[k] && (i != from || ttl < 0 || !(now - c->nodes[c->row[i]].last > ttl))) continue;
        if (ttl >= 0 && !swept) {
            c_guard(c, k);
            c_sweep(c, k, now, base, i);
            swept = 1;
        }
        if (pos[i] < c->end[k]) c->used[k] += c->kv_pages;
    }
    return swept;
}

/* the furthest end of the capacities still finding and of the seen memories still counting */
static inline int64_t c_top(const Curve *c, uint32_t finding, uint32_t counting) {
    int64_t top = -1;
    EACH_BIT(k, finding) if (c->end[k] > top) top = c->end[k];
    EACH_BIT(k, counting) if (c->seen_end[k] > top) top = c->seen_end[k];
    return top;
}

/* the hit tokens of one request at each capacity in hits (0 at one dropped); -1 when out of memory */
static int curve_serve(Curve *c, Scratch *s, const int64_t *blocks, int64_t length, double now, int64_t *hits) {
    int kind = c->kind;
    for (int k = 0; k < c->n; k++) hits[k] = 0;
    if (kind == NONE) return 0;
    int64_t full = length / HASH_BLOCK, cap = (length - 1) / HASH_BLOCK;
    int64_t step = kind == SHARED ? c->block / HASH_BLOCK : 1;
    if (kind == SHARED) cap = (length - 1) / c->block * c->block / HASH_BLOCK;
    double ttl = c->ttl;
    c->serial++;
    int64_t base = c->tick;
    if (full > c->cap_row) {
        int32_t *grown = realloc(c->row, sizeof(int32_t) * (size_t)full);
        if (!grown) return -1;
        c->row = grown;
        int64_t *pos = realloc(c->pos, sizeof(int64_t) * (size_t)full);
        if (!pos) return -1;
        c->pos = pos;
        int64_t *fresh = realloc(c->fresh, sizeof(int64_t) * (size_t)full);
        if (!fresh) return -1;
        c->fresh = fresh;
        c->cap_row = full;
    }
    int32_t *row = c->row;
    /* each block's slot fetched AHEAD lookups early, and then its node: far more blocks than a cache holds, so
     * each lookup would otherwise wait on memory in turn (and a whole request's fetches at once overflow what the
     * core keeps in flight) */
    Slot *slots = c->index.slots;
    uint64_t mask = c->index.mask;
    for (int64_t i = 0; i < full && i < AHEAD; i++) __builtin_prefetch(&slots[hash_key(blocks[i]) & mask]);
    for (int64_t i = 0; i < full; i++) {
        if (i + AHEAD < full) __builtin_prefetch(&slots[hash_key(blocks[i + AHEAD]) & mask]);
        int32_t idx = index_get(&c->index, blocks[i]);
        if (idx >= 0) prefetch_node(&c->nodes[idx]);
        row[i] = idx;
    }
    for (int64_t i = 0; i < full; i++) {
        int32_t idx = row[i] >= 0 ? row[i] : index_get(&c->index, blocks[i]); /* a block twice: added once */
        if (idx < 0) {
            idx = c_node(c, blocks[i]);
            if (idx < 0) return -1;
        } else {
            c->nodes[idx].serial = c->serial;
        }
        row[i] = idx;
    }
    CNode *nodes = c->nodes; /* no node is added past here: the pointer holds */
    int64_t seen[CURVE_MAX], cached[CURVE_MAX], pinned_ck[CURVE_MAX];
    uint32_t live = c->live, finding = live, counting = kind == K3 ? live : 0, ckany = 0;
    EACH_BIT(k, live) {
        seen[k] = cached[k] = full;
        pinned_ck[k] = 0;
    }
    /* one pass over the request's nodes: where each capacity's finds stop (a block at or past every end of those
     * still finding looked at no further), which capacities keep a checkpoint at one of its blocks, and for the
     * puts below each block's entry and the distinct blocks before it */
    int64_t *pos = c->pos, *fresh = c->fresh, distinct = 0;
    int64_t top = c_top(c, finding, counting);
    for (int64_t i = 0; i < full; i++) {
        CNode *n = &nodes[row[i]];
        int64_t p = n->pos;
        ckany |= n->ck;
        if ((finding | counting) && (p < top || (ttl >= 0 && now - n->last > ttl))) {
            uint32_t lost = ttl >= 0 && now - n->last > ttl ? finding : 0;
            EACH_BIT(k, finding & ~lost) if (p < c->end[k]) lost |= 1u << k;
            EACH_BIT(k, lost) cached[k] = i;
            finding &= ~lost;
            uint32_t unseen = 0;
            EACH_BIT(k, counting) if (p < c->seen_end[k]) unseen |= 1u << k;
            EACH_BIT(k, unseen) seen[k] = i;
            counting &= ~unseen;
            top = c_top(c, finding, counting);
        }
        fresh[i] = distinct;
        if (n->tick > base) { /* again in the request: its entry is the first one's, on the list's new end */
            pos[i] = INT64_MAX;
            continue;
        }
        n->tick = base + 2 * (i + 1); /* as its touch sets it: where it comes again, it is known by it */
        pos[i] = p;
        distinct++;
    }
    EACH_BIT(k, live) { /* the checkpoint each capacity hits */
        int64_t usable = cached[k] < cap ? cached[k] : cap;
        if (kind == IDEAL) {
            hits[k] = usable;
            continue;
        }
        uint32_t bit = 1u << k;
        if (!(ckany & bit)) continue;
        CkMap *m = &c->ck[k];
        for (int64_t at = usable / step * step; at > 0; at -= step) {
            CNode *n = &nodes[row[at - 1]];
            if (!(n->ck & bit)) continue;
            int32_t j = *c_place(c, n->group, (int)k);
            if (ttl >= 0 && now - m->nodes[j].last > ttl) { /* Pool.find: an expired one is freed */
                ck_remove(m, j);
                c_ck_gone(c, row[at - 1], (int)k);
                c->used[k] -= c->ckpt_pages;
                continue;
            }
            ck_touch(m, j, now, base + 2 * cached[k] + 1);
            pinned_ck[k] += c->ckpt_pages;
            hits[k] = at;
            break;
        }
    }
    /* the KV blocks put capacity by capacity (c_put), then touched once for all */
    uint32_t swept = 0;
    c->passed = base + 1; /* block j's tick: base + 2 (j + 1) */
    c->full = full;
    EACH_BIT(k, live) {
        if (c->capacity[k] >= 0) c_put(c, (int)k, cached[k], full, pinned_ck[k], now, base);
        else if (c_put_unlimited(c, (int)k, cached[k], full, now, base)) swept |= 1u << k;
    }
    if (c->marked) c_mark(c, 0);
    c->guard = INT64_MAX;
    if (!c->live) return 0;
    if (kind == K3)
        EACH_BIT(k, c->live) { /* the blocks its seen memory did not hold */
            int64_t seen_end = c->seen_end[k], unseen = 0;
            for (int64_t i = 0; i < full; i++) unseen += pos[i] < seen_end;
            c->seen_count[k] += unseen;
        }
    for (int64_t i = 0; i < full; i++)
        if (c_touch(c, row[i], base + 2 * (i + 1), now) < 0) return -1;
    int64_t tick = base + 2 * (full + 1) + 1, most = 0;
    if (kind != IDEAL) {
        EACH_BIT(k, c->live) {
            uint32_t bit = 1u << k;
            CkMap *m = &c->ck[k];
            int64_t n_kept = kind == SHARED ? kept_checkpoints(s, cap, cap, hits[k], step)
                                            : kept_checkpoints(s, seen[k], cap, hits[k], c->every);
            if (n_kept < 0) return -1;
            if (n_kept > most) most = n_kept;
            for (int64_t j = 0; j < n_kept; j++) {
                int64_t at = s->kept[j];
                if (at > full) continue;
                CNode *n = &nodes[row[at - 1]];
                if (n->ck & bit) {
                    int32_t e = *c_place(c, n->group, (int)k);
                    if (m->nodes[e].tick <= base) pinned_ck[k] += c->ckpt_pages;
                    ck_touch(m, e, now, tick + j);
                    continue;
                }
                if (c->capacity[k] < 0) {
                    if (ttl >= 0 && !(swept & bit)) {
                        c_sweep(c, (int)k, now, base, UNMARKED);
                        swept |= bit;
                    }
                } else if (!c_room(c, (int)k, c->ckpt_pages, distinct * c->kv_pages + pinned_ck[k], now, base, UNMARKED)) {
                    break; /* no room: the pool is full of pinned entries (nothing put, as the pool does) */
                }
                if (!n->ck && (n->group = c_group(c)) < 0) return -1;
                int32_t e = ck_add(m, row[at - 1], now, tick + j);
                if (e < 0) return -1;
                *c_place(c, n->group, (int)k) = e;
                n->ck |= bit;
                c->used[k] += c->ckpt_pages;
                pinned_ck[k] += c->ckpt_pages;
            }
        }
    }
    c->tick = tick + most + 1;
    if (kind == K3) EACH_BIT(k, c->live) c_forget(c, (int)k, now);
    c_trail(c);
    for (int k = 0; k < c->n; k++) hits[k] *= HASH_BLOCK;
    return 0;
}

/* ---- reading a trace line (requests.py: read_trace) ------------------------------------------------------ */

enum { F_TIMESTAMP, F_INPUT_LENGTH, F_OUTPUT_LENGTH, F_HASH_IDS, F_TIME, F_INPUT_TOKENS, F_OUTPUT_TOKENS, F_BLOCKS,
       F_SESSION, F_COUNT };
static const char *FIELD_NAMES[F_COUNT] = {"timestamp", "input_length", "output_length", "hash_ids", "time",
                                           "input_tokens", "output_tokens", "blocks", "session"};

typedef struct {
    int present; /* 1: a number; 2: a list of ints; 3: a string; 4: null; 5: anything else */
    int is_int;
    int64_t i;
    double d;
    const char *str;
    Py_ssize_t str_len;
    int escaped;
} Value;

typedef struct {
    int64_t *v;
    int64_t n, cap;
} Ints;

typedef struct {
    const char *p, *end;
    Value f[F_COUNT];
    Ints lists[2]; /* hash_ids, blocks */
} Line;

static void skip_ws(Line *l) {
    while (l->p < l->end && (*l->p == ' ' || *l->p == '\t' || *l->p == '\n' || *l->p == '\r')) l->p++;
}

/* a JSON string at l->p (past the quote on return); its raw text and whether it had escapes; 0 if not one
 * json.loads accepts (raw control characters, bad escapes) or not UTF-8 */
static int read_string(Line *l, const char **start, Py_ssize_t *len, int *escaped) {
    if (l->p >= l->end || *l->p != '"') return 0;
    const unsigned char *p = (const unsigned char *)++l->p, *end = (const unsigned char *)l->end;
    *start = (const char *)p;
    *escaped = 0;
    while (p < end) {
        unsigned char ch = *p;
        if (ch == '"') {
            *len = (const char *)p - *start;
            l->p = (const char *)p + 1;
            return 1;
        }
        if (ch < 0x20) return 0;
        if (ch == '\\') {
            *escaped = 1;
            if (p + 1 >= end) return 0;
            unsigned char e = p[1];
            if (e == 'u') {
                if (p + 5 >= end) return 0;
                for (int k = 2; k < 6; k++)
                    if (!isxdigit(p[k])) return 0;
                p += 6;
            } else if (strchr("\"\\/bfnrt", e) && e) {
                p += 2;
            } else {
                return 0;
            }
            continue;
        }
        if (ch < 0x80) { p++; continue; }
        /* UTF-8 as Python's decoder takes it: no overlongs, no surrogates, at most U+10FFFF */
        int n;
        uint32_t cp;
        if (ch >= 0xC2 && ch <= 0xDF) { n = 1; cp = ch & 0x1F; }
        else if (ch >= 0xE0 && ch <= 0xEF) { n = 2; cp = ch & 0x0F; }
        else if (ch >= 0xF0 && ch <= 0xF4) { n = 3; cp = ch & 0x07; }
        else return 0;
        if (p + n >= end) return 0;
        for (int k = 1; k <= n; k++) {
            if ((p[k] & 0xC0) != 0x80) return 0;
            cp = (cp << 6) | (p[k] & 0x3F);
        }
        if ((n == 2 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) || (n == 3 && (cp < 0x10000 || cp > 0x10FFFF)))
            return 0;
        p += n + 1;
    }
    return 0;
}

/* a JSON number: an integer literal that fits 64 bits, or any other literal as a double; 0 if not one this core
 * reads exactly */
static int read_number(Line *l, Value *v) {
    const char *s = l->p, *p = s;
    if (p < l->end && *p == '-') p++;
    if (p >= l->end || !(*p >= '0' && *p <= '9')) return 0;
    if (*p == '0') p++;
    else while (p < l->end && *p >= '0' && *p <= '9') p++;
    int is_int = 1;
    if (p < l->end && *p == '.') {
        is_int = 0;
        p++;
        if (p >= l->end || !(*p >= '0' && *p <= '9')) return 0;
        while (p < l->end && *p >= '0' && *p <= '9') p++;
    }
    if (p < l->end && (*p == 'e' || *p == 'E')) {
        is_int = 0;
        p++;
        if (p < l->end && (*p == '+' || *p == '-')) p++;
        if (p >= l->end || !(*p >= '0' && *p <= '9')) return 0;
        while (p < l->end && *p >= '0' && *p <= '9') p++;
    }
    v->present = 1;
    v->is_int = is_int;
    if (is_int) {
        uint64_t x = 0, most = *s == '-' ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
        const char *q = s + (*s == '-');
        if (p - q <= 18) { /* at most 18 digits: below 10^18, in range (no check, no division a digit) */
            for (; q < p; q++) x = x * 10 + (uint64_t)(*q - '0');
        } else {
            for (; q < p; q++) {
                uint64_t digit = (uint64_t)(*q - '0');
                if (x > (most - digit) / 10) return 0; /* past 64 bits: the Python engine takes it */
                x = x * 10 + digit;
            }
        }
        v->i = *s == '-' ? (int64_t)(0 - x) : (int64_t)x;
        v->d = (double)v->i;
    } else {
        char buf[64];
        if (p - s >= (Py_ssize_t)sizeof(buf)) return 0;
        memcpy(buf, s, (size_t)(p - s));
        buf[p - s] = 0;
        v->d = strtod(buf, NULL);
        if (!isfinite(v->d)) return 0;
    }
    l->p = p;
    return 1;
}

static int skip_value(Line *l, int depth);

static int skip_literal(Line *l, const char *word) {
    size_t n = strlen(word);
    if ((size_t)(l->end - l->p) < n || memcmp(l->p, word, n)) return 0;
    l->p += n;
    return 1;
}

static int skip_value(Line *l, int depth) {
    if (depth > 200) return 0;
    skip_ws(l);
    if (l->p >= l->end) return 0;
    char ch = *l->p;
    if (ch == '"') {
        const char *s;
        Py_ssize_t n;
        int e;
        return read_string(l, &s, &n, &e);
    }
    if (ch == '{' || ch == '[') {
        char close = ch == '{' ? '}' : ']';
        l->p++;
        skip_ws(l);
        if (l->p < l->end && *l->p == close) { l->p++; return 1; }
        for (;;) {
            if (ch == '{') {
                const char *s;
                Py_ssize_t n;
                int e;
                skip_ws(l);
                if (!read_string(l, &s, &n, &e)) return 0;
                skip_ws(l);
                if (l->p >= l->end || *l->p != ':') return 0;
                l->p++;
            }
            if (!skip_value(l, depth + 1)) return 0;
            skip_ws(l);
            if (l->p >= l->end) return 0;
            if (*l->p == ',') { l->p++; continue; }
            if (*l->p == close) { l->p++; return 1; }
            return 0;
        }
    }
    if (ch == 't') return skip_literal(l, "true");
    if (ch == 'f') return skip_literal(l, "false");
    if (ch == 'n') return skip_literal(l, "null");
    Value v;
    return read_number(l, &v);
}

static int ints_push(Ints *a, int64_t x) {
    if (a->n == a->cap) {
        int64_t size = a->cap ? a->cap * 2 : 256;
        int64_t *grown = realloc(a->v, sizeof(int64_t) * (size_t)size);
        if (!grown) return -1;
        a->v = grown;
        a->cap = size;
    }
    a->v[a->n++] = x;
    return 0;
}

/* the value of a field kcost reads; 0 to decline */
static int read_field(Line *l, int field) {
    Value *v = &l->f[field];
    memset(v, 0, sizeof(*v));
    skip_ws(l);
    if (l->p >= l->end) return 0;
    char ch = *l->p;
    if (field == F_HASH_IDS || field == F_BLOCKS) {
        Ints *a = &l->lists[field == F_BLOCKS];
        a->n = 0;
        if (ch == '[') {
            const char *mark = l->p;
            l->p++;
            skip_ws(l);
            int ok = 1;
            if (l->p < l->end && *l->p == ']') {
                l->p++;
            } else {
                for (;;) {
                    Value x;
                    skip_ws(l);
                    if (!read_number(l, &x) || !x.is_int) { ok = 0; break; }
                    if (ints_push(a, x.i) < 0) return -1;
                    skip_ws(l);
                    if (l->p < l->end && *l->p == ',') { l->p++; continue; }
                    if (l->p < l->end && *l->p == ']') { l->p++; break; }
                    ok = 0;
                    break;
                }
            }
            if (ok) { v->present = 2; return 1; }
            l->p = mark; /* not a list of 64-bit ints: something the Python reader names, or takes */
        }
        v->present = 5;
        return skip_value(l, 0) ? 0 : 0;
    }
    if (ch == '"') {
        v->present = 3;
        return read_string(l, &v->str, &v->str_len, &v->escaped);
    }
    if (ch == 'n') {
        v->present = 4;
        return skip_literal(l, "null");
    }
    if (ch == '-' || (ch >= '0' && ch <= '9')) return read_number(l, v);
    return 0; /* true, false, a list or an object where a number or a string belongs: the Python reader names it */
}

/* one line as a request; 1: a request, 0: decline, -1: out of memory */
static int parse_line(Line *l) {
    for (int i = 0; i < F_COUNT; i++) l->f[i].present = 0;
    skip_ws(l);
    if (l->p >= l->end || *l->p != '{') return 0;
    l->p++;
    skip_ws(l);
    if (l->p < l->end && *l->p == '}') {
        l->p++;
    } else {
        for (;;) {
            const char *key;
            Py_ssize_t n;
            int escaped;
            skip_ws(l);
            if (!read_string(l, &key, &n, &escaped) || escaped) return 0;
            skip_ws(l);
            if (l->p >= l->end || *l->p != ':') return 0;
            l->p++;
            int field = -1;
            for (int i = 0; i < F_COUNT; i++)
                if ((size_t)n == strlen(FIELD_NAMES[i]) && !memcmp(key, FIELD_NAMES[i], (size_t)n)) field = i;
            if (field >= 0) {
                int got = read_field(l, field);
                if (got <= 0) return got;
            } else if (!skip_value(l, 0)) {
                return 0;
            }
            skip_ws(l);
            if (l->p >= l->end) return 0;
            if (*l->p == ',') { l->p++; continue; }
            if (*l->p == '}') { l->p++; break; }
            return 0;
        }
    }
    skip_ws(l);
    return l->p == l->end;
}

/* ---- the replay ------------------------------------------------------------------------------------------ */

#define MAX_THREADS 16

typedef struct {
    double time;
    int64_t length, output, first;
} Pending;

typedef struct { /* requests read, to be served together */
    Pending *pending;
    int64_t n_pending, cap_pending;
    Ints blocks;
} Batch;

struct Replay;

typedef struct {
    struct Replay *rp;
    const Batch *batch;
    int t, failed;
} Worker;

typedef struct Replay {
    Run *runs;
    Py_ssize_t n_runs;
    char *only; /* per cluster: simulate it; NULL: all */
    PyObject *primary, *fallback;
    Scratch scratch[MAX_THREADS];
    Line line;
    int clusters;
    int threads; /* > 0: requests in batches, served on this many threads while the next is read (batch_add) */
    Batch batch[2];
    int filling;      /* the batch being read into; the other one is being served where `serving` */
    int serving;
    Worker workers[MAX_THREADS];
    pthread_t ids[MAX_THREADS];
    int started[MAX_THREADS];
} Replay;

static void run_free(Run *r) {
    if (r->curves) {
        for (int c = 0; c < r->clusters; c++) curve_free(&r->curves[c]);
        free(r->curves);
    }
    if (r->cache) {
        for (int c = 0; c < r->clusters; c++) {
            map_free(&r->cache[c].pool.map);
            map_free(&r->cache[c].seen);
        }
    }
    if (r->queues)
        for (int c = 0; c < r->clusters; c++) prefill_free(&r->queues[c]);
    if (r->budgeted)
        for (int c = 0; c < r->clusters; c++) prefill_free(&r->budgeted[c]);
    free(r->cache);
    free(r->tally);
    free(r->queues);
    free(r->budgeted);
    free(r->fail_cluster);
    free(r->fail_start);
    free(r->fail_end);
    free(r->fail_cleared);
}

/* a whole number or a float from the attribute `name` of an options object (None: -1) */
static int get_i64(PyObject *o, const char *name, int64_t *out) {
    PyObject *v = PyObject_GetAttrString(o, name);
    if (!v) return -1;
    *out = v == Py_None ? -1 : PyLong_AsLongLong(v);
    Py_DECREF(v);
    return (*out == -1 && PyErr_Occurred()) ? -1 : 0;
}

static int get_f64(PyObject *o, const char *name, double *out) {
    PyObject *v = PyObject_GetAttrString(o, name);
    if (!v) return -1;
    *out = v == Py_None ? -1.0 : PyFloat_AsDouble(v);
    Py_DECREF(v);
    return (*out == -1.0 && PyErr_Occurred()) ? -1 : 0;
}

/* a failure's fields, from a tuple (cluster, start, end) */
static int item_i64(PyObject *t, Py_ssize_t i, int64_t *out) {
    PyObject *v = PyTuple_GetItem(t, i);
    if (!v) return -1;
    *out = PyLong_AsLongLong(v);
    return (*out == -1 && PyErr_Occurred()) ? -1 : 0;
}

static int item_f64(PyObject *t, Py_ssize_t i, double *out) {
    PyObject *v = PyTuple_GetItem(t, i);
    if (!v) return -1;
    *out = PyFloat_AsDouble(v);
    return (*out == -1.0 && PyErr_Occurred()) ? -1 : 0;
}

/* a run from its options (kcost.fleet.core.CoreRun), read by their names */
static int run_init(Run *r, PyObject *t) {
    memset(r, 0, sizeof(*r));
    int64_t kind, clusters, successor, times;
    PyObject *failures;
    int64_t lead;
    if (get_i64(t, "lead", &lead)) return -1;
    r->lead = (int)lead;
    if (get_i64(t, "kind", &kind) || get_i64(t, "block", &r->block) || get_i64(t, "every", &r->every) ||
        get_f64(t, "ttl", &r->ttl) || get_i64(t, "capacity_pages", &r->capacity) ||
        get_i64(t, "kv_pages", &r->kv_pages) || get_i64(t, "checkpoint_pages", &r->ckpt_pages) ||
        get_i64(t, "seen_limit", &r->seen_limit) || get_f64(t, "seen_window", &r->seen_window) ||
        get_i64(t, "clusters", &clusters) || get_i64(t, "successor", &successor) || get_i64(t, "times", &times) ||
        get_f64(t, "prefill_rate", &r->prefill_rate) || get_i64(t, "long_from", &r->long_from) ||
        get_f64(t, "long_share", &r->long_share))
        return -1;
    if (r->every < 0) r->every = 0;
    r->kind = (int)kind;
    r->clusters = (int)clusters;
    r->successor = (int)successor;
    r->times = (int)times;
    failures = PyObject_GetAttrString(t, "failures");
    if (!failures) return -1;
    Py_DECREF(failures); /* held by the options object, which outlives the run's setup */
    if (!PyTuple_Check(failures)) {
        PyErr_SetString(PyExc_TypeError, "failures: a tuple");
        return -1;
    }
    r->n_failures = PyTuple_GET_SIZE(failures);
    size_t nf = (size_t)r->n_failures + 1;
    r->fail_cluster = calloc(nf, sizeof(int64_t));
    r->fail_start = calloc(nf, sizeof(double));
    r->fail_end = calloc(nf, sizeof(double));
    r->fail_cleared = calloc(nf, 1);
    r->cache = calloc((size_t)clusters, sizeof(Cluster));
    r->tally = calloc((size_t)clusters, sizeof(*r->tally));
    if (!r->fail_cluster || !r->fail_start || !r->fail_end || !r->fail_cleared || !r->cache || !r->tally) {
        PyErr_NoMemory();
        return -1;
    }
    for (int64_t i = 0; i < r->n_failures; i++) {
        PyObject *f = PyTuple_GetItem(failures, (Py_ssize_t)i);
        if (!f || item_i64(f, 0, &r->fail_cluster[i]) || item_f64(f, 1, &r->fail_start[i]) ||
            item_f64(f, 2, &r->fail_end[i]))
            return -1;
    }
    for (int c = 0; c < r->clusters; c++) {
        Cluster *cl = &r->cache[c];
        if (map_init(&cl->pool.map) < 0 || map_init(&cl->seen) < 0) {
            PyErr_NoMemory();
            return -1;
        }
        cl->pool.capacity = r->capacity;
        cl->pool.ttl = r->ttl;
        cl->pool.sweep = r->capacity < 0 && r->ttl >= 0;
        cl->seen_limit = r->seen_limit;
        cl->seen_window = r->seen_window;
    }
    if (r->times) {
        r->queues = calloc((size_t)clusters, sizeof(Prefill));
        if (r->long_share >= 0) r->budgeted = calloc((size_t)clusters, sizeof(Prefill));
        if (!r->queues || (r->long_share >= 0 && !r->budgeted)) {
            PyErr_NoMemory();
            return -1;
        }
        for (int c = 0; c < r->clusters; c++) {
            r->queues[c].rate = r->prefill_rate;
            r->queues[c].share = -1.0;
            if (r->budgeted) {
                r->budgeted[c].rate = r->prefill_rate;
                r->budgeted[c].share = r->long_share;
            }
        }
    }
    return 0;
}

/* the session key of the request in `l` (routing.py: session_key) */
static PyObject *session_key(Line *l, const Ints *blocks, int64_t length) {
    Value *s = &l->f[F_SESSION];
    if (s->present == 3) {
        if (!s->escaped) return PyUnicode_DecodeUTF8(s->str, s->str_len, "strict");
        /* escapes: json.loads of the literal, quotes and all */
        PyObject *json = PyImport_ImportModule("json");
        if (!json) return NULL;
        PyObject *out = PyObject_CallMethod(json, "loads", "s#", s->str - 1, s->str_len + 2);
        Py_DECREF(json);
        return out;
    }
    int64_t full = length / HASH_BLOCK, at = (full < AFFINITY_BLOCKS ? full : AFFINITY_BLOCKS) - 1;
    if (at < 0) at = 0;
    return PyUnicode_FromFormat("%lld", (long long)blocks->v[at]);
}

/* serve one request in one run, on `cluster`; -1 when out of memory (no Python here: it runs without the GIL) */
static int record(Run *r, int cluster, int redirected, int64_t length, int64_t output, double now, int64_t hit) {
    int64_t *t = r->tally[cluster];
    t[0] += 1;
    t[1] += length;
    t[2] += hit;
    t[3] += output;
    if (redirected) {
        t[5] += 1;
        t[6] += length - hit;
    }
    if (r->times) {
        int cls = length >= r->long_from ? LONG : SHORT;
        if (prefill_arrive(&r->queues[cluster], now, length - hit, cls) < 0 ||
            (r->budgeted && prefill_arrive(&r->budgeted[cluster], now, length - hit, cls) < 0))
            return -1;
    }
    return 0;
}

/* serve one request in one run (every run of its curve, if it leads one), on `cluster`; -1 when out of memory
 * (no Python here: it runs without the GIL) */
static int serve_one(Replay *rp, Run *r, Scratch *s, int cluster, int redirected, const int64_t *blocks,
                     int64_t length, int64_t output, double now) {
    if (r->curves) {
        int64_t hits[CURVE_MAX];
        Curve *c = &r->curves[cluster];
        if (curve_serve(c, s, blocks, length, now, hits) < 0) return -1;
        for (int k = 0; k < r->n_members; k++)
            if (record(&rp->runs[r->members[k]], cluster, redirected, length, output, now, hits[k]) < 0) return -1;
        return 0;
    }
    int64_t hit = serve(r, &r->cache[cluster], s, blocks, length, now);
    if (hit < 0) return -1;
    return record(r, cluster, redirected, length, output, now, hit);
}

/* serve one request in every run; -1 on a Python error */
static int replay_request(Replay *rp, const Ints *blocks, int64_t length, int64_t output, double now) {
    PyObject *key = NULL;
    long primary = 0;
    if (rp->clusters > 1) {
        key = session_key(&rp->line, blocks, length);
        if (!key) return -1;
        PyObject *got = PyObject_CallOneArg(rp->primary, key);
        if (!got) { Py_DECREF(key); return -1; }
        primary = PyLong_AsLong(got);
        Py_DECREF(got);
        if (primary == -1 && PyErr_Occurred()) { Py_DECREF(key); return -1; }
    }
    for (Py_ssize_t k = 0; k < rp->n_runs; k++) {
        Run *r = &rp->runs[k];
        if (r->lead >= 0 && r->lead != k) continue; /* served with the first run of its curve */
        for (int64_t i = 0; i < r->n_failures; i++) {
            if (!r->fail_cleared[i] && now >= r->fail_start[i]) {
                r->fail_cleared[i] = 1;
                if (r->curves) {
                    curve_clear(&r->curves[r->fail_cluster[i]]);
                    continue;
                }
                Pool *p = &r->cache[r->fail_cluster[i]].pool;
                map_clear(&p->map);
                p->used = 0;
            }
        }
        long cluster = primary;
        int redirected = 0;
        if (key && r->n_failures) {
            int down = 0;
            for (int64_t i = 0; i < r->n_failures; i++)
                if (r->fail_start[i] <= now && now < r->fail_end[i] && r->fail_cluster[i] == primary) down = 1;
            if (down) {
                PyObject *list = PyList_New(0);
                if (!list) { Py_DECREF(key); return -1; }
                for (int64_t i = 0; i < r->n_failures; i++) {
                    if (r->fail_start[i] <= now && now < r->fail_end[i]) {
                        PyObject *c = PyLong_FromLongLong(r->fail_cluster[i]);
                        if (!c || PyList_Append(list, c) < 0) { Py_XDECREF(c); Py_DECREF(list); Py_DECREF(key); return -1; }
                        Py_DECREF(c);
                    }
                }
                PyObject *down_set = PyFrozenSet_New(list); /* the router's `down`: a frozenset */
                Py_DECREF(list);
                if (!down_set) { Py_DECREF(key); return -1; }
                PyObject *got = PyObject_CallFunction(rp->fallback, "OsO", key, r->successor ? "successor" : "consistent",
                                                      down_set);
                Py_DECREF(down_set);
                if (!got) { Py_DECREF(key); return -1; }
                cluster = PyLong_AsLong(got);
                Py_DECREF(got);
                if (cluster == -1 && PyErr_Occurred()) { Py_DECREF(key); return -1; }
                redirected = 1;
            }
        }
        if (cluster < 0 || cluster >= r->clusters) {
            Py_XDECREF(key);
            PyErr_SetString(PyExc_ValueError, "a cluster out of range");
            return -1;
        }
        if (rp->only && !rp->only[cluster]) continue;
        if (serve_one(rp, r, &rp->scratch[0], (int)cluster, redirected, blocks->v, length, output, now) < 0) {
            Py_XDECREF(key);
            PyErr_NoMemory();
            return -1;
        }
    }
    Py_XDECREF(key);
    return 0;
}

/* ---- requests in batches, runs on threads ------------------------------------------------------------------
 *
 * With one cluster (no routing, no failover: nothing that calls back into Python) on a machine of several
 * processors, requests are read into a batch, and while the next batch is read each serving thread serves the
 * whole batch in some of the runs (a run alone or a curve's pass each, in turn); every run still sees the
 * requests in order, so the tallies are those of one thread. */

#define BATCH_REQUESTS 4096
#define BATCH_BLOCKS (1 << 20)

static void *batch_work(void *arg) {
    Worker *w = arg;
    Replay *rp = w->rp;
    const Batch *b = w->batch;
    Py_ssize_t server = 0; /* the runs alone and the curves in turn, the thread's each `threads`-th */
    for (Py_ssize_t k = 0; k < rp->n_runs; k++) {
        Run *r = &rp->runs[k];
        if (r->lead >= 0 && r->lead != k) continue; /* served with the first run of its curve */
        if (server++ % rp->threads != w->t) continue;
        if (rp->only && !rp->only[0]) continue;
        for (int64_t i = 0; i < b->n_pending; i++) {
            const Pending *q = &b->pending[i];
            if (serve_one(rp, r, &rp->scratch[w->t], 0, 0, b->blocks.v + q->first, q->length, q->output,
                          q->time) < 0) {
                w->failed = 1;
                return NULL;
            }
        }
    }
    return NULL;
}

/* the batch being served, served to its end (its threads joined); -1 where one ran out of memory */
static int batch_wait(Replay *rp) {
    if (!rp->serving) return 0;
    int failed = 0;
    Py_BEGIN_ALLOW_THREADS
    for (int t = 0; t < rp->threads; t++) {
        if (rp->started[t]) pthread_join(rp->ids[t], NULL);
        else batch_work(&rp->workers[t]); /* no thread to be had: this one does it */
        failed |= rp->workers[t].failed;
    }
    Py_END_ALLOW_THREADS
    rp->serving = 0;
    return failed ? -1 : 0;
}

/* the batch read so far handed to the serving threads once they are done with the one before, and the next read
 * into the other; -1 on error */
static int batch_flush(Replay *rp) {
    if (batch_wait(rp) < 0) {
        PyErr_NoMemory();
        return -1;
    }
    Batch *b = &rp->batch[rp->filling];
    if (!b->n_pending) return 0;
    for (int t = 0; t < rp->threads; t++) {
        rp->workers[t] = (Worker){.rp = rp, .batch = b, .t = t, .failed = 0};
        rp->started[t] = pthread_create(&rp->ids[t], NULL, batch_work, &rp->workers[t]) == 0;
    }
    rp->serving = 1;
    rp->filling ^= 1;
    rp->batch[rp->filling].n_pending = 0;
    rp->batch[rp->filling].blocks.n = 0;
    return 0;
}

/* a request into the batch, which is handed on when full; -1 on error */
static int batch_add(Replay *rp, const Ints *blocks, int64_t length, int64_t output, double now) {
    Batch *b = &rp->batch[rp->filling];
    if (b->n_pending == b->cap_pending) {
        int64_t size = b->cap_pending ? b->cap_pending * 2 : 256;
        Pending *grown = realloc(b->pending, sizeof(Pending) * (size_t)size);
        if (!grown) { PyErr_NoMemory(); return -1; }
        b->pending = grown;
        b->cap_pending = size;
    }
    Pending *q = &b->pending[b->n_pending++];
    q->time = now;
    q->length = length;
    q->output = output;
    q->first = b->blocks.n;
    for (int64_t i = 0; i < blocks->n; i++)
        if (ints_push(&b->blocks, blocks->v[i]) < 0) { PyErr_NoMemory(); return -1; }
    if (b->n_pending >= BATCH_REQUESTS || b->blocks.n >= BATCH_BLOCKS) return batch_flush(rp);
    return 0;
}

/* one line: 1 served, 0 decline, -1 error; `last` the time of the request before */
static int replay_line(Replay *rp, const char *start, const char *end, double *last) {
    Line *l = &rp->line;
    l->p = start;
    l->end = end;
    int got = parse_line(l);
    if (got <= 0) {
        if (got < 0) PyErr_NoMemory();
        return got;
    }
    int moon = l->f[F_HASH_IDS].present != 0;
    int base = moon ? F_TIMESTAMP : F_TIME;
    Value *stamp = &l->f[base], *size = &l->f[base + 1], *out = &l->f[base + 2], *list = &l->f[base + 3];
    if (stamp->present != 1 || size->present != 1 || out->present != 1) return 0;
    if (stamp->d < 0 || !size->is_int || !out->is_int || size->i < 1 || out->i < 0) return 0;
    if (size->i > MAX_TOKENS || out->i > MAX_TOKENS) return 0; /* past kcost's bound: the Python reader names it */
    if (list->present != 2) return 0;
    const Ints *blocks = &l->lists[moon ? 0 : 1];
    if (blocks->n != (size->i + HASH_BLOCK - 1) / HASH_BLOCK) return 0;
    int s = l->f[F_SESSION].present;
    if (s != 0 && s != 3 && s != 4) return 0;
    double seconds = stamp->d * (moon ? 0.001 : 1.0);
    if (!isfinite(seconds) || seconds < *last) return 0;
    *last = seconds;
    if (rp->threads) return batch_add(rp, blocks, size->i, out->i, seconds) < 0 ? -1 : 1;
    return replay_request(rp, blocks, size->i, out->i, seconds) < 0 ? -1 : 1;
}

static PyObject *tally_export(Run *r, int c) {
    int64_t *t = r->tally[c];
    PyObject *times[4] = {NULL, NULL, NULL, NULL};
    for (int k = 0; k < 4; k++) {
        Prefill *q = k < 2 ? (r->queues ? &r->queues[c] : NULL) : (r->budgeted ? &r->budgeted[c] : NULL);
        if (!q) {
            times[k] = Py_None;
            Py_INCREF(Py_None);
            continue;
        }
        times[k] = times_export(&q->done[k % 2]);
        if (!times[k]) {
            for (int j = 0; j < k; j++) Py_DECREF(times[j]);
            return NULL;
        }
    }
    return Py_BuildValue("(LLLLLLLNNNN)", (long long)t[0], (long long)t[1], (long long)t[2], (long long)t[3],
                         (long long)r->cache[c].pool.evictions, (long long)t[5], (long long)t[6], times[0], times[1],
                         times[2], times[3]);
}

/* each curve's runs gathered under its first, and one Curve a cluster; -1 on error */
static int curves_init(Replay *rp) {
    for (Py_ssize_t k = 0; k < rp->n_runs; k++) {
        Run *r = &rp->runs[k];
        if (r->lead < 0) continue;
        if (r->lead > k || r->lead >= rp->n_runs || rp->runs[r->lead].lead != r->lead) {
            PyErr_SetString(PyExc_ValueError, "a curve is led by its first run");
            return -1;
        }
        Run *lead = &rp->runs[r->lead];
        if (lead->n_members == CURVE_MAX) {
            PyErr_SetString(PyExc_ValueError, "a curve of more than 32 capacities");
            return -1;
        }
        lead->members[lead->n_members++] = (int)k;
    }
    for (Py_ssize_t k = 0; k < rp->n_runs; k++) {
        Run *r = &rp->runs[k];
        if (r->lead != k) continue;
        r->curves = calloc((size_t)r->clusters, sizeof(Curve));
        if (!r->curves) { PyErr_NoMemory(); return -1; }
        for (int cl = 0; cl < r->clusters; cl++) {
            Curve *c = &r->curves[cl];
            c->n = r->n_members;
            c->kind = r->kind;
            c->block = r->block;
            c->every = r->every;
            c->ttl = r->ttl;
            c->kv_pages = r->kv_pages;
            c->ckpt_pages = r->ckpt_pages;
            c->free_head = c->free_group = -1;
            c->guard = INT64_MAX;
            c->cap_log = 1024;
            c->log = malloc(sizeof(Entry) * (size_t)c->cap_log);
            c->live_bits = calloc((size_t)(c->cap_log / 64), sizeof(uint64_t));
            c->own_bits = calloc((size_t)(c->cap_log / 64), sizeof(uint64_t));
            if (!c->log || !c->live_bits || !c->own_bits) { PyErr_NoMemory(); return -1; }
            c->live = c->n == 32 ? 0xFFFFFFFFu : (1u << c->n) - 1;
            if (index_init(&c->index) < 0) { PyErr_NoMemory(); return -1; }
            for (int m = 0; m < c->n; m++) {
                Run *member = &rp->runs[r->members[m]];
                c->capacity[m] = member->capacity;
                c->seen_limit[m] = member->seen_limit;
                c->seen_window[m] = member->seen_window;
                ckmap_init(&c->ck[m]);
            }
        }
    }
    return 0;
}

/* the options object's attribute `name`, a new reference: None where it is None */
static PyObject *attr(PyObject *o, const char *name) { return PyObject_GetAttrString(o, name); }

static PyObject *py_replay(PyObject *self, PyObject *options) {
    (void)self;
    PyObject *runs = NULL, *only = NULL, *router = NULL, *progress = NULL, *path_obj = NULL;
    int64_t chunk_size, threads, hash_block, affinity, max_tokens, max_line, exact_times;
    if (get_i64(options, "chunk", &chunk_size) || get_i64(options, "threads", &threads) ||
        get_i64(options, "hash_block", &hash_block) || get_i64(options, "affinity_blocks", &affinity) ||
        get_i64(options, "max_tokens", &max_tokens) || get_i64(options, "max_line_bytes", &max_line) ||
        get_i64(options, "exact_times", &exact_times) || get_f64(options, "log_gamma", &LOG_GAMMA))
        return NULL;
    EXACT_TIMES = (long long)exact_times;
    path_obj = attr(options, "path");
    runs = attr(options, "runs");
    only = attr(options, "only");
    router = attr(options, "router");
    progress = attr(options, "progress");
    /* each held by the options object for the whole call: borrowed from here on */
    Py_XDECREF(path_obj);
    Py_XDECREF(runs);
    Py_XDECREF(only);
    Py_XDECREF(router);
    Py_XDECREF(progress);
    if (!path_obj || !runs || !only || !router || !progress) return NULL;
    const char *path = PyUnicode_AsUTF8(path_obj);
    if (!path) return NULL;
    if (!PyTuple_Check(runs)) {
        PyErr_SetString(PyExc_TypeError, "runs: a tuple");
        return NULL;
    }
    PyObject *primary = NULL, *fallback = NULL; /* the router's, held until the call ends */
    if (router != Py_None) {
        primary = attr(router, "primary");
        fallback = primary ? attr(router, "fallback") : NULL;
        if (!primary || !fallback) {
            Py_XDECREF(primary);
            return NULL;
        }
    }
    MAX_TOKENS = max_tokens;
    if (hash_block < 1 || affinity < 1 || max_line < 1 || chunk_size < 1) {
        PyErr_SetString(PyExc_ValueError, "hash_block, affinity, max_line and chunk must be at least 1");
        Py_XDECREF(primary);
        Py_XDECREF(fallback);
        return NULL;
    }
    HASH_BLOCK = hash_block;
    AFFINITY_BLOCKS = affinity;
    Replay rp;
    memset(&rp, 0, sizeof(rp));
    rp.n_runs = PyTuple_GET_SIZE(runs);
    rp.primary = primary;
    rp.fallback = fallback;
    PyObject *result = NULL;
    FILE *fh = NULL;
    char *buf = NULL;
    rp.runs = calloc((size_t)rp.n_runs + 1, sizeof(Run));
    if (!rp.runs) {
        Py_XDECREF(primary);
        Py_XDECREF(fallback);
        return PyErr_NoMemory();
    }
    Py_ssize_t inited = 0;
    for (; inited < rp.n_runs; inited++)
        if (run_init(&rp.runs[inited], PyTuple_GET_ITEM(runs, inited)) < 0) { inited++; goto done; }
    if (curves_init(&rp) < 0) goto done;
    rp.clusters = rp.n_runs ? rp.runs[0].clusters : 1;
    Py_ssize_t servers = 0; /* the runs alone and the curves */
    for (Py_ssize_t k = 0; k < rp.n_runs; k++) servers += rp.runs[k].lead < 0 || rp.runs[k].lead == k;
    if (rp.clusters == 1 && servers > 0 && threads > 1) { /* a thread reads while the others serve */
        rp.threads = threads < servers ? (int)threads : (int)servers;
        if (rp.threads > MAX_THREADS) rp.threads = MAX_THREADS;
    }
    if (only != Py_None) {
        rp.only = calloc((size_t)rp.clusters, 1);
        if (!rp.only) { PyErr_NoMemory(); goto done; }
        PyObject *it = PyObject_GetIter(only), *item;
        if (!it) goto done;
        while ((item = PyIter_Next(it))) {
            long c = PyLong_AsLong(item);
            Py_DECREF(item);
            if (c >= 0 && c < rp.clusters) rp.only[c] = 1;
        }
        Py_DECREF(it);
        if (PyErr_Occurred()) goto done;
    }
    fh = fopen(path, "rb");
    if (!fh) { result = Py_None; Py_INCREF(result); goto done; } /* the Python reader says why */
    Py_ssize_t cap = chunk_size * 2, have = 0;
    buf = malloc((size_t)cap);
    if (!buf) { PyErr_NoMemory(); goto done; }
    long long read_total = 0;
    double last = 0.0;
    int any = 0, eof = 0;
    while (!eof || have) {
        if (!eof) {
            if (cap - have < chunk_size) {
                cap *= 2;
                char *grown = realloc(buf, (size_t)cap);
                if (!grown) { PyErr_NoMemory(); goto done; }
                buf = grown;
            }
            size_t n = fread(buf + have, 1, (size_t)chunk_size, fh);
            if (n == 0) {
                if (ferror(fh)) { result = Py_None; Py_INCREF(result); goto done; }
                eof = 1;
            }
            have += (Py_ssize_t)n;
            read_total += (long long)n;
        }
        Py_ssize_t pos = 0;
        for (;;) {
            char *nl = memchr(buf + pos, '\n', (size_t)(have - pos));
            if (!nl && !eof) break;
            char *line_end = nl ? nl : buf + have;
            const char *start = buf + pos, *end = line_end;
            if (end > start && end[-1] == '\r') end--; /* \r\n: one line break, as Python's universal newlines */
            if (end - start > max_line) { result = Py_None; Py_INCREF(result); goto done; } /* blank or not */
            if (memchr(start, '\r', (size_t)(end - start))) { result = Py_None; Py_INCREF(result); goto done; }
            const char *q = start;
            while (q < end && (*q == ' ' || *q == '\t')) q++;
            if (q < end) { /* a blank line is skipped */
                int got = replay_line(&rp, start, end, &last);
                if (got < 0) goto done;
                if (got == 0) { result = Py_None; Py_INCREF(result); goto done; }
                any = 1;
            }
            pos = (Py_ssize_t)(line_end - buf) + (nl ? 1 : 0);
            if (!nl) break;
        }
        memmove(buf, buf + pos, (size_t)(have - pos));
        have -= pos;
        /* the start of a line longer than the longest the reader takes (one more byte: a \r of a \r\n to
         * come): declined before more of it is read, so the buffer never holds much more than one line */
        if (have > max_line + 1) { result = Py_None; Py_INCREF(result); goto done; }
        if (eof && have == 0) break;
        if (progress != Py_None) {
            PyObject *r = PyObject_CallFunction(progress, "L", read_total);
            if (!r) goto done;
            Py_DECREF(r);
        }
        if (PyErr_CheckSignals() < 0) goto done;
    }
    if (!any) { result = Py_None; Py_INCREF(result); goto done; }
    if (batch_flush(&rp) < 0) goto done;
    if (batch_wait(&rp) < 0) { PyErr_NoMemory(); goto done; }
    for (Py_ssize_t k = 0; k < rp.n_runs; k++) {
        Run *r = &rp.runs[k];
        if (r->queues)
            for (int c = 0; c < r->clusters; c++)
                if (prefill_advance(&r->queues[c], INFINITY) < 0 ||
                    (r->budgeted && prefill_advance(&r->budgeted[c], INFINITY) < 0)) {
                    PyErr_NoMemory();
                    goto done;
                }
    }
    result = PyList_New(rp.n_runs);
    if (!result) goto done;
    for (Py_ssize_t k = 0; k < rp.n_runs; k++) {
        Run *r = &rp.runs[k];
        if (r->curves) /* each capacity's evictions where its tally takes them */
            for (int c = 0; c < r->clusters; c++)
                for (int m = 0; m < r->n_members; m++)
                    rp.runs[r->members[m]].cache[c].pool.evictions = r->curves[c].evictions[m];
    }
    for (Py_ssize_t k = 0; k < rp.n_runs; k++) {
        Run *r = &rp.runs[k];
        if (r->lead >= 0) {
            Run *lead = &rp.runs[r->lead];
            int m = 0, gone = 0;
            while (lead->members[m] != k) m++;
            for (int c = 0; c < r->clusters; c++) gone |= (lead->curves[c].dropped >> m) & 1;
            if (gone) { /* the curve could not keep it: None, and the caller replays it on its own */
                Py_INCREF(Py_None);
                PyList_SET_ITEM(result, k, Py_None);
                continue;
            }
        }
        PyObject *tallies = PyList_New(r->clusters);
        if (!tallies) { Py_CLEAR(result); goto done; }
        PyList_SET_ITEM(result, k, tallies);
        for (int c = 0; c < r->clusters; c++) {
            PyObject *t = tally_export(r, c);
            if (!t) { Py_CLEAR(result); goto done; }
            PyList_SET_ITEM(tallies, c, t);
        }
    }
done:
    (void)batch_wait(&rp); /* a batch still served where the core declined or failed on the way: joined */
    if (fh) fclose(fh);
    free(buf);
    for (Py_ssize_t k = 0; k < inited; k++) run_free(&rp.runs[k]);
    free(rp.runs);
    free(rp.only);
    for (int t = 0; t < MAX_THREADS; t++) {
        free(rp.scratch[t].pinned);
        free(rp.scratch[t].kept);
        free(rp.scratch[t].victims);
    }
    for (int b = 0; b < 2; b++) {
        free(rp.batch[b].pending);
        free(rp.batch[b].blocks.v);
    }
    free(rp.line.lists[0].v);
    free(rp.line.lists[1].v);
    Py_XDECREF(primary);
    Py_XDECREF(fallback);
    return result;
}

static PyMethodDef METHODS[] = {
    {"replay", py_replay, METH_O,
     "replay(options: kcost.fleet.core.CoreOptions) -> per run, per cluster tallies; None to decline (the Python"
     " engine then replays the trace)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef MODULE = {PyModuleDef_HEAD_INIT, "_core", "kcost's compiled trace replay core.", -1, METHODS,
                                    NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__core(void) { return PyModule_Create(&MODULE); }
