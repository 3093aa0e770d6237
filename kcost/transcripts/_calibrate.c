/* A calibration pass over a session's shapes, compiled (`kcost.transcripts.calibrate.Pass`, walked again rule for
 * rule): every part of every prompt sized from the logged usage, its positions laid out, and each call's simulator
 * request made, its `Request` and `Span`s set in their slots as `kcost._records` sets a record's. The Python `Pass`
 * is the fallback where this module is not built, and the oracle the tests hold it to. Where a session holds what
 * this pass does not take (a count past 62 bits, a ratio past 64, a part numbered below 0, a part past the prompt
 * it names), `walk` returns None and the Python pass walks it, raising what it raises.
 */
#include "../_compiled.h"

#define DECLINE (-2) /* not this pass's to walk: no error set, the Python pass walks the session */
#define BIG ((int64_t)1 << 62)

/* ---- the classes made here, set in their slots ----------------------------------------------------------- */

enum { R_TIME, R_KEEP, R_APPEND, R_TURN_START, R_OUTPUT, R_RESENT, R_BILLED, R_OUTPUT_TOKENS, R_FIELDS };
enum { S_SEG, S_START, S_LENGTH, S_FIELDS };
static const char *const REQUEST_NAMES[] = {"time",          "keep",   "append", "turn_start", "output",
                                      "resent_output", "billed", "output_tokens"};
static const char *const SPAN_NAMES[] = {"seg", "start", "length"};

static KcLayout REQUEST, SPAN;
static int READY;

static PyObject *span(int64_t seg, int64_t start, int64_t length) {
    PyObject *v[S_FIELDS] = {PyLong_FromLongLong(seg), PyLong_FromLongLong(start), PyLong_FromLongLong(length)};
    return kc_instance(&SPAN, v, S_FIELDS);
}

/* ---- a list of whole numbers ----------------------------------------------------------------------------- */

static int contains(const KcInts *a, int64_t x) {
    for (Py_ssize_t i = 0; i < a->n; i++)
        if (a->v[i] == x) return 1;
    return 0;
}

/* a whole number this pass takes: from -2^62 to 2^62; DECLINE past it (or not an int) */
static int whole(PyObject *o, int64_t *out) {
    if (!PyLong_Check(o)) return DECLINE;
    int overflow;
    long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (v == -1 && PyErr_Occurred()) return -1;
    if (overflow || v > BIG || v < -BIG) return DECLINE;
    *out = v;
    return 0;
}

/* ---- the pass ---------------------------------------------------------------------------------------------- */

typedef struct {
    const int64_t *est;
    Py_ssize_t n_est;
    int64_t num, den; /* the ratio */
    PyObject *given; /* the prefix sizes the first pass found; NULL: this is the first pass */
    int64_t *size; /* each part's tokens, where `has` */
    uint8_t *has;
    uint32_t *mark, stamp; /* a part met in the prompt at hand: mark[part] == stamp */
    Py_ssize_t cap;
    KcInts segs, ends, unknown, scratch;
    PyObject *prefix_seg, *prefix_sizes, *unsized, *events, *changes, *requests, *changed;
    int64_t fresh, sent, calls, logged, estimated, shared_tokens, shared_estimates, scaled_parts, previous_parts;
    int exact, prefix_apart;
} Pass;

/* room for part `seg`'s size; DECLINE for a part numbered below 0 or past 2^31 */
static int room_for(Pass *p, int64_t seg) {
    if (seg < 0 || seg >= ((int64_t)1 << 31)) return DECLINE;
    if (seg < p->cap) return 0;
    Py_ssize_t cap = p->cap ? p->cap : 1024;
    while (cap <= seg) cap *= 2;
    int64_t *size = PyMem_Realloc(p->size, sizeof(int64_t) * (size_t)cap);
    if (!size) {
        PyErr_NoMemory();
        return -1;
    }
    p->size = size;
    uint8_t *has = PyMem_Realloc(p->has, (size_t)cap);
    if (!has) {
        PyErr_NoMemory();
        return -1;
    }
    memset(has + p->cap, 0, (size_t)(cap - p->cap));
    p->has = has;
    uint32_t *mark = PyMem_Realloc(p->mark, sizeof(uint32_t) * (size_t)cap);
    if (!mark) {
        PyErr_NoMemory();
        return -1;
    }
    memset(mark + p->cap, 0, sizeof(uint32_t) * (size_t)(cap - p->cap));
    p->mark = mark;
    p->cap = cap;
    return 0;
}

