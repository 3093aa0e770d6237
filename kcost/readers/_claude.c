/* The compiled scan of a Claude Code log read alone: `kcost.readers.claude_code._Log.read`, written again rule for
 * rule, over the log's bytes. Where prompts are rebuilt, it keeps the chain of parents as `_Chain` does (lines
 * put after their parents, branches cut and rejoined) and makes each line's messages with the reader's own
 * `_user` and `_merge`, given the line's `message.content` as orjson parses it: only that value is parsed.
 *
 * Each line is checked as JSON (the grammar, its strings' UTF-8 and escapes) without being built, and only the
 * fields the reader looks at are taken: the line's `message` (its `role`, `id`, `model`, `usage` and `content`),
 * `uuid`, `parentUuid`, `requestId`, `isSidechain`, `timestamp` and `agentId`, each the last of its name as a
 * parsed object keeps it. The common usage record (four whole counts, maybe `cache_creation`'s hour) and the common
 * time (`2026-02-10T21:11:59.186Z`) are read here; any other is handed to the reader's own functions
 * (`usage_of`, `time_of`). Where this scan meets anything it does not read exactly as the Python reader does
 * (a line orjson might read otherwise, a key written with escapes, a surrogate escape, a record the reader
 * would reject or a lenient read forgive), it declines: `scan` returns None and the caller reads the log in
 * Python, the oracle the tests hold this scan to.
 */
#include "../_compiled.h"
#include <stdint.h>

#define MAX_DEPTH 500      /* deeper: declined (orjson's own limit is 1024) */
#define MAX_DIGITS 300     /* a number with more digits might be infinite as a double: declined */
#define MAX_EXPONENT 2     /* digits of an exponent: at most 99, always finite */
#define WHOLE_DIGITS 18    /* a count with at most these digits is a whole number in 64 bits */

static int64_t MAX_COUNT = 1000000000; /* kcost.transcripts.usage.MAX_COUNT, set by each call */
static PyObject *MAIN;                 /* the main agent's name (claude_code._MAIN), set by each call */
static PyObject *EMPTY;                /* () */

enum { ABSENT = 0, STRING, OBJECT, ARRAY, NUMBER, TRUE_, FALSE_, NULL_ };

typedef struct {
    const char *p; /* a string: its bytes inside the quotes; an object: from its `{`; a number: its text */
    Py_ssize_t n;
    int kind;
    int escaped; /* a string holding an escape */
    int whole;   /* a number written as a whole number >= 0 of at most WHOLE_DIGITS digits */
} Span;

typedef struct {
    const char *p, *end;
    int declined; /* something this scan does not read exactly: the caller reads the log in Python */
} Cursor;

/* ---- checking JSON without building it ------------------------------------------------------------------ */

static void skip_ws(Cursor *c) {
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r')) c->p++;
}

static int hex4(const char *p, unsigned *out) {
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        char h = p[i];
        v <<= 4;
        if (h >= '0' && h <= '9') v |= (unsigned)(h - '0');
        else if (h >= 'a' && h <= 'f') v |= (unsigned)(h - 'a' + 10);
        else if (h >= 'A' && h <= 'F') v |= (unsigned)(h - 'A' + 10);
        else return 0;
    }
    *out = v;
    return 1;
}

/* one UTF-8 sequence starting at a byte >= 0x80, as orjson accepts it (no overlong form, no surrogate, at most
 * U+10FFFF); its length, 0 when invalid */
static int utf8_length(const unsigned char *p, const unsigned char *end) {
    unsigned char b = p[0];
    int n;
    unsigned cp;
    if (b >= 0xC2 && b <= 0xDF) { n = 2; cp = b & 0x1F; }
    else if (b >= 0xE0 && b <= 0xEF) { n = 3; cp = b & 0x0F; }
    else if (b >= 0xF0 && b <= 0xF4) { n = 4; cp = b & 0x07; }
    else return 0;
    if (end - p < n) return 0;
    for (int i = 1; i < n; i++) {
        if ((p[i] & 0xC0) != 0x80) return 0;
        cp = (cp << 6) | (p[i] & 0x3F);
    }
    if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10FFFF))) return 0;
    if (cp >= 0xD800 && cp <= 0xDFFF) return 0;
    return n;
}

/* The bytes from `p` up to the first that ends a plain run of a string (a quote, a backslash, a control character
 * or a byte >= 0x80), or up to the last whole block before `end`: 16 at a time with SSE2, else 8 (the bit tricks
 * of "Bit Twiddling Hacks" for a zero byte and a byte less than n, which never miss one). */
#ifdef __SSE2__
#include <emmintrin.h>
static inline const unsigned char *plain_run(const unsigned char *p, const unsigned char *end) {
    const __m128i quote = _mm_set1_epi8('"'), backslash = _mm_set1_epi8('\\'), space = _mm_set1_epi8(0x20);
    while (end - p >= 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)p);
        __m128i stop = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, backslash)),
                                    _mm_cmplt_epi8(v, space)); /* signed: below 0x20, or 0x80 and up */
        int mask = _mm_movemask_epi8(stop);
        if (mask) return p + __builtin_ctz((unsigned)mask);
        p += 16;
    }
    return p;
}
#else
#define ONES 0x0101010101010101ULL
#define HIGHS 0x8080808080808080ULL
static inline const unsigned char *plain_run(const unsigned char *p, const unsigned char *end) {
    uint64_t v;
    while (end - p >= 8) {
        memcpy(&v, p, 8);
        uint64_t quote = v ^ (ONES * '"'), backslash = v ^ (ONES * '\\');
        uint64_t found = ((quote - ONES) & ~quote) | ((backslash - ONES) & ~backslash) | ((v - ONES * 0x20) & ~v) | v;
        if (found & HIGHS) return p;
        p += 8;
    }
    return p;
}
#endif

/* a string at its opening quote: 1 and its span, 0 when invalid (or declined) */
static int read_string(Cursor *c, Span *s) {
    const unsigned char *p = (const unsigned char *)c->p + 1, *end = (const unsigned char *)c->end;
    s->kind = STRING;
    s->escaped = 0;
    s->p = (const char *)p;
    while (p < end) {
        p = plain_run(p, end);
        if (p >= end) break;
        unsigned char b = *p;
        if (b == '"') {
            s->n = (const char *)p - s->p;
            c->p = (const char *)p + 1;
            return 1;
        }
        if (b < 0x20) return 0;
        if (b == '\\') {
            if (end - p < 2) return 0;
            s->escaped = 1;
            unsigned char e = p[1];
            if (e == 'u') {
                unsigned v;
                if (end - p < 6 || !hex4((const char *)p + 2, &v)) return 0;
                if (v >= 0xD800 && v <= 0xDFFF) { c->declined = 1; return 0; } /* a surrogate: orjson pairs them */
                p += 6;
                continue;
            }
            switch (e) {
            case '"': case '\\': case '/': case 'b': case 'f': case 'n': case 'r': case 't': break;
            default: return 0;
            }
            p += 2;
            continue;
        }
        if (b >= 0x80) {
            int n = utf8_length(p, end);
            if (!n) return 0;
            p += n;
            continue;
        }
        p++;
    }
    return 0;
}

