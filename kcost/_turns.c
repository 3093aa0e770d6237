/* A bill's turns written as JSON where they are billed (`kcost.billing.Billing.written`, its loop written again):
 * each turn's charges worked out in whole units of 1e-18 dollars (every per-token rate kcost takes is a whole
 * number of them: a rate per million tokens has at most kcost.bounds.MONEY_PLACES decimal places), its text laid
 * out as the JSON writer lays out a turn alone (orjson's OPT_INDENT_2, money as exact decimal text), and the
 * session's tokens summed by the rates they were billed at, for billing to price the sums in `Decimal` once the
 * last turn is written. Billing's Python loop is the fallback where this module is not built, and the oracle the
 * tests hold it to. A turn this module cannot write exactly (a count past 2^53, a sum past 127 bits) raises
 * `Beyond`, and billing writes the session in Python.
 */
#include "_compiled.h"
#include <math.h>

typedef __int128 Money; /* dollars x 1e18 */

#define REASONS 32 /* causes a turn's misses may have: kcost.cache.Reason has 13 */
#define TOKENS_MAX ((int64_t)1 << 53) /* a count the Python loop's float of it holds exactly too */
#define DAY 86400
#define TIME_END 253402300800.0 /* 10000-01-01T00:00:00Z: kcost.utc's _END */

static PyObject *BEYOND; /* kcost._turns.Beyond: a figure past what this writer holds exactly */
static PyObject *S_REASON, *S_TOKENS, *S_AT, *S_REPORTED_INPUT, *S_REPORTED_CACHED, *S_SIMULATED_CACHED, *S_AGREE,
    *REPORTED;

/* ---- a text being written ---------------------------------------------------------------------------------- */

#define PUT(b, literal) kc_put(b, literal, (Py_ssize_t)sizeof(literal) - 1)

static int put_i64(KcBytes *b, int64_t v) {
    char digits[24];
    int n = snprintf(digits, sizeof digits, "%lld", (long long)v);
    return kc_put(b, digits, n);
}

/* an amount as exact decimal text, quoted: `"0.045048"`, `"0"`, no trailing zeros (results.common.money_text) */
static int put_money(KcBytes *b, Money v) {
    char text[64], *end = text + sizeof text, *q = end;
    int negative = v < 0;
    unsigned __int128 u = negative ? -(unsigned __int128)v : (unsigned __int128)v;
    unsigned __int128 whole = u / 1000000000000000000ull;
    uint64_t fraction = (uint64_t)(u % 1000000000000000000ull);
    *--q = '"';
    if (fraction) {
        int places = 18;
        while (fraction % 10 == 0) {
            fraction /= 10;
            places--;
        }
        for (int i = 0; i < places; i++, fraction /= 10) *--q = (char)('0' + fraction % 10);
        *--q = '.';
    }
    do {
        *--q = (char)('0' + (int)(whole % 10));
        whole /= 10;
    } while (whole);
    if (negative) *--q = '-';
    *--q = '"';
    return kc_put(b, q, end - q);
}

/* a str as orjson writes it (quoted; `"`, `\` and control characters escaped, the rest as UTF-8), or null */
static int put_text(KcBytes *b, PyObject *s) {
    if (s == Py_None) return PUT(b, "null");
    if (!PyUnicode_Check(s)) {
        PyErr_SetString(PyExc_TypeError, "a str or None");
        return -1;
    }
    Py_ssize_t n;
    const char *u = PyUnicode_AsUTF8AndSize(s, &n); /* a lone surrogate raises, as orjson does */
    if (!u || kc_grow((void **)&b->p, &b->cap, b->n + 2 + 6 * n, 1) < 0) return -1; /* each byte escaped at most */
    char *q = b->p + b->n;
    *q++ = '"';
    for (Py_ssize_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)u[i];
        if (c >= 0x20 && c != '"' && c != '\\') {
            *q++ = (char)c;
            continue;
        }
        *q++ = '\\';
        switch (c) {
        case '"': *q++ = '"'; break;
        case '\\': *q++ = '\\'; break;
        case '\b': *q++ = 'b'; break;
        case '\t': *q++ = 't'; break;
        case '\n': *q++ = 'n'; break;
        case '\f': *q++ = 'f'; break;
        case '\r': *q++ = 'r'; break;
        default:
            q += sprintf(q, "u%04x", c);
        }
    }
    *q++ = '"';
    b->n = q - b->p;
    return 0;
}