static inline int sized(const Pass *p, int64_t seg) { return seg < p->cap && p->has[seg]; }

static int set_size(Pass *p, int64_t seg, int64_t tokens) {
    int r = room_for(p, seg);
    if (r < 0) return r;
    if (tokens > BIG || tokens < -BIG) return DECLINE;
    p->size[seg] = tokens;
    p->has[seg] = 1;
    return 0;
}

static inline int64_t estimate(const Pass *p, int64_t seg) { return seg < p->n_est ? p->est[seg] : 0; }

/* Pass.scaled: a part's estimate at the ratio, half rounded up (and counted where it is not 0) */
static int64_t scaled(Pass *p, int64_t seg) {
    int64_t e = estimate(p, seg);
    p->scaled_parts += e != 0;
    if (p->num == p->den) return e;
    /* int(e * r + 1/2): e >= 0 and r > 0, so int() is the floor */
    return (int64_t)(((__int128)2 * e * p->num + p->den) / ((__int128)2 * p->den));
}

static int estimate_all(Pass *p, const KcInts *parts) {
    for (Py_ssize_t i = 0; i < parts->n; i++) {
        int r = set_size(p, parts->v[i], scaled(p, parts->v[i]));
        if (r < 0) return r;
    }
    return 0;
}

/* Pass._lay; DECLINE where it would index a prompt of no parts */
static int lay(Pass *p, int64_t keep_asked, PyObject *new_parts, PyObject *name, int64_t *keep) {
    p->previous_parts = p->segs.n;
    int64_t k = keep_asked < p->segs.n ? keep_asked : p->segs.n;
    if (k < 0) return DECLINE;
    p->segs.n = k;
    if (p->ends.n > k) p->ends.n = k;
    Py_ssize_t n = PyTuple_GET_SIZE(new_parts);
    for (Py_ssize_t i = 0; i < n; i++) {
        int64_t seg;
        int r = whole(PyTuple_GET_ITEM(new_parts, i), &seg);
        if (r < 0) return r;
        if ((r = room_for(p, seg)) < 0) return r;
        if (kc_push(&p->segs, seg) < 0) return -1;
    }
    if (name != Py_None) {
        if (!p->segs.n) return DECLINE; /* Python's IndexError */
        PyObject *held = PyDict_GetItemWithError(p->prefix_seg, name);
        if (!held) {
            if (PyErr_Occurred()) return -1;
            PyObject *seg = PyLong_FromLongLong(p->segs.v[0]);
            if (!seg || PyDict_SetItem(p->prefix_seg, name, seg) < 0) {
                Py_XDECREF(seg);
                return -1;
            }
            Py_DECREF(seg);
        } else {
            int64_t seg;
            int r = whole(held, &seg);
            if (r < 0) return r;
            p->segs.v[0] = seg;
        }
    }
    *keep = k;
    return 0;
}

/* Pass._known_prefix: 1 known, 0 not */
static int known_prefix(Pass *p, PyObject *name) {
    if (name == Py_None) return 1;
    int64_t part = p->segs.v[0];
    if (sized(p, part)) return 1;
    if (!p->given) return 0;
    PyObject *found = PyDict_GetItemWithError(p->given, name);
    if (!found && PyErr_Occurred()) return -1;
    int64_t tokens = 0;
    if (found) {
        int r = whole(found, &tokens);
        if (r < 0) return r;
    }
    int r = set_size(p, part, tokens);
    if (r < 0) return r;
    if (found) {
        PyObject *n = PyLong_FromLongLong(tokens), *had = n ? PyDict_SetDefault(p->prefix_sizes, name, n) : NULL;
        Py_XDECREF(n);
        if (!had) return -1;
    } else if (PyList_Append(p->unsized, name) < 0) {
        return -1;
    }
    return 1;
}