static int read_number(Cursor *c, Span *s) {
    const char *p = c->p, *end = c->end, *start = p;
    int digits = 0, negative = 0, fraction = 0, exponent = 0;
    if (p < end && *p == '-') { negative = 1; p++; }
    if (p >= end || *p < '0' || *p > '9') return 0;
    if (*p == '0') { p++; digits = 1; }
    else while (p < end && *p >= '0' && *p <= '9') { p++; digits++; }
    int whole_digits = digits;
    if (p < end && *p == '.') {
        fraction = 1;
        p++;
        if (p >= end || *p < '0' || *p > '9') return 0;
        while (p < end && *p >= '0' && *p <= '9') { p++; digits++; }
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
        exponent = 1;
        p++;
        if (p < end && (*p == '+' || *p == '-')) p++;
        int e = 0;
        if (p >= end || *p < '0' || *p > '9') return 0;
        while (p < end && *p >= '0' && *p <= '9') { p++; e++; }
        if (e > MAX_EXPONENT) { c->declined = 1; return 0; }
    }
    if (digits > MAX_DIGITS) { c->declined = 1; return 0; }
    s->kind = NUMBER;
    s->p = start;
    s->n = p - start;
    s->whole = !negative && !fraction && !exponent && whole_digits <= WHOLE_DIGITS;
    c->p = p;
    return 1;
}

static int skip_value(Cursor *c, Span *s, int depth);

/* after an item of an object or array: 1 another follows (its comma passed), 0 the `close` that ends them
 * (passed), -1 invalid */
static int next_item(Cursor *c, char close) {
    skip_ws(c);
    if (c->p >= c->end) return -1;
    if (*c->p == ',') {
        c->p++;
        skip_ws(c);
        return 1;
    }
    if (*c->p == close) {
        c->p++;
        return 0;
    }
    return -1;
}

static int literal(Cursor *c, const char *word, int kind, Span *s) {
    size_t n = strlen(word);
    if ((size_t)(c->end - c->p) < n || memcmp(c->p, word, n) != 0) return 0;
    c->p += n;
    s->kind = kind;
    return 1;
}

/* The names taken of an object, where each one's value is kept (the last of its name, as a parsed object keeps
 * it), and the one name (`target`) whose object value is read into for names of its own (`inner`). */
typedef struct Fields {
    const char *const *names;
    int count;
    Span *values;
    int target; /* -1: none */
    const struct Fields *inner;
} Fields;

static void forget(const Fields *f) { /* what a value read into gave: gone when its name comes again */
    for (; f; f = f->inner) memset(f->values, 0, sizeof(Span) * (size_t)f->count);
}

/* whether a name read (no escape in it, so no NUL byte) is `name` */
static int name_is(const Span *key, const char *name) {
    Py_ssize_t i = 0;
    while (i < key->n && name[i] == key->p[i]) i++;
    return i == key->n && name[i] == 0;
}

/* an object at its `{`: 1 read (its names' values in `f`, NULL: none taken), 0 invalid (or declined) */
static int read_fields(Cursor *c, const Fields *f, int depth) {
    if (depth > MAX_DEPTH) { c->declined = 1; return 0; }
    c->p++;
    skip_ws(c);
    if (c->p < c->end && *c->p == '}') { c->p++; return 1; }
    for (;;) {
        if (c->p >= c->end || *c->p != '"') return 0;
        Span key;
        if (!read_string(c, &key)) return 0;
        skip_ws(c);
        if (c->p >= c->end || *c->p != ':') return 0;
        c->p++;
        skip_ws(c);
        int which = -1;
        if (f) {
            if (key.escaped) { c->declined = 1; return 0; } /* a name written with escapes may be one taken */
            for (int i = 0; i < f->count && which < 0; i++)
                if (name_is(&key, f->names[i])) which = i;
        }
        Span value = {0};
        if (which >= 0 && which == f->target) {
            forget(f->inner);
            if (c->p < c->end && *c->p == '{') {
                value.p = c->p;
                if (!read_fields(c, f->inner, depth + 1)) return 0;
                value.kind = OBJECT;
                value.n = c->p - value.p;
            } else if (!skip_value(c, &value, depth + 1)) {
                return 0;
            }
        } else if (!skip_value(c, &value, depth + 1)) {
            return 0;
        }
        if (which >= 0) f->values[which] = value;
        int next = next_item(c, '}');
        if (next <= 0) return next == 0;
    }
}

static int skip_value(Cursor *c, Span *s, int depth) {
    if (c->p >= c->end) return 0;
    switch (*c->p) {
    case '"':
        return read_string(c, s);
    case '{': {
        const char *start = c->p;
        if (!read_fields(c, NULL, depth)) return 0;
        s->kind = OBJECT;
        s->p = start;
        s->n = c->p - start;
        return 1;
    }
    case '[': {
        if (depth > MAX_DEPTH) { c->declined = 1; return 0; }
        const char *start = c->p;
        c->p++;
        skip_ws(c);
        if (c->p < c->end && *c->p == ']') {
            c->p++;
        } else {
            for (;;) {
                Span item;
                if (!skip_value(c, &item, depth + 1)) return 0;
                int next = next_item(c, ']');
                if (next < 0) return 0;
                if (next == 0) break;
            }
        }
        s->kind = ARRAY;
        s->p = start;
        s->n = c->p - start;
        return 1;
    }
    case 't':
        return literal(c, "true", TRUE_, s);
    case 'f':
        return literal(c, "false", FALSE_, s);
    case 'n':
        return literal(c, "null", NULL_, s);
    default:
        return read_number(c, s);
    }
}

/* ---- the fields of a line ------------------------------------------------------------------------------ */

enum { T_MESSAGE, T_UUID, T_PARENT, T_REQUEST, T_SIDECHAIN, T_TIMESTAMP, T_AGENT, T_COUNT };
static const char *const TOP[T_COUNT] = {"message", "uuid", "parentUuid", "requestId", "isSidechain", "timestamp",
                                         "agentId"};
enum { M_ROLE, M_ID, M_MODEL, M_USAGE, M_CONTENT, M_COUNT };
static const char *const MESSAGE[M_COUNT] = {"role", "id", "model", "usage", "content"};
enum { U_INPUT, U_WRITTEN, U_CACHED, U_OUTPUT, U_CREATION, U_COUNT };
static const char *const USAGE[U_COUNT] = {"input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens",
                                           "output_tokens", "cache_creation"};
static const char *const CREATION[1] = {"ephemeral_1h_input_tokens"};

typedef struct {
    Span top[T_COUNT], message[M_COUNT], usage[U_COUNT], hour;
} Line;

/* a line: 1 read, 0 not valid JSON or declined (c->declined), -1 not an object (the reader rejects it) */
static int read_line(Cursor *c, Line *l) {
    memset(l, 0, sizeof(*l));
    const Fields creation = {CREATION, 1, &l->hour, -1, NULL};
    const Fields usage = {USAGE, U_COUNT, l->usage, U_CREATION, &creation};
    const Fields message = {MESSAGE, M_COUNT, l->message, M_USAGE, &usage};
    const Fields top = {TOP, T_COUNT, l->top, T_MESSAGE, &message};
    skip_ws(c);
    if (c->p >= c->end) return 0;
    if (*c->p != '{') {
        Span any;
        return skip_value(c, &any, 0) ? -1 : 0;
    }
    if (!read_fields(c, &top, 0)) return 0;
    skip_ws(c);
    return c->p == c->end ? 1 : 0;
}

/* ---- values as Python has them ------------------------------------------------------------------------- */

/* a code point below U+10000 (no surrogate: those were declined) as UTF-8 at the buffer's end */
static int put_code(KcBytes *b, unsigned v) {
    char out[3];
    int k = 1;
    if (v < 0x80) out[0] = (char)v;
    else if (v < 0x800) { k = 2; out[0] = (char)(0xC0 | (v >> 6)); out[1] = (char)(0x80 | (v & 0x3F)); }
    else {
        k = 3;
        out[0] = (char)(0xE0 | (v >> 12));
        out[1] = (char)(0x80 | ((v >> 6) & 0x3F));
        out[2] = (char)(0x80 | (v & 0x3F));
    }
    return kc_put(b, out, k);
}