/* ---- the values of a turn ---------------------------------------------------------------------------------- */

/* a count as a C integer, no more than TOKENS_MAX either way; -1 with Beyond past it */
static int count_of(PyObject *o, int64_t *out) {
    int overflow;
    long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (v == -1 && PyErr_Occurred()) return -1;
    if (overflow || v > TOKENS_MAX || v < -TOKENS_MAX) {
        PyErr_SetString(BEYOND, "a count past what the compiled writer holds");
        return -1;
    }
    *out = v;
    return 0;
}

static int attr_count(PyObject *o, PyObject *name, int64_t *out) {
    PyObject *v = PyObject_GetAttr(o, name);
    if (!v) return -1;
    int r = count_of(v, out);
    Py_DECREF(v);
    return r;
}

/* *sum += a x b, or Beyond */
static int add_product(Money *sum, int64_t a, Money b) {
    Money p;
    if (__builtin_mul_overflow((Money)a, b, &p) || __builtin_add_overflow(*sum, p, sum)) {
        PyErr_SetString(BEYOND, "an amount past what the compiled writer holds");
        return -1;
    }
    return 0;
}

static int add(Money *sum, Money v) {
    if (__builtin_add_overflow(*sum, v, sum)) {
        PyErr_SetString(BEYOND, "an amount past what the compiled writer holds");
        return -1;
    }
    return 0;
}

/* the hit rate, as kcost.charges.rate gives it (round(hit / prompt, 6)), written as orjson writes a float;
 * one written with an exponent (below 1e-4, where orjson and repr differ) by `floats`, orjson itself */
static int put_rate(KcBytes *b, int64_t hit, int64_t prompt, PyObject *floats) {
    double rounded = 0.0;
    if (prompt) {
        char *fixed = PyOS_double_to_string((double)hit / (double)prompt, 'f', 6, 0, NULL);
        if (!fixed) return -1;
        rounded = PyOS_string_to_double(fixed, NULL, NULL); /* float.__round__'s digits and their double */
        PyMem_Free(fixed);
        if (rounded == -1.0 && PyErr_Occurred()) return -1;
    }
    char *text = PyOS_double_to_string(rounded, 'r', 0, Py_DTSF_ADD_DOT_0, NULL);
    if (!text) return -1;
    int r;
    if (!strchr(text, 'e')) {
        r = kc_put(b, text, (Py_ssize_t)strlen(text));
    } else {
        PyObject *f = PyFloat_FromDouble(rounded), *s = f ? PyObject_CallOneArg(floats, f) : NULL;
        Py_ssize_t n;
        const char *u = s ? PyUnicode_AsUTF8AndSize(s, &n) : NULL;
        r = u ? kc_put(b, u, n) : -1;
        Py_XDECREF(f);
        Py_XDECREF(s);
    }
    PyMem_Free(text);
    return r;
}

/* days since 1970-01-01 -> the civil date (H. Hinnant's days_from_civil, inverted) */
static void civil(int64_t days, int *y, int *m, int *d) {
    days += 719468;
    int64_t era = days / 146097;
    int64_t doe = days - era * 146097;
    int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    int64_t mp = (5 * doy + 2) / 153;
    *d = (int)(doy - (153 * mp + 2) / 5 + 1);
    *m = (int)(mp < 10 ? mp + 3 : mp - 9);
    *y = (int)(yoe + era * 400 + (*m <= 2));
}

/* Unix seconds as kcost.utc.iso_time writes them (to the millisecond, the microseconds rounded half to even as
 * datetime rounds a float's), quoted; null for None; outside the years it works out itself, by `times` */