/* Pass._new_parts, into p->unknown */
static int find_new(Pass *p, int64_t keep, PyObject *name) {
    int truthy = name != Py_None && PyObject_IsTrue(name);
    KcInts *u = &p->unknown;
    u->n = 0;
    int64_t from = keep > truthy ? keep : truthy;
    int recurs = 0;
    uint32_t stamp = ++p->stamp;
    for (Py_ssize_t i = from; i < p->segs.n; i++) {
        int64_t s = p->segs.v[i]; /* each had room_for in lay */
        if (sized(p, s)) continue;
        recurs |= p->mark[s] == stamp;
        p->mark[s] = stamp;
        if (kc_push(u, s) < 0) return -1;
    }
    if (!recurs) return 0;
    /* a part that recurs within the prompt: its scaled estimate at once; the rest once each, in order */
    KcInts *distinct = &p->scratch;
    distinct->n = 0;
    for (Py_ssize_t i = 0; i < u->n; i++)
        if (!contains(distinct, u->v[i]) && kc_push(distinct, u->v[i]) < 0) return -1;
    for (Py_ssize_t i = 0; i < distinct->n; i++) {
        int64_t s = distinct->v[i], times = 0;
        for (Py_ssize_t j = 0; j < u->n; j++) times += u->v[j] == s;
        if (times > 1) {
            int r = set_size(p, s, scaled(p, s));
            if (r < 0) return r;
        }
    }
    u->n = 0;
    for (Py_ssize_t i = 0; i < distinct->n; i++)
        if (!sized(p, distinct->v[i]) && kc_push(u, distinct->v[i]) < 0) return -1;
    return 0;
}

/* Pass._fixed: the tokens of the prompt already sized, the prefix left out */
static int64_t fixed(Pass *p, int64_t keep, PyObject *name) {
    int64_t base = keep ? p->ends.v[keep - 1] : 0;
    int64_t start = name != Py_None ? 1 : 0;
    for (Py_ssize_t i = keep > start ? keep : start; i < p->segs.n; i++)
        if (sized(p, p->segs.v[i])) base += p->size[p->segs.v[i]];
    return base;
}

typedef struct {
    int64_t rest;
    Py_ssize_t at;
} Rest;

static int by_rest(const void *a, const void *b) { /* the largest remainder first, then in order */
    const Rest *x = a, *y = b;
    if (x->rest != y->rest) return x->rest > y->rest ? -1 : 1;
    return x->at < y->at ? -1 : x->at > y->at;
}

/* Pass._share of the parts in p->unknown (`reply`: -1 for none; reply_tokens: -1 for none) */
static int share(Pass *p, int64_t room, int64_t reply, int64_t reply_tokens, int clean) {
    KcInts *u = &p->unknown;
    if (room < 0) return estimate_all(p, u);
    if (reply >= 0 && reply_tokens >= 0 && contains(u, reply)) {
        int64_t others = u->n - 1;
        if (room - others >= 0) {
            int64_t given = reply_tokens < room - others ? reply_tokens : room - others;
            int r = set_size(p, reply, given);
            if (r < 0) return r;
            room -= given;
            Py_ssize_t k = 0;
            for (Py_ssize_t i = 0; i < u->n; i++)
                if (u->v[i] != reply) u->v[k++] = u->v[i];
            u->n = k;
        }
    }
    if (!u->n) return 0;
    __int128 total = 0;
    for (Py_ssize_t i = 0; i < u->n; i++) {
        int64_t e = estimate(p, u->v[i]);
        total += e > 1 ? e : 1;
    }
    if (total > BIG) return DECLINE;
    Rest *rests = PyMem_Malloc(sizeof(Rest) * (size_t)u->n);
    if (!rests) {
        PyErr_NoMemory();
        return -1;
    }
    __int128 given = 0;
    int r = 0;
    for (Py_ssize_t i = 0; i < u->n && r == 0; i++) {
        int64_t e = estimate(p, u->v[i]), w = e > 1 ? e : 1;
        __int128 part = (__int128)room * w / total; /* room >= 0, w >= 1: floor */
        rests[i] = (Rest){(int64_t)((__int128)room * w % total), i};
        given += part;
        r = set_size(p, u->v[i], (int64_t)part);
    }
    if (r == 0) {
        qsort(rests, (size_t)u->n, sizeof(Rest), by_rest);
        for (__int128 k = 0; k < (__int128)room - given && k < u->n; k++) p->size[u->v[rests[k].at]] += 1;
        if (clean) {
            p->shared_tokens += room;
            for (Py_ssize_t i = 0; i < u->n; i++) p->shared_estimates += estimate(p, u->v[i]);
            if (p->shared_tokens > BIG || p->shared_estimates > BIG) r = DECLINE;
        }
    }
    PyMem_Free(rests);
    return r;
}