/* the code point of the escape whose letter is at p (past its backslash), and where the escape ends */
static const char *unescaped(const char *p, unsigned *v) {
    char e = *p++;
    switch (e) {
    case 'b': *v = '\b'; return p;
    case 'f': *v = '\f'; return p;
    case 'n': *v = '\n'; return p;
    case 'r': *v = '\r'; return p;
    case 't': *v = '\t'; return p;
    case 'u': hex4(p, v); return p + 4;
    default: *v = (unsigned char)e; return p; /* \" \\ \/ */
    }
}

/* a string span's text, its escapes read, at the buffer's end */
static int put_text(KcBytes *b, const Span *s) {
    if (!s->escaped) return kc_put(b, s->p, s->n);
    const char *p = s->p, *end = s->p + s->n;
    while (p < end) {
        const char *run = p;
        while (p < end && *p != '\\') p++;
        if (kc_put(b, run, p - run) < 0) return -1;
        if (p >= end) break;
        unsigned v = 0;
        p = unescaped(p + 1, &v);
        if (put_code(b, v) < 0) return -1;
    }
    return 0;
}

/* a string span as a str (its escapes read; none is a surrogate: those were declined) */
static PyObject *text_of(const Span *s) {
    if (!s->escaped) return PyUnicode_DecodeUTF8(s->p, s->n, "strict");
    KcBytes b = {0};
    PyObject *text = put_text(&b, s) < 0 ? NULL : PyUnicode_DecodeUTF8(b.p, b.n, "strict");
    PyMem_Free(b.p);
    return text;
}

/* whether a value is the string `word` (its escapes read); -1 on a Python error */
static int span_is(const Span *s, const char *word) {
    size_t n = strlen(word);
    if (s->kind != STRING) return 0;
    if (!s->escaped) return (size_t)s->n == n && memcmp(s->p, word, n) == 0;
    PyObject *text = text_of(s);
    if (!text) return -1;
    int same = PyUnicode_CompareWithASCIIString(text, word) == 0;
    Py_DECREF(text);
    return same;
}

static int64_t whole_of(const Span *s) {
    int64_t v = 0;
    for (Py_ssize_t i = 0; i < s->n; i++) v = v * 10 + (s->p[i] - '0');
    return v;
}

/* The usage of a line: a (prompt, cached, output, written, written_1h) tuple for the common record (what the
 * reader's `_flat_at_once` reads), else what `usage_of` makes of its text (the reader's own parse); *fell: the
 * reader's parse failed (a lenient read would forgive it: the caller reads the log in Python). */
static PyObject *usage_here(const Line *l, PyObject *usage_of, int *fell) {
    const Span *u = l->usage;
    int common = 1;
    for (int i = 0; i < U_OUTPUT + 1; i++) common &= u[i].kind == NUMBER && u[i].whole;
    int64_t input = 0, written = 0, cached = 0, output = 0, prompt = 0;
    if (common) {
        input = whole_of(&u[U_INPUT]);
        written = whole_of(&u[U_WRITTEN]);
        cached = whole_of(&u[U_CACHED]);
        output = whole_of(&u[U_OUTPUT]);
        prompt = input + written + cached;
        common = prompt <= MAX_COUNT && output <= MAX_COUNT;
    }
    if (common && u[U_CREATION].kind == OBJECT && l->hour.kind != ABSENT && l->hour.kind != NULL_) {
        if (l->hour.kind == NUMBER && l->hour.whole && whole_of(&l->hour) <= MAX_COUNT) {
            int64_t hour = whole_of(&l->hour);
            return Py_BuildValue("(LLLLL)", (long long)prompt, (long long)cached, (long long)output,
                                 (long long)written, (long long)(hour < written ? hour : written));
        }
        common = 0; /* a count the reader checks, and names where it is bad */
    }
    if (common)
        return Py_BuildValue("(LLLLO)", (long long)prompt, (long long)cached, (long long)output, (long long)written,
                             Py_None);
    PyObject *raw = PyBytes_FromStringAndSize(l->message[M_USAGE].p, l->message[M_USAGE].n);
    if (!raw) return NULL;
    PyObject *made = PyObject_CallOneArg(usage_of, raw);
    Py_DECREF(raw);
    if (made == Py_None) {
        Py_DECREF(made);
        *fell = 1;
        return NULL;
    }
    return made;
}

/* a usage's (prompt, output): from the tuple made here or the reader's Usage */
static int usage_size(PyObject *usage, long long *prompt, long long *output) {
    if (PyTuple_Check(usage)) {
        *prompt = PyLong_AsLongLong(PyTuple_GET_ITEM(usage, 0));
        *output = PyLong_AsLongLong(PyTuple_GET_ITEM(usage, 2));
        return 0;
    }
    PyObject *p = PyObject_GetAttrString(usage, "prompt"), *o = p ? PyObject_GetAttrString(usage, "output") : NULL;
    if (!p || !o) { Py_XDECREF(p); return -1; }
    *prompt = PyLong_AsLongLong(p);
    *output = PyLong_AsLongLong(o);
    Py_DECREF(p);
    Py_DECREF(o);
    return PyErr_Occurred() ? -1 : 0;
}

static const int DAYS_BEFORE[12] = {0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334};

static int digits_at(const char *p, int n, int *out) {
    int v = 0;
    for (int i = 0; i < n; i++) {
        if (p[i] < '0' || p[i] > '9') return 0;
        v = v * 10 + (p[i] - '0');
    }
    *out = v;
    return 1;
}

/* `YYYY-MM-DDTHH:MM:SS[.fff|.ffffff]Z` as Unix seconds, as `datetime.timestamp()` makes it (whole microseconds
 * over 10**6, one rounding); 0 for any other text */