static int put_time(KcBytes *b, PyObject *t, PyObject *times) {
    if (t == Py_None) return PUT(b, "null");
    double seconds = PyFloat_AsDouble(t);
    if (seconds == -1.0 && PyErr_Occurred()) return -1;
    double whole, fraction = modf(seconds, &whole);
    int64_t micro = 0, second = 0;
    int mine = seconds >= 0 && seconds < TIME_END;
    if (mine) {
        micro = (int64_t)nearbyint(fraction * 1e6); /* round(): half to even */
        second = (int64_t)whole;
        if (micro >= 1000000) {
            second += 1;
            micro -= 1000000;
        }
    }
    if (!mine) { /* as kcost.utc writes it, or raises */
        PyObject *s = PyObject_CallOneArg(times, t);
        if (!s) return -1;
        int r = put_text(b, s);
        Py_DECREF(s);
        return r;
    }
    int y, m, d;
    civil(second / DAY, &y, &m, &d);
    second %= DAY;
    char text[40];
    int n = snprintf(text, sizeof text, "\"%04d-%02d-%02dT%02d:%02d:%02d.%03dZ\"", y, m, d, (int)(second / 3600),
                     (int)(second / 60 % 60), (int)(second % 60), (int)(micro / 1000));
    return kc_put(b, text, n);
}

/* ---- the writer ------------------------------------------------------------------------------------------- */

typedef struct {
    PyObject *reason; /* a plain str */
    int64_t tokens;
} ReasonSum;

typedef struct { /* one set of rates a turn was billed at, and what was billed at it */
    Money hit, miss, output, five, hour; /* a token's */
    int64_t hits, misses, outputs, prompts, fives, hours; /* tokens */
    int uses_five, uses_hour; /* whether a write premium was priced at each rate */
    int n_reasons;
    ReasonSum reasons[REASONS];
} Rates;

typedef struct {
    PyObject_HEAD
    int charged, hour; /* the cache model bills writes; a write is kept an hour */
    PyObject *times, *floats; /* kcost.utc.iso_time, and orjson's text of a float */
    Rates *rates;
    Py_ssize_t n_rates, cap_rates;
    Money cumulative;
    int64_t turns, inputs, hits, outputs, written;
    KcBytes buf;
} Writer;

static PyObject *writer_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    static char *names[] = {"charged", "hour", "times", "floats", NULL};
    int charged, hour;
    PyObject *times, *floats;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "ppOO", names, &charged, &hour, &times, &floats)) return NULL;
    Writer *w = (Writer *)type->tp_alloc(type, 0);
    if (!w) return NULL;
    w->charged = charged;
    w->hour = hour;
    w->times = Py_NewRef(times);
    w->floats = Py_NewRef(floats);
    return (PyObject *)w;
}

static void writer_dealloc(Writer *w) {
    for (Py_ssize_t k = 0; k < w->n_rates; k++)
        for (int r = 0; r < w->rates[k].n_reasons; r++) Py_DECREF(w->rates[k].reasons[r].reason);
    PyMem_Free(w->rates);
    PyMem_Free(w->buf.p);
    Py_XDECREF(w->times);
    Py_XDECREF(w->floats);
    Py_TYPE(w)->tp_free((PyObject *)w);
}

/* a rate given as (whole dollars, and 1e-18 dollars from 0 to 1e18) */
static int money_of(PyObject *o, Money *out) {
    long long whole, fraction;
    if (!PyArg_ParseTuple(o, "LL", &whole, &fraction)) return -1;
    if (fraction < 0 || fraction >= 1000000000000000000ll || whole > ((long long)1 << 40) ||
        whole < -((long long)1 << 40)) {
        PyErr_SetString(BEYOND, "a rate past what the compiled writer holds");
        return -1;
    }
    *out = (Money)whole * 1000000000000000000ll + fraction;
    return 0;
}