/* Pass._size_prefix */
static int size_prefix(Pass *p, PyObject *name, int64_t room) {
    KcInts *u = &p->unknown;
    int64_t before = p->scaled_parts, prefix = room;
    for (Py_ssize_t i = 0; i < u->n; i++) prefix -= scaled(p, u->v[i]);
    int r;
    if (prefix >= 0) {
        if ((r = estimate_all(p, u)) < 0) return r;
        p->scaled_parts = before;
        for (Py_ssize_t i = 0; i < u->n; i++)
            if (u->v[i] >= p->n_est || p->est[u->v[i]] < 1) p->prefix_apart = 1;
    } else {
        prefix = 0;
        if ((r = share(p, room, -1, -1, 0)) < 0) return r;
        p->prefix_apart = 1;
    }
    if ((r = set_size(p, p->segs.v[0], prefix)) < 0) return r;
    PyObject *n = PyLong_FromLongLong(prefix), *had = n ? PyDict_SetDefault(p->prefix_sizes, name, n) : NULL;
    Py_XDECREF(n);
    return had ? 0 : -1;
}

/* Pass._fill; *resized: the change where the prefix is found to have changed (a new reference), else NULL */
static int fill(Pass *p, int64_t keep, PyObject *name, int64_t reply_at, int64_t reply_tokens, int64_t length,
                PyObject **resized) {
    KcInts *segs = &p->segs;
    int64_t prefix = 0;
    if (name != Py_None) {
        if (!sized(p, segs->v[0])) return DECLINE; /* Python's KeyError */
        prefix = p->size[segs->v[0]];
    }
    int64_t room = length - prefix - fixed(p, keep, name);
    if (p->unknown.n && room >= 0) {
        int64_t reply = reply_at >= 0 && reply_at < segs->n ? segs->v[reply_at] : -1;
        int clean = p->exact && keep >= p->previous_parts - 1;
        return share(p, room, reply, reply_tokens, clean);
    }
    if (p->unknown.n) return estimate_all(p, &p->unknown);
    if (room && name != Py_None && prefix + room >= 0 && segs->n - keep <= 1) {
        int64_t seg = p->fresh++;
        int r = set_size(p, seg, prefix + room);
        if (r < 0) return r;
        segs->v[0] = seg;
        PyObject *n = PyLong_FromLongLong(seg);
        if (!n || PyDict_SetItem(p->prefix_seg, name, n) < 0) {
            Py_XDECREF(n);
            return -1;
        }
        Py_DECREF(n);
        *resized = PyObject_CallFunction(p->changed, "OL", name, (long long)room);
        return *resized ? 0 : -1;
    }
    return 0;
}

/* Pass._positions: *prefix and *rendered; DECLINE at a part not sized (Python's KeyError) */
static int positions(Pass *p, PyObject *name, int64_t *prefix, int64_t *rendered) {
    KcInts *segs = &p->segs, *ends = &p->ends;
    for (Py_ssize_t i = ends->n; i < segs->n; i++) {
        int64_t at = i ? ends->v[i - 1] : 0;
        if (!(i == 0 && name != Py_None)) {
            if (!sized(p, segs->v[i])) return DECLINE;
            at += p->size[segs->v[i]];
        }
        if (at > BIG || at < -BIG) return DECLINE;
        if (kc_push(ends, at) < 0) return -1;
    }
    *prefix = name != Py_None && segs->n && sized(p, segs->v[0]) ? p->size[segs->v[0]] : 0;
    *rendered = *prefix + (ends->n ? ends->v[ends->n - 1] : 0);
    return 0;
}

/* ends[i] as Python indexes a list (from the end where i < 0); DECLINE past it */
static int end_at(const Pass *p, int64_t i, int64_t *out) {
    if (i < 0) i += p->ends.n;
    if (i < 0 || i >= p->ends.n) return DECLINE;
    *out = p->ends.v[i];
    return 0;
}

static int event(Pass *p, const char *kind, int64_t index, PyObject *line, int64_t logged, int64_t rendered) {
    PyObject *e = Py_BuildValue("(sLOLL)", kind, (long long)index, line, (long long)logged, (long long)rendered);
    if (!e) return -1;
    int r = PyList_Append(p->events, e);
    Py_DECREF(e);
    return r;
}

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