static int iso_seconds(const Span *s, double *out) {
    if (s->kind != STRING || s->escaped) return 0;
    const char *p = s->p;
    Py_ssize_t n = s->n;
    if (n != 20 && n != 24 && n != 27) return 0;
    if (p[4] != '-' || p[7] != '-' || p[10] != 'T' || p[13] != ':' || p[16] != ':' || p[n - 1] != 'Z') return 0;
    int year, month, day, hour, minute, second, fraction = 0;
    if (!digits_at(p, 4, &year) || !digits_at(p + 5, 2, &month) || !digits_at(p + 8, 2, &day) ||
        !digits_at(p + 11, 2, &hour) || !digits_at(p + 14, 2, &minute) || !digits_at(p + 17, 2, &second))
        return 0;
    if (n > 20) {
        if (p[19] != '.' || !digits_at(p + 20, (int)n - 21, &fraction)) return 0;
        if (n == 24) fraction *= 1000;
    }
    int leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    static const int LENGTH[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (year < 1 || month < 1 || month > 12 || day < 1 || day > LENGTH[month - 1] + (month == 2 && leap) ||
        hour > 23 || minute > 59 || second > 59)
        return 0;
    int64_t y = year - 1;
    int64_t days = y * 365 + y / 4 - y / 100 + y / 400 + DAYS_BEFORE[month - 1] + (month > 2 && leap) + day - 1;
    days -= 719162; /* 0001-01-01 to 1970-01-01 */
    int64_t micros = ((days * 86400 + hour * 3600 + minute * 60 + second) * 1000000) + fraction;
    *out = (double)micros / 1e6;
    return 1;
}

/* ---- the reader's rules -------------------------------------------------------------------------------- */

typedef struct {
    PyObject *key;     /* (message id, request id) */
    PyObject *mid, *request, *uuid, *model, *unlogged, *time;
    PyObject *reported; /* None, a tuple made here or a Usage */
    const char *raw;    /* the usage as logged on its first line: its text (NULL: none) */
    Py_ssize_t raw_n;
    int raw_null;       /* logged as null, or not at all */
    long long line, lines;
    int sidechain;
    PyObject *messages; /* where prompts are rebuilt: the prompt (the chain's messages at its first line) */
    PyObject *output;   /* and its reply, its blocks merged */
    Py_ssize_t at;      /* where the reply sits in the chain's messages */
} Pending;

static void pending_clear(Pending *r) {
    Py_CLEAR(r->key);
    Py_CLEAR(r->mid);
    Py_CLEAR(r->request);
    Py_CLEAR(r->uuid);
    Py_CLEAR(r->model);
    Py_CLEAR(r->unlogged);
    Py_CLEAR(r->time);
    Py_CLEAR(r->reported);
    Py_CLEAR(r->messages);
    Py_CLEAR(r->output);
}

/* ---- the chain of parents (claude_code._Chain), where prompts are rebuilt ------------------------------- */

typedef struct {
    PyObject *uuids;   /* list: the chain's lines, in order */
    PyObject *at;      /* dict: uuid -> its index in `uuids` */
    Py_ssize_t *starts; /* where each of them starts in `flat` */
    Py_ssize_t cap_starts;
    PyObject *flat;    /* list: the chain's messages */
    PyObject *parent;  /* dict: every line seen, uuid -> its parent (None: none) */
    PyObject *own;     /* dict: every line seen, uuid -> its messages (a tuple) */
} Chain;

static int chain_init(Chain *ch) {
    memset(ch, 0, sizeof(*ch));
    ch->uuids = PyList_New(0);
    ch->at = PyDict_New();
    ch->flat = PyList_New(0);
    ch->parent = PyDict_New();
    ch->own = PyDict_New();
    return ch->uuids && ch->at && ch->flat && ch->parent && ch->own ? 0 : -1;
}

static void chain_free(Chain *ch) {
    Py_CLEAR(ch->uuids);
    Py_CLEAR(ch->at);
    Py_CLEAR(ch->flat);
    Py_CLEAR(ch->parent);
    Py_CLEAR(ch->own);
    PyMem_Free(ch->starts);
    ch->starts = NULL;
}

/* `_Chain._cut`: the chain from its n-th line on gone */
static int chain_cut(Chain *ch, Py_ssize_t n) {
    Py_ssize_t len = PyList_GET_SIZE(ch->uuids);
    if (n >= len) return 0;
    for (Py_ssize_t i = n; i < len; i++)
        if (PyDict_DelItem(ch->at, PyList_GET_ITEM(ch->uuids, i)) < 0) return -1;
    if (PyList_SetSlice(ch->flat, ch->starts[n], PY_SSIZE_T_MAX, NULL) < 0) return -1;
    return PyList_SetSlice(ch->uuids, n, PY_SSIZE_T_MAX, NULL);
}

/* the index of `uuid` on the chain, -1 off it, -2 on a Python error */
static Py_ssize_t chain_at(Chain *ch, PyObject *uuid) {
    PyObject *got = PyDict_GetItemWithError(ch->at, uuid);
    if (!got) return PyErr_Occurred() ? -2 : -1;
    return PyLong_AsSsize_t(got);
}

/* `_Chain.push` */
static int chain_push(Chain *ch, PyObject *uuid, PyObject *parent, PyObject *messages) {
    Py_ssize_t was = chain_at(ch, uuid);
    if (was == -2 || (was >= 0 && chain_cut(ch, was) < 0)) return -1;
    if (PyDict_SetItem(ch->parent, uuid, parent) < 0 || PyDict_SetItem(ch->own, uuid, messages) < 0) return -1;
    Py_ssize_t n = PyList_GET_SIZE(ch->uuids);
    if (n == ch->cap_starts) {
        Py_ssize_t size = n ? n * 2 : 64;
        Py_ssize_t *grown = PyMem_Realloc(ch->starts, sizeof(Py_ssize_t) * (size_t)size);
        if (!grown) { PyErr_NoMemory(); return -1; }
        ch->starts = grown;
        ch->cap_starts = size;
    }
    PyObject *index = PyLong_FromSsize_t(n);
    if (!index) return -1;
    int failed = PyDict_SetItem(ch->at, uuid, index);
    Py_DECREF(index);
    if (failed < 0 || PyList_Append(ch->uuids, uuid) < 0) return -1;
    ch->starts[n] = PyList_GET_SIZE(ch->flat);
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(messages); i++)
        if (PyList_Append(ch->flat, PyTuple_GET_ITEM(messages, i)) < 0) return -1;
    return 0;
}

/* `_Chain.move_to`: `parent` made the end of the chain */
static int chain_move_to(Chain *ch, PyObject *parent) {
    if (parent == Py_None) return chain_cut(ch, 0);
    Py_ssize_t len = PyList_GET_SIZE(ch->uuids);
    if (len) {
        int last = PyObject_RichCompareBool(parent, PyList_GET_ITEM(ch->uuids, len - 1), Py_EQ);
        if (last < 0) return -1;
        if (last) return 0;
    }
    Py_ssize_t at = chain_at(ch, parent);
    if (at == -2) return -1;
    if (at >= 0) return chain_cut(ch, at + 1);
    /* a jump to another branch: back to where it leaves the chain, then along it */
    PyObject *path = PyList_New(0);
    if (!path) return -1;
    int status = -1;
    PyObject *line = Py_NewRef(parent);
    Py_ssize_t seen = PyDict_GET_SIZE(ch->parent);
    while (line != Py_None && PyList_GET_SIZE(path) <= seen) {
        Py_ssize_t on = chain_at(ch, line);
        if (on == -2) goto out;
        if (on >= 0) break;
        PyObject *up = PyDict_GetItemWithError(ch->parent, line);
        if (!up) {
            if (PyErr_Occurred()) goto out;
            break;
        }
        if (PyList_Append(path, line) < 0) goto out;
        Py_SETREF(line, Py_NewRef(up));
    }
    Py_ssize_t from = 0;
    if (line != Py_None) {
        Py_ssize_t on = chain_at(ch, line);
        if (on == -2) goto out;
        if (on >= 0) from = on + 1;
    }
    if (chain_cut(ch, from) < 0) goto out;
    for (Py_ssize_t i = PyList_GET_SIZE(path) - 1; i >= 0; i--) {
        PyObject *uuid = PyList_GET_ITEM(path, i);
        PyObject *up = PyDict_GetItemWithError(ch->parent, uuid), *own = up ? PyDict_GetItemWithError(ch->own, uuid)
                                                                              : NULL;
        if (!up || !own) {
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_KeyError, "a line of the chain");
            goto out;
        }
        Py_INCREF(up);
        Py_INCREF(own);
        int failed = chain_push(ch, uuid, up, own);
        Py_DECREF(up);
        Py_DECREF(own);
        if (failed < 0) goto out;
    }
    status = 0;
out:
    Py_DECREF(line);
    Py_DECREF(path);
    return status;
}

/* `_sit`: a line put on the chain after its parent */
static int chain_sit(Chain *ch, PyObject *uuid, PyObject *parent, PyObject *messages) {
    return chain_move_to(ch, parent) < 0 ? -1 : chain_push(ch, uuid, parent, messages);
}

typedef struct {
    PyObject *responses, *done, *main_ids, *agents_of;
    long agents;
    long long skipped, sidechains, synthetic;
    int open;
    Pending pending;
    int prompts;              /* prompts rebuilt: the chain kept, each line's messages made */
    Chain chain;
    PyObject *loads, *user_of, *merge, *replied; /* orjson.loads; a user message's content -> its messages (a
                                                  * tuple); a reply and a line's content -> the reply, its blocks
                                                  * merged (`_merge`); and a reply with the texts, thinking and
                                                  * tool calls they add, read here (`_replied`) */
} State;