/* rates(hit, miss, output, five, hour) -> their index: a token's rates, each as (whole dollars, 1e-18 dollars) */
static PyObject *writer_rates(Writer *w, PyObject *args) {
    PyObject *v[5];
    if (!PyArg_ParseTuple(args, "OOOOO", &v[0], &v[1], &v[2], &v[3], &v[4])) return NULL;
    Money m[5];
    for (int i = 0; i < 5; i++)
        if (money_of(v[i], &m[i]) < 0) return NULL;
    if (w->n_rates == w->cap_rates) {
        Py_ssize_t cap = w->cap_rates ? 2 * w->cap_rates : 4;
        Rates *grown = PyMem_Realloc(w->rates, sizeof(Rates) * (size_t)cap);
        if (!grown) return PyErr_NoMemory();
        w->rates = grown;
        w->cap_rates = cap;
    }
    Rates *r = &w->rates[w->n_rates];
    memset(r, 0, sizeof *r);
    r->hit = m[0];
    r->miss = m[1];
    r->output = m[2];
    r->five = m[3];
    r->hour = m[4];
    return PyLong_FromSsize_t(w->n_rates++);
}

/* the tokens of one miss part, summed under its cause at rates r */
static int tally(Rates *r, PyObject *reason, int64_t tokens) {
    for (int i = 0; i < r->n_reasons; i++) {
        PyObject *held = r->reasons[i].reason;
        int same = held == reason;
        if (!same) {
            same = PyUnicode_Compare(held, reason) == 0;
            if (PyErr_Occurred()) return -1;
        }
        if (same) {
            r->reasons[i].tokens += tokens;
            return 0;
        }
    }
    if (r->n_reasons == REASONS) {
        PyErr_SetString(PyExc_ValueError, "more causes of misses than the compiled writer holds");
        return -1;
    }
    PyObject *plain = PyUnicode_FromObject(reason); /* the enum's value as a str */
    if (!plain) return -1;
    r->reasons[r->n_reasons].reason = plain;
    r->reasons[r->n_reasons++].tokens = tokens;
    return 0;
}

typedef struct {
    PyObject *reason;
    int64_t tokens, at;
} Part;

#define PARTS_HELD 8 /* a turn's parts held on the stack; more are rare */

/* turn(number, label, prompt, hit, output, misses, time, model, priced, stored, kept_1h, check, rates) -> str:
 * the turn's JSON text; misses: its outcome's MissParts, None for the one part a reported turn has */