/* Pass._request: the call's request, appended to p->requests */
static int request(Pass *p, PyObject *time, int64_t keep, int64_t prefix, int64_t rendered, int64_t length,
                   int64_t turn_part, int64_t reply_at, int64_t output_seg, PyObject *usage_output) {
    int r;
    int64_t keep_tokens = 0, at;
    if (keep) {
        if ((r = end_at(p, keep - 1, &at)) < 0) return r;
        keep_tokens = min64(min64(prefix + at, p->sent), length);
    }
    int64_t stop = min64(rendered, length), q = keep_tokens;
    KcInts *segs = &p->segs, *ends = &p->ends;
    Py_ssize_t i = 0, lo_i = 0, hi_i = ends->n; /* bisect_right(ends, q - prefix) */
    while (lo_i < hi_i) {
        Py_ssize_t mid = (lo_i + hi_i) / 2;
        if (q - prefix < ends->v[mid]) hi_i = mid; else lo_i = mid + 1;
    }
    i = lo_i;
    PyObject *append = PyList_New(0);
    if (!append) return -1;
    r = -1;
    for (; q < stop && i < segs->n; i++) {
        int64_t lo = i ? prefix + ends->v[i - 1] : 0, hi = min64(prefix + ends->v[i], stop);
        if (hi > q) {
            PyObject *s = span(segs->v[i], q - lo, hi - q);
            if (!s || PyList_Append(append, s) < 0) {
                Py_XDECREF(s);
                goto done;
            }
            Py_DECREF(s);
            q = hi;
        }
    }
    if (length > rendered) { /* tokens the log counts and the rebuilt prompt does not hold */
        PyObject *s = span(p->fresh++, 0, length - rendered);
        if (!s || PyList_Append(append, s) < 0) {
            Py_XDECREF(s);
            goto done;
        }
        Py_DECREF(s);
    }
    int64_t turn = 0;
    if (turn_part) {
        if ((r = end_at(p, turn_part - 1, &at)) < 0) goto done;
        turn = prefix + at;
    }
    turn = min64(turn, length);
    PyObject *resent = Py_NewRef(Py_None);
    if (reply_at != -1 && reply_at < segs->n) { /* -1: none (a reply is never numbered below 0: declined) */
        int64_t lo, hi;
        if ((r = end_at(p, reply_at - 1, &lo)) < 0 || (r = end_at(p, reply_at, &hi)) < 0) {
            Py_DECREF(resent);
            goto done;
        }
        lo += prefix;
        hi = min64(prefix + hi, length);
        if (lo < hi) {
            Py_DECREF(resent);
            resent = Py_BuildValue("(LL)", (long long)lo, (long long)hi);
            if (!resent) goto done;
        }
    }
    PyObject *output;
    if (output_seg >= 0) {
        int64_t size;
        if (sized(p, output_seg)) {
            size = p->size[output_seg];
        } else if (usage_output) {
            if ((r = whole(usage_output, &size)) < 0) {
                Py_DECREF(resent);
                goto done;
            }
        } else {
            size = scaled(p, output_seg);
        }
        output = size ? Py_BuildValue("(N)", span(output_seg, 0, size)) : PyTuple_New(0);
    } else {
        output = PyTuple_New(0);
    }
    p->sent = length;
    PyObject *v[R_FIELDS] = {Py_NewRef(time),
                             PyLong_FromLongLong(keep_tokens),
                             PyList_AsTuple(append),
                             PyLong_FromLongLong(turn),
                             output,
                             resent,
                             Py_NewRef(Py_True),
                             usage_output ? Py_NewRef(usage_output) : Py_NewRef(Py_None)};
    PyObject *req = kc_instance(&REQUEST, v, R_FIELDS);
    r = req && PyList_Append(p->requests, req) == 0 ? 0 : -1;
    Py_XDECREF(req);
done:
    Py_DECREF(append);
    return r;
}

static PyObject *S_KEEP, *S_NEW, *S_TURN, *S_REPLY, *S_REPLY_TOKENS, *S_OUTPUT, *S_USAGE, *S_TIME, *S_PREFIX,
    *S_CHANGE, *S_LINE, *S_PROMPT;

/* an optional whole number (-1 for None); DECLINE below 0 */
static int optional(PyObject *o, int64_t *out) {
    if (o == Py_None) {
        *out = -1;
        return 0;
    }
    int r = whole(o, out);
    return r < 0 ? r : *out < 0 ? DECLINE : 0;
}