/* a value as the parsed line has it */
static PyObject *value_of(const State *st, const Span *s) {
    switch (s->kind) {
    case ABSENT:
    case NULL_: return Py_NewRef(Py_None);
    case TRUE_: return Py_NewRef(Py_True);
    case FALSE_: return Py_NewRef(Py_False);
    case STRING: return text_of(s);
    default: {
        PyObject *view = PyMemoryView_FromMemory((char *)s->p, s->n, PyBUF_READ);
        if (!view) return NULL;
        PyObject *value = PyObject_CallOneArg(st->loads, view);
        Py_DECREF(view);
        return value;
    }
    }
}

/* ---- a reply's blocks (claude_code._merge) --------------------------------------------------------------- */

#define MAX_KEYS 64     /* an object with more: its names not checked for repeats, declined */
#define DUMPED_DEPTH 64 /* a tool's input nested deeper: declined (each level holds its names on the stack) */

/* A valid JSON value at the cursor written again as `json.dumps(orjson.loads(value), ensure_ascii=False,
 * separators=(",", ":"))` writes it: 1 written, 0 declined (a number that is no whole number of at most
 * WHOLE_DIGITS digits, a name written with escapes or given twice: written by Python instead), -1 out of
 * memory. */
static int dumped(Cursor *c, KcBytes *out, int depth) {
    if (depth > DUMPED_DEPTH) return 0;
    skip_ws(c);
    Span s = {0};
    switch (*c->p) {
    case '{': {
        Span keys[MAX_KEYS];
        int n = 0;
        c->p++;
        if (kc_put(out, "{", 1) < 0) return -1;
        skip_ws(c);
        if (*c->p == '}') { c->p++; return kc_put(out, "}", 1) < 0 ? -1 : 1; }
        for (;;) {
            skip_ws(c);
            Span key = {0};
            if (!read_string(c, &key) || key.escaped || n == MAX_KEYS) return 0;
            for (int i = 0; i < n; i++)
                if (keys[i].n == key.n && memcmp(keys[i].p, key.p, (size_t)key.n) == 0) return 0;
            keys[n++] = key;
            if ((n > 1 && kc_put(out, ",", 1) < 0) || kc_put(out, "\"", 1) < 0 || kc_put(out, key.p, key.n) < 0 ||
                kc_put(out, "\":", 2) < 0)
                return -1;
            skip_ws(c);
            c->p++; /* the colon */
            int got = dumped(c, out, depth + 1);
            if (got <= 0) return got;
            int next = next_item(c, '}');
            if (next < 0) return 0;
            if (next == 0) return kc_put(out, "}", 1) < 0 ? -1 : 1;
        }
    }
    case '[': {
        c->p++;
        if (kc_put(out, "[", 1) < 0) return -1;
        skip_ws(c);
        if (*c->p == ']') { c->p++; return kc_put(out, "]", 1) < 0 ? -1 : 1; }
        for (int first = 1;; first = 0) {
            if (!first && kc_put(out, ",", 1) < 0) return -1;
            int got = dumped(c, out, depth + 1);
            if (got <= 0) return got;
            int next = next_item(c, ']');
            if (next < 0) return 0;
            if (next == 0) return kc_put(out, "]", 1) < 0 ? -1 : 1;
        }
    }
    case '"': {
        if (!read_string(c, &s)) return 0;
        if (kc_put(out, "\"", 1) < 0) return -1;
        const char *q = s.p, *end = s.p + s.n;
        while (q < end) {
            const char *run = q;
            while (q < end && *q != '\\') q++;
            if (kc_put(out, run, q - run) < 0) return -1;
            if (q >= end) break;
            unsigned v = 0;
            q = unescaped(q + 1, &v);
            if (v >= 0xD800 && v <= 0xDFFF) return 0;
            char text[8];
            int k;
            switch (v) {
            case '"': k = 2; memcpy(text, "\\\"", 2); break;
            case '\\': k = 2; memcpy(text, "\\\\", 2); break;
            case '\b': k = 2; memcpy(text, "\\b", 2); break;
            case '\f': k = 2; memcpy(text, "\\f", 2); break;
            case '\n': k = 2; memcpy(text, "\\n", 2); break;
            case '\r': k = 2; memcpy(text, "\\r", 2); break;
            case '\t': k = 2; memcpy(text, "\\t", 2); break;
            default:
                if (v >= 0x20) {
                    if (put_code(out, v) < 0) return -1;
                    continue;
                }
                k = snprintf(text, sizeof text, "\\u%04x", v);
            }
            if (kc_put(out, text, k) < 0) return -1;
        }
        return kc_put(out, "\"", 1) < 0 ? -1 : 1;
    }
    case 't': c->p += 4; return kc_put(out, "true", 4) < 0 ? -1 : 1;
    case 'f': c->p += 5; return kc_put(out, "false", 5) < 0 ? -1 : 1;
    case 'n': c->p += 4; return kc_put(out, "null", 4) < 0 ? -1 : 1;
    default: {
        if (!read_number(c, &s)) return 0;
        int negative = s.p[0] == '-';
        Py_ssize_t digits = s.n - negative;
        for (Py_ssize_t i = negative; i < s.n; i++)
            if (s.p[i] < '0' || s.p[i] > '9') return 0; /* a float: Python writes its repr */
        if (digits > WHOLE_DIGITS) return 0;
        if (negative && digits == 1 && s.p[1] == '0') return kc_put(out, "0", 1) < 0 ? -1 : 1; /* -0: the int 0 */
        return kc_put(out, s.p, s.n) < 0 ? -1 : 1;
    }
    }
}

/* a tool call's id or name as `str(block.get(name, ""))` makes it; NULL with no error: declined */
static PyObject *named(const Span *s) {
    if (s->kind == ABSENT) return PyUnicode_FromStringAndSize("", 0);
    return s->kind == STRING ? text_of(s) : NULL;
}

enum { B_TYPE, B_TEXT, B_THINKING, B_INPUT, B_ID, B_NAME, B_COUNT };
static const char *const BLOCK[B_COUNT] = {"type", "text", "thinking", "input", "id", "name"};

/* What a line's content adds to a reply (`_merge`): its texts, its thinking and its tool calls, each (id, name,
 * arguments); 1 read, 0 declined (read by `_merge` itself), -1 on a Python error */
static int blocks_of(const Span *content, KcBytes *text, KcBytes *thinking, PyObject *calls) {
    if (content->kind == STRING) return put_text(text, content) < 0 ? -1 : 1;
    if (content->kind != ARRAY) return 1; /* nothing a reply takes (or nothing at all) */
    Cursor c = {content->p + 1, content->p + content->n, 0};
    skip_ws(&c);
    if (*c.p == ']') return 1;
    KcBytes args = {0};
    int status = 0;
    for (;;) {
        skip_ws(&c);
        if (*c.p == '{') {
            Span f[B_COUNT];
            memset(f, 0, sizeof f);
            const Fields fields = {BLOCK, B_COUNT, f, -1, NULL};
            if (!read_fields(&c, &fields, 0)) goto out; /* a name with escapes: declined */
            int is_text = span_is(&f[B_TYPE], "text"), is_thinking = span_is(&f[B_TYPE], "thinking"),
                is_tool = span_is(&f[B_TYPE], "tool_use");
            if (is_text < 0 || is_thinking < 0 || is_tool < 0) { status = -1; goto out; }
            Span *piece = is_text ? &f[B_TEXT] : is_thinking ? &f[B_THINKING] : NULL;
            if (piece && piece->kind == STRING) {
                if (put_text(is_text ? text : thinking, piece) < 0) { status = -1; goto out; }
            } else if (is_tool) {
                const Span *input = &f[B_INPUT];
                const char *word = input->kind == ABSENT ? "{}" : input->kind == TRUE_ ? "true"
                                 : input->kind == FALSE_ ? "false" : input->kind == NULL_ ? "null" : NULL;
                args.n = 0;
                if (word) {
                    if (kc_put(&args, word, (Py_ssize_t)strlen(word)) < 0) { status = -1; goto out; }
                } else {
                    Cursor at = {input->kind == STRING ? input->p - 1 : input->p, c.end, 0};
                    int got = dumped(&at, &args, 0);
                    if (got <= 0) { status = got; goto out; }
                }
                PyObject *id = named(&f[B_ID]), *name = id ? named(&f[B_NAME]) : NULL;
                PyObject *dumps = name ? PyUnicode_DecodeUTF8(args.p, args.n, "strict") : NULL;
                PyObject *call = dumps ? PyTuple_Pack(3, id, name, dumps) : NULL;
                Py_XDECREF(id);
                Py_XDECREF(name);
                Py_XDECREF(dumps);
                if (!call) { status = PyErr_Occurred() ? -1 : 0; goto out; }
                int failed = PyList_Append(calls, call);
                Py_DECREF(call);
                if (failed < 0) { status = -1; goto out; }
            }
        } else {
            Span any;
            if (!skip_value(&c, &any, 0)) goto out;
        }
        int next = next_item(&c, ']');
        if (next < 0) goto out;
        if (next == 0) break;
    }
    status = 1;
out:
    PyMem_Free(args.p);
    return status;
}