static PyObject *writer_turn(Writer *w, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 13) {
        PyErr_SetString(PyExc_TypeError, "turn() takes 13 arguments");
        return NULL;
    }
    PyObject *label = args[1], *misses = args[5], *time = args[6], *model = args[7], *priced = args[8],
             *kept_arg = args[10], *check = args[11];
    int64_t number, prompt, hit, output, stored, kept = 0;
    Py_ssize_t at_rates = PyLong_AsSsize_t(args[12]);
    if (at_rates == -1 && PyErr_Occurred()) return NULL;
    if (at_rates < 0 || at_rates >= w->n_rates) {
        PyErr_SetString(PyExc_IndexError, "no such rates");
        return NULL;
    }
    if (count_of(args[0], &number) < 0 || count_of(args[2], &prompt) < 0 || count_of(args[3], &hit) < 0 ||
        count_of(args[4], &output) < 0 || count_of(args[9], &stored) < 0 ||
        (kept_arg != Py_None && count_of(kept_arg, &kept) < 0))
        return NULL;
    Rates *r = &w->rates[at_rates];
    Part held[PARTS_HELD], *parts = held;
    Py_ssize_t n_parts = 0;
    PyObject *seq = NULL, *result = NULL;
    if (misses == Py_None) { /* billed as reported: the log's misses, of no known cause */
        if (prompt != hit) {
            held[0] = (Part){REPORTED, prompt - hit, hit};
            n_parts = 1;
        }
    } else {
        seq = PySequence_Fast(misses, "the misses");
        if (!seq) return NULL;
        n_parts = PySequence_Fast_GET_SIZE(seq);
        if (n_parts > PARTS_HELD && !(parts = PyMem_Malloc(sizeof(Part) * (size_t)n_parts))) {
            Py_DECREF(seq);
            return PyErr_NoMemory();
        }
        for (Py_ssize_t i = 0; i < n_parts; i++) parts[i].reason = NULL; /* each held until done */
        for (Py_ssize_t i = 0; i < n_parts; i++) {
            PyObject *m = PySequence_Fast_GET_ITEM(seq, i), *reason = PyObject_GetAttr(m, S_REASON);
            if (!reason) goto done;
            parts[i].reason = reason;
            if (!PyUnicode_Check(reason)) {
                PyErr_SetString(PyExc_TypeError, "a miss part's reason is a str");
                goto done;
            }
            if (attr_count(m, S_TOKENS, &parts[i].tokens) < 0 || attr_count(m, S_AT, &parts[i].at) < 0) goto done;
        }
    }
    Money hit_cost = 0, miss_cost = 0, output_cost = 0, premium = 0, total = 0;
    if (add_product(&hit_cost, hit, r->hit) < 0 || add_product(&miss_cost, prompt - hit, r->miss) < 0 ||
        add_product(&output_cost, output, r->output) < 0)
        goto done;
    int uses_five = 0, uses_hour = 0;
    if (w->charged) {
        if (kept_arg != Py_None) {
            uses_five = uses_hour = 1;
            if (add_product(&premium, stored - kept, r->five) < 0 || add_product(&premium, kept, r->hour) < 0)
                goto done;
        } else if (w->hour) {
            uses_hour = 1;
            if (add_product(&premium, stored, r->hour) < 0) goto done;
        } else {
            uses_five = 1;
            if (add_product(&premium, stored, r->five) < 0) goto done;
        }
    }
    if (add(&total, hit_cost) < 0 || add(&total, miss_cost) < 0 || add(&total, premium) < 0 ||
        add(&total, output_cost) < 0)
        goto done;
    Money cumulative = w->cumulative;
    if (add(&cumulative, total) < 0) goto done;
    /* the costliest cause: the one part's, else the largest of those not new input (the first of equals) */
    PyObject *main = NULL;
    if (n_parts == 1) {
        main = parts[0].reason;
    } else {
        int64_t most = -1;
        for (Py_ssize_t i = 0; i < n_parts; i++) {
            int new_input = PyUnicode_CompareWithASCIIString(parts[i].reason, "new-input") == 0;
            if (!new_input && parts[i].tokens > most) {
                most = parts[i].tokens;
                main = parts[i].reason;
            }
        }
    }
    KcBytes *b = &w->buf;
    b->n = 0;
    if (PUT(b, "{\n  \"turn\": ") < 0 || put_i64(b, number) < 0 || PUT(b, ",\n  \"label\": ") < 0 ||
        put_text(b, label) < 0 || PUT(b, ",\n  \"input_tokens\": ") < 0 || put_i64(b, prompt) < 0 ||
        PUT(b, ",\n  \"hit_tokens\": ") < 0 || put_i64(b, hit) < 0 || PUT(b, ",\n  \"miss_tokens\": ") < 0 ||
        put_i64(b, prompt - hit) < 0 || PUT(b, ",\n  \"output_tokens\": ") < 0 || put_i64(b, output) < 0 ||
        PUT(b, ",\n  \"hit_rate\": ") < 0 || put_rate(b, hit, prompt, w->floats) < 0 ||
        PUT(b, ",\n  \"hit_cost\": ") < 0 || put_money(b, hit_cost) < 0 || PUT(b, ",\n  \"miss_cost\": ") < 0 ||
        put_money(b, miss_cost) < 0 || PUT(b, ",\n  \"output_cost\": ") < 0 || put_money(b, output_cost) < 0 ||
        PUT(b, ",\n  \"total\": ") < 0 || put_money(b, total) < 0 || PUT(b, ",\n  \"cumulative\": ") < 0 ||
        put_money(b, cumulative) < 0 || PUT(b, ",\n  \"reason\": ") < 0)
        goto done;
    if ((main ? put_text(b, main) : n_parts ? PUT(b, "\"new-input\"") : PUT(b, "\"\"")) < 0) goto done;
    if (PUT(b, ",\n  \"misses\": ") < 0 || (!n_parts && PUT(b, "[]") < 0)) goto done;
    for (Py_ssize_t i = 0; i < n_parts; i++) {
        Money c = 0;
        if (add_product(&c, parts[i].tokens, r->miss) < 0) goto done;
        if ((i ? PUT(b, ",\n    {\n      \"reason\": ") : PUT(b, "[\n    {\n      \"reason\": ")) < 0 ||
            put_text(b, parts[i].reason) < 0 || PUT(b, ",\n      \"tokens\": ") < 0 ||
            put_i64(b, parts[i].tokens) < 0 || PUT(b, ",\n      \"at\": ") < 0 || put_i64(b, parts[i].at) < 0 ||
            PUT(b, ",\n      \"cost\": ") < 0 || put_money(b, c) < 0 || PUT(b, "\n    }") < 0)
            goto done;
    }
    if ((n_parts && PUT(b, "\n  ]") < 0) || PUT(b, ",\n  \"check\": ") < 0) goto done;
    if (check == Py_None) {
        if (PUT(b, "null") < 0) goto done;
    } else {
        int64_t a, c, s;
        PyObject *agree = PyObject_GetAttr(check, S_AGREE);
        if (!agree) goto done;
        int yes = PyObject_IsTrue(agree);
        Py_DECREF(agree);
        if (yes < 0 || attr_count(check, S_REPORTED_INPUT, &a) < 0 || attr_count(check, S_REPORTED_CACHED, &c) < 0 ||
            attr_count(check, S_SIMULATED_CACHED, &s) < 0)
            goto done;
        if (PUT(b, "{\n    \"reported_input_tokens\": ") < 0 || put_i64(b, a) < 0 ||
            PUT(b, ",\n    \"reported_cached_tokens\": ") < 0 || put_i64(b, c) < 0 ||
            PUT(b, ",\n    \"simulated_cached_tokens\": ") < 0 || put_i64(b, s) < 0 ||
            PUT(b, ",\n    \"agree\": ") < 0 || (yes ? PUT(b, "true") : PUT(b, "false")) < 0 || PUT(b, "\n  }") < 0)
            goto done;
    }
    if (PUT(b, ",\n  \"time\": ") < 0 || put_time(b, time, w->times) < 0 || PUT(b, ",\n  \"logged_model\": ") < 0 ||
        put_text(b, model) < 0 || PUT(b, ",\n  \"priced_model\": ") < 0 || put_text(b, priced) < 0 ||
        PUT(b, ",\n  \"written_tokens\": ") < 0 || put_i64(b, stored) < 0 || PUT(b, ",\n  \"write_premium\": ") < 0 ||
        put_money(b, premium) < 0 || PUT(b, "\n}") < 0)
        goto done;
    result = PyUnicode_DecodeUTF8(b->p, b->n, NULL);
    if (!result) goto done;
    /* written: the turn counts */
    for (Py_ssize_t i = 0; i < n_parts; i++)
        if (tally(r, parts[i].reason, parts[i].tokens) < 0) {
            Py_CLEAR(result);
            goto done;
        }
    w->cumulative = cumulative;
    w->turns++;
    w->inputs += prompt;
    w->hits += hit;
    w->outputs += output;
    w->written += stored;
    r->hits += hit;
    r->misses += prompt - hit;
    r->outputs += output;
    r->prompts += prompt;
    r->fives += uses_five ? (kept_arg != Py_None ? stored - kept : stored) : 0;
    r->hours += uses_hour ? (kept_arg != Py_None ? kept : stored) : 0;
    r->uses_five |= uses_five;
    r->uses_hour |= uses_hour;