/* Pass.step of one shape (the last pass's: its change and request kept) */
static int step(Pass *p, PyObject *sh) {
    PyObject *f[12] = {NULL};
    PyObject **names[] = {&S_KEEP, &S_NEW, &S_TURN, &S_REPLY, &S_REPLY_TOKENS, &S_OUTPUT, &S_USAGE, &S_TIME,
                          &S_PREFIX, &S_CHANGE, &S_LINE};
    int r = -1;
    for (int i = 0; i < 11; i++)
        if (!(f[i] = PyObject_GetAttr(sh, *names[i]))) goto done;
    PyObject *new_parts = f[1], *usage = f[6], *time = f[7], *name = f[8], *change = f[9], *line = f[10];
    int64_t keep_asked, turn_part, reply_at, reply_tokens, output_seg, length = 0;
    if ((r = whole(f[0], &keep_asked)) < 0 || (r = whole(f[2], &turn_part)) < 0 ||
        (r = optional(f[3], &reply_at)) < 0 || (r = optional(f[4], &reply_tokens)) < 0 ||
        (r = optional(f[5], &output_seg)) < 0)
        goto done;
    r = DECLINE;
    if (!PyTuple_Check(new_parts) || (name != Py_None && !PyUnicode_Check(name)) || turn_part < 0) goto done;
    PyObject *usage_output = NULL;
    if (usage != Py_None) {
        if (!(f[11] = PyObject_GetAttr(usage, S_PROMPT)) || !(usage_output = PyObject_GetAttr(usage, S_OUTPUT))) {
            r = -1;
            goto done;
        }
        Py_DECREF(usage_output); /* the usage holds it */
        int64_t out;
        if ((r = whole(f[11], &length)) < 0 || (r = whole(usage_output, &out)) < 0) goto done;
    }
    int64_t index = p->calls++, keep;
    if ((r = lay(p, keep_asked, new_parts, name, &keep)) < 0) goto done;
    int known = known_prefix(p, name);
    if (known < 0) {
        r = known;
        goto done;
    }
    if ((r = find_new(p, keep, name)) < 0) goto done;
    PyObject *resized = NULL;
    if (usage == Py_None) {
        p->estimated++;
        p->prefix_apart |= !known;
        if ((r = estimate_all(p, &p->unknown)) < 0) goto done;
    } else {
        p->logged++;
        if (name != Py_None && !known) { /* the first logged call that carries this prefix */
            int64_t reply = reply_at >= 0 && reply_at < p->segs.n ? p->segs.v[reply_at] : -1;
            p->prefix_apart |= reply_tokens >= 0 && reply >= 0 && contains(&p->unknown, reply);
            if ((r = size_prefix(p, name, length - fixed(p, keep, name))) < 0) goto done;
        } else {
            if ((r = fill(p, keep, name, reply_at, reply_tokens, length, &resized)) < 0) goto done;
            if (resized) keep = 0;
        }
    }
    int64_t prefix, rendered;
    if ((r = positions(p, name, &prefix, &rendered)) < 0) {
        Py_XDECREF(resized);
        goto done;
    }
    p->exact = usage != Py_None && length == rendered;
    if (usage == Py_None) {
        length = rendered;
    } else if (length != rendered && (r = event(p, "contradiction", index, line, length, rendered)) < 0) {
        Py_XDECREF(resized);
        goto done;
    }
    r = PyList_Append(p->changes, resized ? resized : change);
    Py_XDECREF(resized);
    if (r < 0) goto done;
    if (length < 1 && (r = event(p, "zero", index, Py_None, 0, 0)) < 0) goto done;
    r = request(p, time, keep, prefix, rendered, length > 1 ? length : 1, turn_part, reply_at, output_seg,
                usage_output);
done:
    for (int i = 0; i < 12; i++) Py_XDECREF(f[i]);
    return r;
}

static void pass_free(Pass *p) {
    PyMem_Free(p->size);
    PyMem_Free(p->has);
    PyMem_Free(p->mark);
    PyMem_Free(p->segs.v);
    PyMem_Free(p->ends.v);
    PyMem_Free(p->unknown.v);
    PyMem_Free(p->scratch.v);
    Py_XDECREF(p->prefix_seg);
    Py_XDECREF(p->prefix_sizes);
    Py_XDECREF(p->unsized);
    Py_XDECREF(p->events);
    Py_XDECREF(p->changes);
    Py_XDECREF(p->requests);
}