/* ---- a reply made here (claude_code._replied), set in its slots where `setup` was given the classes ------- */

enum { MSG_ROLE, MSG_CONTENT, MSG_REASONING, MSG_TOOL_CALLS, MSG_TOOL_CALL_ID, MSG_NAME, MSG_PARTIAL, MSG_FIELDS };
enum { CALL_ID, CALL_NAME, CALL_ARGUMENTS, CALL_FIELDS };
static const char *const MESSAGE_NAMES[MSG_FIELDS] = {"role", "content", "reasoning", "tool_calls", "tool_call_id",
                                                      "name", "partial"};
static const char *const CALL_NAMES[CALL_FIELDS] = {"id", "name", "arguments"};

static KcLayout MESSAGE_LAYOUT, CALL_LAYOUT;
static PyObject *ASSISTANT_ROLE; /* "assistant" */

/* `_replied(reply, text, reasoning, calls)`: the reply with the texts, thinking and tool calls (id, name, arguments)
 * a line's blocks add; NULL with no error where it is not made here (no classes set up, a reply of another class) */
static PyObject *replied_here(PyObject *reply, PyObject *text, PyObject *reasoning, PyObject *calls) {
    if (!MESSAGE_LAYOUT.type || (reply != Py_None && Py_TYPE(reply) != MESSAGE_LAYOUT.type)) return NULL;
    PyObject *content = reply != Py_None ? KC_SLOT(MESSAGE_LAYOUT, reply, MSG_CONTENT) : NULL;
    PyObject *thought = reply != Py_None ? KC_SLOT(MESSAGE_LAYOUT, reply, MSG_REASONING) : Py_None;
    PyObject *held = reply != Py_None ? KC_SLOT(MESSAGE_LAYOUT, reply, MSG_TOOL_CALLS) : EMPTY;
    if ((content && !PyUnicode_Check(content)) || (thought != Py_None && !PyUnicode_Check(thought)) ||
        !PyTuple_Check(held))
        return NULL;
    PyObject *v[MSG_FIELDS] = {Py_NewRef(ASSISTANT_ROLE), content ? PyUnicode_Concat(content, text) : Py_NewRef(text),
                               NULL, NULL, Py_NewRef(Py_None), Py_NewRef(Py_None), Py_NewRef(Py_False)};
    int thinking = thought != Py_None && PyObject_IsTrue(thought); /* `(m.reasoning or "") + reasoning or None` */
    PyObject *joined = thinking ? PyUnicode_Concat(thought, reasoning) : Py_NewRef(reasoning);
    if (joined && PyUnicode_GET_LENGTH(joined) == 0) Py_SETREF(joined, Py_NewRef(Py_None));
    v[MSG_REASONING] = joined;
    Py_ssize_t n = PyTuple_GET_SIZE(held), more = PyTuple_GET_SIZE(calls);
    PyObject *made = more ? PyTuple_New(n + more) : Py_NewRef(held);
    for (Py_ssize_t i = 0; made && more && i < n; i++) PyTuple_SET_ITEM(made, i, Py_NewRef(PyTuple_GET_ITEM(held, i)));
    for (Py_ssize_t i = 0; made && i < more; i++) {
        PyObject *call = PyTuple_GET_ITEM(calls, i), *c[CALL_FIELDS];
        for (int k = 0; k < CALL_FIELDS; k++) c[k] = Py_NewRef(PyTuple_GET_ITEM(call, k));
        PyObject *tool = kc_instance(&CALL_LAYOUT, c, CALL_FIELDS);
        if (!tool) Py_CLEAR(made); else PyTuple_SET_ITEM(made, n + i, tool);
    }
    v[MSG_TOOL_CALLS] = made;
    PyObject *out = kc_instance(&MESSAGE_LAYOUT, v, MSG_FIELDS);
    if (!out && !PyErr_Occurred()) PyErr_NoMemory();
    return out;
}

/* `merge(reply, content)` of the line's message: the reply with the line's blocks (reply None: a new one) */
static PyObject *merged(const State *st, const Line *l, PyObject *reply) {
    KcBytes text = {0}, thinking = {0};
    PyObject *calls = PyList_New(0), *made = NULL;
    if (!calls) return NULL;
    int got = blocks_of(&l->message[M_CONTENT], &text, &thinking, calls);
    if (got > 0) {
        PyObject *t = PyUnicode_DecodeUTF8(text.p ? text.p : "", text.n, "strict");
        PyObject *r = t ? PyUnicode_DecodeUTF8(thinking.p ? thinking.p : "", thinking.n, "strict") : NULL;
        PyObject *c = r ? PyList_AsTuple(calls) : NULL;
        if (c) made = replied_here(reply, t, r, c);
        if (c && !made && !PyErr_Occurred()) made = PyObject_CallFunctionObjArgs(st->replied, reply, t, r, c, NULL);
        Py_XDECREF(t);
        Py_XDECREF(r);
        Py_XDECREF(c);
    } else if (got == 0 && !PyErr_Occurred()) { /* declined: the reader's own `_merge` */
        PyObject *content = value_of(st, &l->message[M_CONTENT]);
        if (content) made = PyObject_CallFunctionObjArgs(st->merge, reply, content, NULL);
        Py_XDECREF(content);
    }
    PyMem_Free(text.p);
    PyMem_Free(thinking.p);
    Py_DECREF(calls);
    return made;
}

/* the pending response closed: (line, mid, request, sidechain, uuid, lines, time, model, unlogged, usage,
 * messages, output), the last two None where no prompt is rebuilt */
static int close_pending(State *st) {
    if (!st->open) return 0;
    Pending *r = &st->pending;
    st->open = 0;
    if (PySet_Add(st->done, r->key) < 0) return -1;
    PyObject *t = Py_BuildValue("(LOOOOLOOOOOO)", r->line, r->mid, r->request, r->sidechain ? Py_True : Py_False,
                                r->uuid, r->lines, r->time, r->model, r->unlogged, r->reported,
                                r->messages ? r->messages : Py_None, r->output ? r->output : Py_None);
    pending_clear(r);
    if (!t) return -1;
    int failed = PyList_Append(st->responses, t);
    Py_DECREF(t);
    return failed;
}