done:
    if (seq)
        for (Py_ssize_t i = 0; i < n_parts; i++) Py_XDECREF(parts[i].reason);
    if (parts != held) PyMem_Free(parts);
    Py_XDECREF(seq);
    return result;
}

/* sums() -> (turns, inputs, hits, outputs, written, per rates: (hits, misses, outputs, prompts, fives, hours,
 * uses_five, uses_hour, ((cause, tokens), ...))) */
static PyObject *writer_sums(Writer *w, PyObject *unused) {
    (void)unused;
    PyObject *per = PyTuple_New(w->n_rates);
    if (!per) return NULL;
    for (Py_ssize_t k = 0; k < w->n_rates; k++) {
        Rates *r = &w->rates[k];
        PyObject *causes = PyTuple_New(r->n_reasons);
        if (!causes) goto fail;
        for (int i = 0; i < r->n_reasons; i++) {
            PyObject *one = Py_BuildValue("(OL)", r->reasons[i].reason, (long long)r->reasons[i].tokens);
            if (!one) {
                Py_DECREF(causes);
                goto fail;
            }
            PyTuple_SET_ITEM(causes, i, one);
        }
        PyObject *row = Py_BuildValue("(LLLLLLNNN)", (long long)r->hits, (long long)r->misses, (long long)r->outputs,
                                      (long long)r->prompts, (long long)r->fives, (long long)r->hours,
                                      PyBool_FromLong(r->uses_five), PyBool_FromLong(r->uses_hour), causes);
        if (!row) goto fail;
        PyTuple_SET_ITEM(per, k, row);
    }
    return Py_BuildValue("(LLLLLN)", (long long)w->turns, (long long)w->inputs, (long long)w->hits,
                         (long long)w->outputs, (long long)w->written, per);
fail:
    Py_DECREF(per);
    return NULL;
}