/* walk(shapes, estimates, numerator, denominator, given, changed) -> (requests, changes, calls, logged,
 * estimated, events, prefix_sizes, unsized, shared_tokens, shared_estimates, scaled_parts, prefix_apart), or
 * None where the Python pass is to walk the session */
static PyObject *py_walk(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *shapes, *estimates, *num, *den, *given, *changed;
    if (!PyArg_ParseTuple(args, "O!O!OOOO", &PyList_Type, &shapes, &PyList_Type, &estimates, &num, &den, &given,
                          &changed))
        return NULL;
    if (!READY) {
        PyErr_SetString(PyExc_RuntimeError, "setup() first");
        return NULL;
    }
    Pass p;
    memset(&p, 0, sizeof p);
    int r = whole(num, &p.num);
    if (r == 0) r = whole(den, &p.den);
    if (r < 0 && r != DECLINE) return NULL;
    if (r == DECLINE || p.num < 1 || p.den < 1 || p.num > ((int64_t)1 << 40) * p.den ||
        p.den > ((int64_t)1 << 40) * p.num || (given != Py_None && !PyDict_Check(given)))
        Py_RETURN_NONE;
    p.given = given == Py_None ? NULL : given;
    p.changed = changed;
    Py_ssize_t n_est = PyList_GET_SIZE(estimates);
    int64_t *est = PyMem_Malloc(sizeof(int64_t) * (size_t)(n_est ? n_est : 1));
    if (!est) return PyErr_NoMemory();
    PyObject *out = NULL;
    r = 0;
    for (Py_ssize_t i = 0; i < n_est && r == 0; i++) {
        r = whole(PyList_GET_ITEM(estimates, i), &est[i]);
        if (r == 0 && est[i] < 0) r = DECLINE;
    }
    p.est = est;
    p.n_est = n_est;
    p.fresh = n_est;
    if (r == 0 && (!(p.prefix_seg = PyDict_New()) || !(p.prefix_sizes = PyDict_New()) ||
                   !(p.unsized = PyList_New(0)) || !(p.events = PyList_New(0)) || !(p.changes = PyList_New(0)) ||
                   !(p.requests = PyList_New(0))))
        r = -1;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(shapes) && r == 0; i++) r = step(&p, PyList_GET_ITEM(shapes, i));
    if (r == DECLINE) {
        out = Py_NewRef(Py_None);
    } else if (r == 0) {
        out = Py_BuildValue("(OOLLLOOOLLLO)", p.requests, p.changes, (long long)p.calls, (long long)p.logged,
                            (long long)p.estimated, p.events, p.prefix_sizes, p.unsized, (long long)p.shared_tokens,
                            (long long)p.shared_estimates, (long long)p.scaled_parts,
                            p.prefix_apart ? Py_True : Py_False);
    }
    PyMem_Free(est);
    pass_free(&p);
    return out;
}

static PyObject *py_setup(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *request, *request_fields, *span_type, *span_fields;
    if (!PyArg_ParseTuple(args, "OOOO", &request, &request_fields, &span_type, &span_fields)) return NULL;
    if (kc_layout(&REQUEST, request, request_fields, REQUEST_NAMES, R_FIELDS) < 0 ||
        kc_layout(&SPAN, span_type, span_fields, SPAN_NAMES, S_FIELDS) < 0)
        return NULL;
    READY = 1;
    Py_RETURN_NONE;
}

static PyMethodDef METHODS[] = {
    {"walk", py_walk, METH_VARARGS,
     "walk(shapes, estimates, numerator, denominator, given, changed) -> one pass's requests and what it found, or "
     "None"},
    {"setup", py_setup, METH_VARARGS, "setup(Request, its fields, Span, its fields)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef MODULE = {PyModuleDef_HEAD_INIT, "_calibrate", "A calibration pass, compiled.", -1, METHODS,
                                    NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__calibrate(void) {
    const KcName names[] = {{&S_KEEP, "keep"},     {&S_NEW, "new"},       {&S_TURN, "turn"},     {&S_REPLY, "reply"},
                            {&S_REPLY_TOKENS, "reply_tokens"}, {&S_OUTPUT, "output"}, {&S_USAGE, "usage"},
                            {&S_TIME, "time"},     {&S_PREFIX, "prefix"}, {&S_CHANGE, "change"}, {&S_LINE, "line"},
                            {&S_PROMPT, "prompt"}};
    if (kc_intern(names, sizeof names / sizeof names[0]) < 0) return NULL;
    return PyModule_Create(&MODULE);
}