/* _Agents.name */
static PyObject *agent_name(State *st, const Line *l, PyObject *uuid, PyObject *parent) {
    if (l->top[T_SIDECHAIN].kind != TRUE_) return Py_NewRef(MAIN);
    PyObject *name;
    const Span *agent = &l->top[T_AGENT];
    if (agent->kind == STRING && agent->n > 0) {
        PyObject *id = text_of(agent);
        if (!id) return NULL;
        name = PyUnicode_FromFormat("sub-agent %U's system prompt and tools", id);
        Py_DECREF(id);
    } else if (parent != Py_None && (name = PyDict_GetItemWithError(st->agents_of, parent)) != NULL) {
        Py_INCREF(name);
    } else {
        if (PyErr_Occurred()) return NULL;
        st->agents++;
        name = PyUnicode_FromFormat("sub-agent %ld's system prompt and tools", st->agents);
    }
    if (!name) return NULL;
    if (PyDict_SetItem(st->agents_of, uuid, name) < 0) { Py_DECREF(name); return NULL; }
    return name;
}

/* whether the line's usage is its pending response's as logged, by their text: 1 the same text (or neither has
 * one), 0 one has none, -1 both objects written otherwise (equal or not as parsed values: `raw_equal`) */
static int raw_same(const Pending *r, const Line *l) {
    const Span *u = &l->message[M_USAGE];
    int none = u->kind == ABSENT || u->kind == NULL_;
    if (none || r->raw_null) return none && r->raw_null;
    if (u->kind != OBJECT || !r->raw) return 0; /* a usage that is no object equals no object's */
    return u->n == r->raw_n && memcmp(u->p, r->raw, (size_t)r->raw_n) == 0 ? 1 : -1;
}

/* `raw_usage == pending.raw`, as the reader compares them (parsed); -1 on a Python error */
static int raw_equal(const Pending *r, const Line *l, PyObject *loads) {
    int same = raw_same(r, l);
    if (same >= 0) return same;
    const Span *u = &l->message[M_USAGE];
    PyObject *mine = PyObject_CallFunction(loads, "y#", u->p, u->n);
    PyObject *theirs = mine ? PyObject_CallFunction(loads, "y#", r->raw, r->raw_n) : NULL;
    int equal = theirs ? PyObject_RichCompareBool(mine, theirs, Py_EQ) : -1;
    Py_XDECREF(mine);
    Py_XDECREF(theirs);
    return equal;
}

/* one assistant line (`_Log.assistant`); -1 on a Python error, 1 declined */
static int assistant(State *st, const Line *l, long long line, PyObject *uuid, PyObject *parent, int *asked,
                     PyObject *usage_of, PyObject *time_of, PyObject *loads) {
    const Span *id = &l->message[M_ID], *request_span = &l->top[T_REQUEST], *usage_span = &l->message[M_USAGE];
    if (id->kind != STRING) return 1; /* `field` rejects it */
    int sidechain = l->top[T_SIDECHAIN].kind == TRUE_, status = -1;
    PyObject *mid = text_of(id), *request = NULL, *key = NULL, *usage = NULL;
    if (!mid) return -1;
    request = request_span->kind == STRING ? text_of(request_span) : PyUnicode_FromString("");
    if (!request) goto done;
    if (sidechain) {
        int main = PySet_Contains(st->main_ids, mid);
        if (main < 0) goto done;
        if (main) { st->sidechains++; status = 0; goto done; }
    }
    int synthetic = span_is(&l->message[M_MODEL], "<synthetic>");
    if (synthetic < 0) goto done;
    if (synthetic) {
        st->synthetic++;
        status = st->prompts ? chain_sit(&st->chain, uuid, parent, EMPTY) : 0;
        goto done;
    }
    if (!sidechain && PySet_Add(st->main_ids, mid) < 0) goto done;
    key = PyTuple_Pack(2, mid, request);
    if (!key) goto done;
    Pending *r = &st->pending;
    int no_request = PyUnicode_GET_LENGTH(request) == 0, was_asked = *asked, asked_now = 0;
    *asked = 0;
    int same_raw = st->open ? raw_same(r, l) : 0; /* 1: the same text, so the same usage, not parsed again */
    if (was_asked && no_request) {
        int equal = st->open ? raw_equal(r, l, loads) : 0;
        if (equal < 0) goto done;
        asked_now = !equal;
    }
    int same = 0;
    if (st->open && !asked_now) {
        same = PyObject_RichCompareBool(key, r->key, Py_EQ);
        if (same < 0) goto done;
    }
    int has_usage = usage_span->kind != ABSENT && usage_span->kind != NULL_;
    if (has_usage && !(same && same_raw == 1)) {
        if (usage_span->kind != OBJECT) { status = 1; goto done; } /* the reader's parse rejects it */
        int fell = 0;
        usage = usage_here(l, usage_of, &fell);
        if (!usage) { status = fell ? 1 : -1; goto done; }
    }
    if (same) {
        r->lines++;
        if (usage) {
            long long p, o, rp = 0, ro = 0;
            if (usage_size(usage, &p, &o) < 0) goto done;
            int better = r->reported == Py_None;
            if (!better) {
                if (usage_size(r->reported, &rp, &ro) < 0) goto done;
                better = p > rp || (p == rp && o > ro);
            }
            if (better) Py_SETREF(r->reported, Py_NewRef(usage));
        }
        if (st->prompts) { /* `_block`: one assistant message for all the response's blocks */
            Chain *ch = &st->chain;
            PyObject *reply = merged(st, l, r->output);
            if (!reply) goto done;
            if (chain_move_to(ch, parent) < 0) { Py_DECREF(reply); goto done; }
            if (r->at < PyList_GET_SIZE(ch->flat) && PyList_GET_ITEM(ch->flat, r->at) == r->output &&
                PyList_SetItem(ch->flat, r->at, Py_NewRef(reply)) < 0) {
                Py_DECREF(reply);
                goto done;
            }
            Py_SETREF(r->output, reply);
            if (chain_push(ch, uuid, parent, EMPTY) < 0) goto done;
        }
        status = 0;
        goto done;
    }
    if (!asked_now) {
        int late = PySet_Contains(st->done, key);
        if (late < 0) goto done;
        if (late) { status = 0; goto done; }
    }
    if (close_pending(st) < 0) goto done;
    /* _open */
    PyObject *reply = NULL, *messages = NULL;
    if (st->prompts) {
        reply = merged(st, l, Py_None);
        if (!reply) goto done;
        if (chain_move_to(&st->chain, parent) < 0 || !(messages = PyList_AsTuple(st->chain.flat))) {
            Py_DECREF(reply);
            goto done;
        }
    }
    double seconds;
    const Span *stamp = &l->top[T_TIMESTAMP];
    PyObject *time = NULL, *model = NULL, *unlogged = NULL;
    if (stamp->kind == ABSENT || stamp->kind == NULL_) {
        time = Py_NewRef(Py_None);
    } else if (iso_seconds(stamp, &seconds)) {
        time = PyFloat_FromDouble(seconds);
    } else if (stamp->kind == STRING) {
        PyObject *text = text_of(stamp);
        if (text) {
            time = PyObject_CallOneArg(time_of, text);
            Py_DECREF(text);
            if (time == Py_None) { Py_CLEAR(time); status = 1; } /* the reader rejects it */
        }
    } else {
        status = 1; /* a number, or no time: the Python reader reads it */
    }
    const Span *model_span = &l->message[M_MODEL];
    if (time) model = model_span->kind == STRING && model_span->n > 0 ? text_of(model_span) : Py_NewRef(Py_None);
    if (model) unlogged = agent_name(st, l, uuid, parent);
    if (unlogged && st->prompts) {
        PyObject *own = PyTuple_Pack(1, reply);
        if (!own || chain_push(&st->chain, uuid, parent, own) < 0) Py_CLEAR(unlogged);
        Py_XDECREF(own);
    }
    if (!unlogged) {
        Py_XDECREF(time);
        Py_XDECREF(model);
        Py_XDECREF(reply);
        Py_XDECREF(messages);
        goto done;
    }
    r->messages = messages;
    r->output = reply;
    r->at = messages ? PyTuple_GET_SIZE(messages) : 0;
    r->key = Py_NewRef(key);
    r->mid = Py_NewRef(mid);
    r->request = Py_NewRef(request);
    r->uuid = Py_NewRef(uuid);
    r->model = model;
    r->unlogged = unlogged;
    r->time = time;
    r->reported = usage ? Py_NewRef(usage) : Py_NewRef(Py_None);
    r->raw_null = !has_usage;
    r->raw = usage_span->kind == OBJECT ? usage_span->p : NULL;
    r->raw_n = usage_span->n;
    r->line = line;
    r->lines = 1;
    r->sidechain = sidechain;
    st->open = 1;
    status = 0;
done:
    Py_XDECREF(mid);
    Py_XDECREF(request);
    Py_XDECREF(key);
    Py_XDECREF(usage);
    return status;
}