static PyMethodDef WRITER_METHODS[] = {
    {"rates", (PyCFunction)writer_rates, METH_VARARGS,
     "rates(hit, miss, output, five, hour) -> int: a token's rates, each (dollars, 1e-18 dollars); their index"},
    {"turn", (PyCFunction)(void (*)(void))writer_turn, METH_FASTCALL,
     "turn(number, label, prompt, hit, output, misses, time, model, priced, stored, kept_1h, check, rates) -> str"},
    {"sums", (PyCFunction)writer_sums, METH_NOARGS, "sums() -> the turns' counts, and the tokens at each rates"},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject WRITER = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "kcost._turns.Writer",
    .tp_basicsize = sizeof(Writer),
    .tp_dealloc = (destructor)writer_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Writer(charged, hour, times, floats): one session's turns written and summed",
    .tp_methods = WRITER_METHODS,
    .tp_new = writer_new,
};

static struct PyModuleDef MODULE = {PyModuleDef_HEAD_INIT, "_turns", "A bill's turns written as JSON, compiled.", -1,
                                    NULL, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__turns(void) {
    if (PyType_Ready(&WRITER) < 0) return NULL;
    const KcName names[] = {{&S_REASON, "reason"},
                            {&S_TOKENS, "tokens"},
                            {&S_AT, "at"},
                            {&S_REPORTED_INPUT, "reported_input_tokens"},
                            {&S_REPORTED_CACHED, "reported_cached_tokens"},
                            {&S_SIMULATED_CACHED, "simulated_cached_tokens"},
                            {&S_AGREE, "agree"},
                            {&REPORTED, "reported"}};
    if (kc_intern(names, sizeof names / sizeof names[0]) < 0) return NULL;
    BEYOND = PyErr_NewException("kcost._turns.Beyond", PyExc_ArithmeticError, NULL);
    if (!BEYOND) return NULL;
    PyObject *m = PyModule_Create(&MODULE);
    if (!m) return NULL;
    if (PyModule_AddObjectRef(m, "Writer", (PyObject *)&WRITER) < 0 || PyModule_AddObjectRef(m, "Beyond", BEYOND) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