static int blank(const char *p, const char *end) { /* what bytes.strip() strips */
    for (; p < end; p++)
        if (!strchr(" \t\r\x0b\x0c", *p) || *p == 0) return 0;
    return 1;
}

static PyObject *py_scan(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer data;
    long long after;
    PyObject *usage_of, *time_of, *loads, *main_agent, *user_of = Py_None, *merge = Py_None, *replied = Py_None;
    long long max_count;
    int prompts = 0;
    if (!PyArg_ParseTuple(args, "y*LOOOLU|pOOO", &data, &after, &usage_of, &time_of, &loads, &max_count,
                          &main_agent, &prompts, &user_of, &merge, &replied))
        return NULL;
    MAX_COUNT = max_count;
    Py_XSETREF(MAIN, Py_NewRef(main_agent));
    State st = {0};
    PyObject *result = NULL;
    st.prompts = prompts;
    st.loads = loads;
    st.user_of = user_of;
    st.merge = merge;
    st.replied = replied;
    if (prompts && (!PyCallable_Check(user_of) || !PyCallable_Check(merge) || !PyCallable_Check(replied))) {
        PyErr_SetString(PyExc_TypeError, "a scan that rebuilds prompts needs user_of, merge and replied");
        PyBuffer_Release(&data);
        return NULL;
    }
    if (!EMPTY && !(EMPTY = PyTuple_New(0))) {
        PyBuffer_Release(&data);
        return NULL;
    }
    st.responses = PyList_New(0);
    st.done = PySet_New(NULL);
    st.main_ids = PySet_New(NULL);
    st.agents_of = PyDict_New();
    if (chain_init(&st.chain) < 0 || !st.responses || !st.done || !st.main_ids || !st.agents_of) goto out;
    const char *base = data.buf, *end = base + data.len, *start = base;
    long long number = after;
    int asked = 0, declined = 0;
    Line line;
    while (start <= end) {
        const char *stop = memchr(start, '\n', (size_t)(end - start));
        if (!stop) stop = end;
        number++;
        if (stop > start) {
            Cursor c = {start, stop, 0};
            int got = read_line(&c, &line);
            if (got <= 0) {
                if (got == 0 && !c.declined && blank(start, stop)) { start = stop + 1; continue; }
                declined = 1; /* not JSON, not an object, or not read exactly here: the Python reader says */
                break;
            }
            PyObject *uuid = NULL, *parent = NULL;
            const Span *message = &line.top[T_MESSAGE];
            const Span *role = message->kind == OBJECT ? &line.message[M_ROLE] : NULL;
            int is_assistant = role ? span_is(role, "assistant") : 0, is_user = role ? span_is(role, "user") : 0;
            if (is_assistant < 0 || is_user < 0) goto out;
            int on_chain = prompts && line.top[T_UUID].kind != ABSENT; /* progress and system lines sit on it */
            if (!is_assistant && !is_user) {
                st.skipped++;
                if (!on_chain) {
                    start = stop + 1;
                    continue;
                }
            }
            uuid = line.top[T_UUID].kind == STRING ? text_of(&line.top[T_UUID])
                                                   : PyUnicode_FromFormat("line-%lld", number);
            parent = line.top[T_PARENT].kind == STRING ? text_of(&line.top[T_PARENT]) : Py_NewRef(Py_None);
            Py_ssize_t chained = PyList_GET_SIZE(st.chain.uuids);
            if (parent && line.top[T_PARENT].kind == ABSENT && chained) /* no chain fields: one line after another */
                Py_SETREF(parent, Py_NewRef(PyList_GET_ITEM(st.chain.uuids, chained - 1)));
            int status = 0;
            if (!uuid || !parent) {
                status = -1;
            } else if (is_assistant) {
                status = assistant(&st, &line, number, uuid, parent, &asked, usage_of, time_of, loads);
            } else if (is_user) {
                asked = 1;
                PyObject *name = agent_name(&st, &line, uuid, parent);
                status = name ? 0 : -1;
                Py_XDECREF(name);
                if (!status && prompts) {
                    PyObject *content = value_of(&st, &line.message[M_CONTENT]);
                    PyObject *own = content ? PyObject_CallOneArg(user_of, content) : NULL;
                    Py_XDECREF(content);
                    if (own && !PyTuple_Check(own)) {
                        PyErr_SetString(PyExc_TypeError, "user_of gives a tuple");
                        Py_CLEAR(own);
                    }
                    status = own ? chain_sit(&st.chain, uuid, parent, own) : -1;
                    Py_XDECREF(own);
                }
            } else {
                status = chain_sit(&st.chain, uuid, parent, EMPTY);
            }
            Py_XDECREF(uuid);
            Py_XDECREF(parent);
            if (status < 0) goto out;
            if (status > 0) { declined = 1; break; }
        }
        start = stop + 1;
    }
    if (declined) {
        result = Py_NewRef(Py_None);
        goto out;
    }
    if (close_pending(&st) < 0) goto out;
    result = Py_BuildValue("(OLLL)", st.responses, st.skipped, st.sidechains, st.synthetic);
out:
    pending_clear(&st.pending);
    chain_free(&st.chain);
    Py_XDECREF(st.responses);
    Py_XDECREF(st.done);
    Py_XDECREF(st.main_ids);
    Py_XDECREF(st.agents_of);
    PyBuffer_Release(&data);
    return result;
}

/* setup(Message, its fields, ToolCall, its fields): a reply made here, in its slots */
static PyObject *py_setup(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *message, *message_fields, *call, *call_fields;
    if (!PyArg_ParseTuple(args, "OOOO", &message, &message_fields, &call, &call_fields)) return NULL;
    if (!ASSISTANT_ROLE && !(ASSISTANT_ROLE = PyUnicode_InternFromString("assistant"))) return NULL;
    if (!EMPTY && !(EMPTY = PyTuple_New(0))) return NULL;
    if (kc_layout(&CALL_LAYOUT, call, call_fields, CALL_NAMES, CALL_FIELDS) < 0 ||
        kc_layout(&MESSAGE_LAYOUT, message, message_fields, MESSAGE_NAMES, MSG_FIELDS) < 0) {
        Py_CLEAR(MESSAGE_LAYOUT.type); /* replies made by the reader's `_replied` */
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyMethodDef METHODS[] = {
    {"setup", py_setup, METH_VARARGS, "setup(Message, its fields, ToolCall, its fields): replies made here"},
    {"scan", py_scan, METH_VARARGS,
     "scan(data, after, usage_of, time_of, loads, max_count, main[, prompts, user_of, merge, replied]) -> "
     "(responses, skipped, sidechains, synthetic) or None: "
     "a Claude Code log's responses, read as kcost.readers.claude_code._Log.read reads them (with prompts: "
     "each with its prompt's messages and its reply, made by user_of, merge and replied)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef MODULE = {PyModuleDef_HEAD_INIT, "_claude", "kcost's compiled Claude Code log scan.", -1,
                                    METHODS, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__claude(void) { return PyModule_Create(&MODULE); }
