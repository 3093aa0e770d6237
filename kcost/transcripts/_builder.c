/* The prompt builder, compiled (`kcost.transcripts.prompts.Builder`, written again rule for rule): each call's
 * prompt as parts, compared with the previous call's, into the `Shape` calibration sizes. The prompt's parts, what
 * each is and where each message's parts end are kept in arrays here; a part's id is the builder's `Parts`' own
 * (its `ids` by content, looked up here, a new part rendered by `kcost.transcripts.chat_format` and counted by
 * `Parts.seg`); a call's leading parts are made by the module's `_made_head`, and a change worth naming is named
 * by its `_changed`. The Python builder is the fallback where this module is not built (or a `Parts` of another
 * class keys its parts otherwise: the live view's), and the oracle the tests hold it to.
 */
#include "../_compiled.h"

#define LOOKAHEAD 3 /* prompts._LOOKAHEAD */

/* ---- what the module is given once (setup) ----------------------------------------------------------------- */

enum { F_KEEP, F_NEW, F_TURN, F_REPLY, F_REPLY_TOKENS, F_OUTPUT, F_USAGE, F_TIME, F_PREFIX, F_CHANGE, F_LINE, FIELDS };
static const char *const SHAPE_NAMES[FIELDS] = {"keep",  "new",  "turn",   "reply",  "reply_tokens", "output",
                                          "usage", "time", "prefix", "change", "line"};
static KcLayout SHAPE;
/* chat_format.assistant_body and .message; prompts._made_head, ._changed and ._Where; the generation's _Where */
static PyObject *ASSISTANT_BODY, *MESSAGE, *MADE_HEAD, *CHANGED, *WHERE, *GENERATION;
static PyObject *MESSAGE_FIELDS, *CALL_FIELDS; /* the names of a Message's and a ToolCall's fields, in order */
static Py_ssize_t AT_TOOL_CALLS; /* tool_calls among the first */
static PyObject *S_ASSISTANT, *S_MESSAGE, *S_SYSTEM, *S_TOOL, *S_EMPTY, *S_GENERATION_KIND, *S_SEG, *S_IDS,
    *S_ESTIMATES, *S_COUNTER, *S_COUNT, *S_MESSAGES, *S_UNLOGGED, *S_TOOLS, *S_EFFORT, *S_OUTPUT, *S_REPORTED,
    *S_TIME, *S_LINE, *S_ROLE, *S_PARTIAL, *S_TOOL_CALLS, *S_TOOL_CALL_ID, *S_ID, *S_NAME, *S_REASONING, *S_KIND,
    *S_NUMBER, *S_AGENT;
static int READY;

/* ---- what each part of the prompt is (prompts._Where) ------------------------------------------------------ */

typedef struct {
    PyObject *kind; /* a str: tools, effort, system, unlogged, message or generation */
    int64_t number; /* a message's, from 1; -1 */
    PyObject *message, *agent; /* or NULL */
} Where;

static void where_clear(Where *w) {
    Py_CLEAR(w->kind);
    Py_CLEAR(w->message);
    Py_CLEAR(w->agent);
}

static int is_generation(const Where *w) {
    return w->kind == S_GENERATION_KIND || PyUnicode_Compare(w->kind, S_GENERATION_KIND) == 0;
}

/* a _Where as Python holds one */
static PyObject *where_object(const Where *w) {
    return PyObject_CallFunction(WHERE, "OLOO", w->kind, (long long)w->number, w->message ? w->message : Py_None,
                                 w->agent ? w->agent : Py_None);
}

/* a _Where read from its Python object */
static int where_of(PyObject *o, Where *w) {
    PyObject *kind = PyObject_GetAttr(o, S_KIND), *number = kind ? PyObject_GetAttr(o, S_NUMBER) : NULL;
    PyObject *message = number ? PyObject_GetAttr(o, S_MESSAGE) : NULL;
    PyObject *agent = message ? PyObject_GetAttr(o, S_AGENT) : NULL;
    int r = -1;
    if (agent) {
        long long n = PyLong_AsLongLong(number);
        if (!(n == -1 && PyErr_Occurred())) {
            w->kind = Py_NewRef(kind);
            w->number = n;
            w->message = message == Py_None ? NULL : Py_NewRef(message);
            w->agent = agent == Py_None ? NULL : Py_NewRef(agent);
            r = 0;
        }
    }
    Py_XDECREF(kind);
    Py_XDECREF(number);
    Py_XDECREF(message);
    Py_XDECREF(agent);
    return r;
}

/* ---- the builder ---------------------------------------------------------------------------------------------- */

typedef struct {
    PyObject_HEAD
    PyObject *parts, *ids, *estimates, *seg; /* the Parts, its ids and estimates, its bound seg */
    PyObject *heads, *replies; /* the heads made (Builder._heads), each agent's last reply (Builder.replies) */
    int64_t header; /* the part of the assistant header */
    int first;
    PyObject *agent, *last_output, *last_output_seg, *last_usage;
    /* the latest prompt (prompts._Prompt) */
    PyObject *head; /* the identity of its leading parts */
    int64_t head_parts;
    PyObject *messages;
    KcInts segs, after, turn;
    Where *where;
    Py_ssize_t n_where, cap_where;
    PyObject **names; /* per message: tool call id -> (name, index) */
    Py_ssize_t n_names, cap_names;
    int closed;
} Builder;

static void truncate_where(Builder *b, Py_ssize_t n) {
    while (b->n_where > n) where_clear(&b->where[--b->n_where]);
}

static void truncate_names(Builder *b, Py_ssize_t n) {
    while (b->n_names > n) {
        b->n_names--;
        Py_CLEAR(b->names[b->n_names]); /* a macro: its argument read more than once */
    }
}

static int push_where(Builder *b, PyObject *kind, int64_t number, PyObject *message, PyObject *agent) {
    if (kc_grow((void **)&b->where, &b->cap_where, b->n_where + 1, sizeof(Where)) < 0) return -1;
    Where *w = &b->where[b->n_where++];
    w->kind = Py_NewRef(kind);
    w->number = number;
    w->message = message ? Py_NewRef(message) : NULL;
    w->agent = agent ? Py_NewRef(agent) : NULL;
    return 0;
}

static int push_names(Builder *b, PyObject *names) {
    if (kc_grow((void **)&b->names, &b->cap_names, b->n_names + 1, sizeof(PyObject *)) < 0) return -1;
    b->names[b->n_names++] = Py_NewRef(names);
    return 0;
}

/* prompts.identity: a message's fields' values in order, each tool call's as a tuple of its own */
static PyObject *identity(PyObject *m) {
    Py_ssize_t n = PyTuple_GET_SIZE(MESSAGE_FIELDS);
    PyObject *out = PyTuple_New(n);
    if (!out) return NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *v = PyObject_GetAttr(m, PyTuple_GET_ITEM(MESSAGE_FIELDS, i));
        if (v && i == AT_TOOL_CALLS) {
            PyObject *seq = PySequence_Fast(v, "tool calls");
            Py_SETREF(v, seq ? PyTuple_New(PySequence_Fast_GET_SIZE(seq)) : NULL);
            for (Py_ssize_t c = 0; v && c < PySequence_Fast_GET_SIZE(seq); c++) {
                Py_ssize_t k = PyTuple_GET_SIZE(CALL_FIELDS);
                PyObject *call = PySequence_Fast_GET_ITEM(seq, c), *values = PyTuple_New(k);
                for (Py_ssize_t j = 0; values && j < k; j++) {
                    PyObject *x = PyObject_GetAttr(call, PyTuple_GET_ITEM(CALL_FIELDS, j));
                    if (!x) Py_CLEAR(values); else PyTuple_SET_ITEM(values, j, x);
                }
                if (!values) Py_CLEAR(v); else PyTuple_SET_ITEM(v, c, values);
            }
            Py_XDECREF(seq);
        }
        if (!v) {
            Py_DECREF(out);
            return NULL;
        }
        PyTuple_SET_ITEM(out, i, v);
    }
    return out;
}

/* a part's key: (kind, the message's identity) or (kind, identity, tool) */
static PyObject *message_key(PyObject *kind, PyObject *m, PyObject *tool) {
    PyObject *id = identity(m);
    if (!id) return NULL;
    PyObject *key = tool ? PyTuple_Pack(3, kind, id, tool) : PyTuple_Pack(2, kind, id);
    Py_DECREF(id);
    return key;
}

/* Parts.seg: the part's id by its content (`key`), made (rendered by render(*args) and counted) where new */
static int64_t part(Builder *b, PyObject *key, PyObject *render, PyObject *a, PyObject *c) {
    PyObject *held = PyDict_GetItemWithError(b->ids, key);
    if (!held) {
        if (PyErr_Occurred()) return -1;
        PyObject *pieces = c ? PyObject_CallFunctionObjArgs(render, a, c, NULL) : PyObject_CallOneArg(render, a);
        if (!pieces) return -1;
        PyObject *made = PyObject_CallFunctionObjArgs(b->seg, key, pieces, NULL);
        Py_DECREF(pieces);
        if (!made) return -1;
        long long id = PyLong_AsLongLong(made);
        Py_DECREF(made);
        return id;
    }
    return PyLong_AsLongLong(held);
}

/* a str attribute's truthiness, or None's: 1, 0, -1 on error */
static int truthy_attr(PyObject *o, PyObject *name) {
    PyObject *v = PyObject_GetAttr(o, name);
    if (!v) return -1;
    int r = PyObject_IsTrue(v);
    Py_DECREF(v);
    return r;
}

static int role_is(PyObject *m, PyObject *role) {
    PyObject *v = PyObject_GetAttr(m, S_ROLE);
    if (!v) return -1;
    int r = PyObject_RichCompareBool(v, role, Py_EQ);
    Py_DECREF(v);
    return r;
}

/* Builder._message: message i of the prompt, its parts laid after those before it */
static int message(Builder *b, Py_ssize_t i, PyObject *m) {
    PyObject *names = b->n_names ? b->names[b->n_names - 1] : NULL;
    int64_t turn = b->turn.n ? b->turn.v[b->turn.n - 1] : b->head_parts;
    PyObject *made_names = NULL;
    int assistant = role_is(m, S_ASSISTANT);
    if (assistant < 0) return -1;
    if (assistant) {
        PyObject *key = message_key(S_ASSISTANT, m, NULL);
        if (!key) return -1;
        int64_t id = part(b, key, ASSISTANT_BODY, m, NULL);
        Py_DECREF(key);
        if (id < 0 && PyErr_Occurred()) return -1;
        if (kc_push(&b->segs, b->header) < 0 || kc_push(&b->segs, id) < 0 ||
            push_where(b, S_MESSAGE, i + 1, m, NULL) < 0 || push_where(b, S_MESSAGE, i + 1, m, NULL) < 0)
            return -1;
        PyObject *calls = PyObject_GetAttr(m, S_TOOL_CALLS);
        if (!calls) return -1;
        PyObject *seq = PySequence_Fast(calls, "tool calls");
        Py_DECREF(calls);
        if (!seq || !(made_names = PyDict_New())) {
            Py_XDECREF(seq);
            return -1;
        }
        for (Py_ssize_t n = 0; n < PySequence_Fast_GET_SIZE(seq); n++) {
            PyObject *c = PySequence_Fast_GET_ITEM(seq, n);
            PyObject *id_ = PyObject_GetAttr(c, S_ID), *name = id_ ? PyObject_GetAttr(c, S_NAME) : NULL;
            PyObject *value = name ? Py_BuildValue("(On)", name, n + 1) : NULL;
            int bad = !value || PyDict_SetItem(made_names, id_, value) < 0;
            Py_XDECREF(id_);
            Py_XDECREF(name);
            Py_XDECREF(value);
            if (bad) {
                Py_DECREF(seq);
                Py_DECREF(made_names);
                return -1;
            }
        }
        Py_DECREF(seq);
        names = made_names;
        turn = b->segs.n;
    } else {
        PyObject *tool = Py_None;
        int is_tool = role_is(m, S_TOOL);
        if (is_tool < 0) return -1;
        if (is_tool && names) {
            PyObject *id_ = PyObject_GetAttr(m, S_TOOL_CALL_ID);
            if (!id_) return -1;
            int set = PyObject_IsTrue(id_);
            PyObject *found = set < 0 ? NULL : PyDict_GetItemWithError(names, set ? id_ : S_EMPTY);
            Py_DECREF(id_);
            if (set < 0 || (!found && PyErr_Occurred())) return -1;
            if (found) tool = found;
        }
        PyObject *key = message_key(S_MESSAGE, m, tool);
        if (!key) return -1;
        int64_t id = part(b, key, MESSAGE, m, tool);
        Py_DECREF(key);
        if (id < 0 && PyErr_Occurred()) return -1;
        int system = role_is(m, S_SYSTEM);
        if (system < 0 || kc_push(&b->segs, id) < 0 || push_where(b, system ? S_SYSTEM : S_MESSAGE, i + 1, m, NULL) < 0)
            return -1;
    }
    int r = kc_push(&b->after, b->segs.n) < 0 || kc_push(&b->turn, turn) < 0 ? -1 : 0;
    if (r == 0) {
        if (names) {
            r = push_names(b, names);
        } else { /* the first message, no assistant before it: an empty mapping */
            PyObject *empty = PyDict_New();
            r = empty ? push_names(b, empty) : -1;
            Py_XDECREF(empty);
        }
    }
    Py_XDECREF(made_names);
    return r;
}

/* Builder._head: the call's head (its identity, and its parts as (key, render, what)), made once a head */
static PyObject *head_of(Builder *b, PyObject *call, PyObject *unlogged, PyObject *tools) {
    PyObject *effort = PyObject_GetAttr(call, S_EFFORT), *system = effort ? PyObject_GetAttr(call, S_SYSTEM) : NULL;
    PyObject *id = system ? PyLong_FromVoidPtr(tools) : NULL;
    PyObject *key = id ? PyTuple_Pack(4, unlogged, id, effort, system) : NULL;
    Py_XDECREF(effort);
    Py_XDECREF(system);
    Py_XDECREF(id);
    if (!key) return NULL;
    PyObject *held = PyDict_GetItemWithError(b->heads, key);
    if (held && PyTuple_Check(held) && PyTuple_GET_SIZE(held) == 2 && PyTuple_GET_ITEM(held, 0) == tools) {
        Py_DECREF(key);
        return Py_NewRef(PyTuple_GET_ITEM(held, 1));
    }
    PyObject *made = PyErr_Occurred() ? NULL : PyObject_CallFunctionObjArgs(MADE_HEAD, b->parts, call, NULL);
    PyObject *pair = made ? PyTuple_Pack(2, tools, made) : NULL;
    int bad = !pair || PyDict_SetItem(b->heads, key, pair) < 0;
    Py_DECREF(key);
    Py_XDECREF(pair);
    if (bad) Py_CLEAR(made);
    return made;
}

/* Builder._rebuild: the prompt from part `kept` (message k) on, a new head first where given */
static int rebuild(Builder *b, PyObject *messages, Py_ssize_t k, Py_ssize_t kept, PyObject *head) {
    b->segs.n = kept < b->segs.n ? kept : b->segs.n;
    truncate_where(b, kept);
    if (b->after.n > k) b->after.n = k;
    if (b->turn.n > k) b->turn.n = k;
    truncate_names(b, k);
    if (head) {
        PyObject *identity = PyTuple_GET_ITEM(head, 0), *parts = PySequence_Fast(PyTuple_GET_ITEM(head, 1), "parts");
        if (!parts) return -1;
        Py_SETREF(b->head, Py_NewRef(identity));
        for (Py_ssize_t j = 0; j < PySequence_Fast_GET_SIZE(parts); j++) {
            PyObject *item = PySequence_Fast_GET_ITEM(parts, j);
            if (!PyTuple_Check(item) || PyTuple_GET_SIZE(item) != 3) {
                Py_DECREF(parts);
                PyErr_SetString(PyExc_TypeError, "a head's part is (key, render, what)");
                return -1;
            }
            PyObject *id = PyObject_CallFunctionObjArgs(b->seg, PyTuple_GET_ITEM(item, 0), PyTuple_GET_ITEM(item, 1),
                                                        NULL);
            long long seg = id ? PyLong_AsLongLong(id) : -1;
            Py_XDECREF(id);
            if ((seg == -1 && PyErr_Occurred()) || kc_push(&b->segs, seg) < 0 ||
                kc_grow((void **)&b->where, &b->cap_where, b->n_where + 1, sizeof(Where)) < 0 ||
                where_of(PyTuple_GET_ITEM(item, 2), &b->where[b->n_where]) < 0) {
                Py_DECREF(parts);
                return -1;
            }
            b->n_where++;
        }
        Py_DECREF(parts);
        b->head_parts = b->segs.n;
    }
    Py_ssize_t n = PyTuple_GET_SIZE(messages);
    for (Py_ssize_t i = k; i < n; i++)
        if (message(b, i, PyTuple_GET_ITEM(messages, i)) < 0) return -1;
    Py_SETREF(b->messages, Py_NewRef(messages));
    b->closed = 1;
    if (n) {
        PyObject *last = PyTuple_GET_ITEM(messages, n - 1);
        int assistant = role_is(last, S_ASSISTANT);
        int partial = assistant > 0 ? truthy_attr(last, S_PARTIAL) : 0;
        if (assistant < 0 || partial < 0) return -1;
        b->closed = !(assistant && partial);
    }
    return 0;
}

/* the sent prompt's part i (the header that opens the reply closing a closed one) */
static int64_t sent_seg(const Builder *b, Py_ssize_t i) { return i < b->segs.n ? b->segs.v[i] : b->header; }

static Py_ssize_t sent_len(const Builder *b) { return b->segs.n + (b->closed ? 1 : 0); }

/* the sent prompt's part i, what it is */
static const Where *sent_where(const Builder *b, Py_ssize_t i, const Where *generation) {
    return i < b->n_where ? &b->where[i] : generation;
}

/* Builder._output: the part of the call's reply, where the log has one (-1: none) */
static int64_t output_of(Builder *b, PyObject *call, PyObject *output) {
    if (output == Py_None) return -1;
    int assistant = role_is(output, S_ASSISTANT);
    if (assistant <= 0) return assistant < 0 ? -2 : -1;
    PyObject *key = message_key(S_ASSISTANT, output, NULL);
    if (!key) return -2;
    int64_t id = part(b, key, ASSISTANT_BODY, output, NULL);
    Py_DECREF(key);
    return id < 0 && PyErr_Occurred() ? -2 : id;
}

static PyObject *long_or_none(int64_t v) { return v < 0 ? Py_NewRef(Py_None) : PyLong_FromLongLong(v); }

/* Builder._reply_tokens: what the log says the previous reply cost as sent back (-1: unknown; -2: error) */
static int64_t reply_tokens(Builder *b, const Where *sent, int64_t reply) {
    PyObject *usage = b->last_usage, *last = b->last_output;
    if (reply < 0 || usage == Py_None || last == Py_None) return -1;
    PyObject *value = PyObject_GetAttr(usage, S_OUTPUT);
    long long tokens = value ? PyLong_AsLongLong(value) : -1;
    Py_XDECREF(value);
    if (tokens == -1 && PyErr_Occurred()) return -2;
    int thought = truthy_attr(last, S_REASONING);
    if (thought < 0) return -2;
    if (thought && sent->message) {
        int kept = truthy_attr(sent->message, S_REASONING);
        if (kept < 0) return -2;
        if (!kept) {
            PyObject *r = PyObject_GetAttr(usage, S_REASONING);
            if (!r) return -2;
            if (r != Py_None) {
                long long n = PyLong_AsLongLong(r);
                Py_DECREF(r);
                if (n == -1 && PyErr_Occurred()) return -2;
                tokens -= n;
            } else if (b->last_output_seg != Py_None) {
                Py_DECREF(r);
                PyObject *estimate = PyObject_GetItem(b->estimates, b->last_output_seg);
                long long whole = estimate ? PyLong_AsLongLong(estimate) : -1;
                Py_XDECREF(estimate);
                if (whole == -1 && PyErr_Occurred()) return -2;
                if (whole < 1) whole = 1;
                PyObject *counter = PyObject_GetAttr(b->parts, S_COUNTER);
                PyObject *reasoning = counter ? PyObject_GetAttr(last, S_REASONING) : NULL;
                PyObject *counted = reasoning ? PyObject_CallMethodOneArg(counter, S_COUNT, reasoning) : NULL;
                Py_XDECREF(counter);
                Py_XDECREF(reasoning);
                long long n = counted ? PyLong_AsLongLong(counted) : -1;
                Py_XDECREF(counted);
                if (n == -1 && PyErr_Occurred()) return -2;
                __int128 share = (__int128)tokens * n;
                long long cut = (long long)(share >= 0 ? share / whole : -((-share + whole - 1) / whole));
                tokens -= tokens < cut ? tokens : cut;
            } else {
                Py_DECREF(r);
            }
        }
    }
    return tokens > 0 ? tokens : 0;
}

/* add(call) -> Shape: Builder.add */
static PyObject *builder_add(Builder *b, PyObject *call) {
    /* the call's messages, unlogged, tools, output, reported, time and line; its head; its messages as a tuple */
    PyObject *f[9] = {NULL};
    PyObject *shape = NULL;
    PyObject **names[] = {&S_MESSAGES, &S_UNLOGGED, &S_TOOLS, &S_OUTPUT, &S_REPORTED, &S_TIME, &S_LINE};
    for (int i = 0; i < 7; i++)
        if (!(f[i] = PyObject_GetAttr(call, *names[i]))) goto done;
    PyObject *messages, *unlogged = f[1], *tools = f[2], *output = f[3], *reported = f[4], *time = f[5],
                        *line = f[6];
    int given = PyObject_IsTrue(f[0]); /* `call.messages or ()`, as a tuple */
    if (given < 0) goto done;
    messages = f[8] = given ? PySequence_Tuple(f[0]) : PyTuple_New(0);
    if (!messages) goto done;
    int first = b->first;
    Py_SETREF(b->agent, Py_NewRef(unlogged));
    PyObject *last = PyDict_GetItemWithError(b->replies, unlogged);
    if (!last && PyErr_Occurred()) goto done;
    if (last) {
        if (!PyTuple_Check(last) || PyTuple_GET_SIZE(last) != 3) {
            PyErr_SetString(PyExc_TypeError, "a reply is (message, part, usage)");
            goto done;
        }
        Py_SETREF(b->last_output, Py_NewRef(PyTuple_GET_ITEM(last, 0)));
        Py_SETREF(b->last_output_seg, Py_NewRef(PyTuple_GET_ITEM(last, 1)));
        Py_SETREF(b->last_usage, Py_NewRef(PyTuple_GET_ITEM(last, 2)));
    } else {
        Py_SETREF(b->last_output, Py_NewRef(Py_None));
        Py_SETREF(b->last_output_seg, Py_NewRef(Py_None));
        Py_SETREF(b->last_usage, Py_NewRef(Py_None));
    }
    Py_ssize_t previous_messages = PyTuple_GET_SIZE(b->messages);
    PyObject *head = f[7] = head_of(b, call, unlogged, tools);
    if (!head) goto done;
    if (!PyTuple_Check(head) || PyTuple_GET_SIZE(head) != 2) {
        PyErr_SetString(PyExc_TypeError, "a head is (identity, parts)");
        goto done;
    }
    int same_head = PyObject_RichCompareBool(PyTuple_GET_ITEM(head, 0), b->head, Py_EQ);
    if (same_head < 0) goto done;
    Py_ssize_t k = 0, kept = 0;
    if (same_head) { /* Builder._same_messages */
        Py_ssize_t n = PyTuple_GET_SIZE(b->messages), m = PyTuple_GET_SIZE(messages), most = n < m ? n : m;
        while (k < most) {
            int same = PyObject_RichCompareBool(PyTuple_GET_ITEM(messages, k), PyTuple_GET_ITEM(b->messages, k), Py_EQ);
            if (same < 0) goto done;
            if (!same) break;
            k++;
        }
        kept = k ? b->after.v[k - 1] : b->head_parts;
    }
    /* the previous prompt's parts from `kept` on, a few (_Prompt.tail), held as they were */
    int64_t before_seg[LOOKAHEAD + 1];
    Where before[LOOKAHEAD + 1];
    Py_ssize_t n_before = 0;
    Where generation = {S_GENERATION_KIND, -1, NULL, NULL};
    if (!first) {
        for (Py_ssize_t j = kept; j < b->segs.n && n_before < LOOKAHEAD; j++, n_before++) {
            before_seg[n_before] = b->segs.v[j];
            before[n_before] = b->where[j];
            Py_XINCREF(before[n_before].kind);
            Py_XINCREF(before[n_before].message);
            Py_XINCREF(before[n_before].agent);
        }
        if (b->closed && n_before < LOOKAHEAD && kept + n_before == b->segs.n) {
            before_seg[n_before] = b->header;
            before[n_before++] = (Where){Py_NewRef(S_GENERATION_KIND), -1, NULL, NULL};
        }
    }
    int r = rebuild(b, messages, k, kept, same_head ? NULL : head);
    Py_ssize_t keep_parts = kept, sent = sent_len(b);
    PyObject *change = NULL;
    if (r == 0) {
        for (Py_ssize_t j = 0; j < n_before && kept + j < sent && sent_seg(b, kept + j) == before_seg[j]; j++)
            keep_parts++; /* _same_parts */
        Py_ssize_t offset = keep_parts - kept;
        if (!first && offset < n_before && !is_generation(&before[offset])) { /* _change */
            PyObject *old = where_object(&before[offset]);
            PyObject *new_ =
                keep_parts < sent ? where_object(sent_where(b, keep_parts, &generation)) : Py_NewRef(Py_None);
            change = old && new_ ? PyObject_CallFunctionObjArgs(CHANGED, old, new_, NULL) : NULL;
            Py_XDECREF(old);
            Py_XDECREF(new_);
            if (!change) r = -1;
        }
    }
    for (Py_ssize_t j = 0; j < n_before; j++) where_clear(&before[j]);
    if (r < 0) goto done;
    int64_t turn_part = b->turn.n ? b->turn.v[b->turn.n - 1] : b->head_parts;
    int extends = !first && same_head && k == previous_messages && keep_parts - kept == n_before;
    int64_t reply = -1; /* Builder._previous_output */
    if (turn_part >= 2) {
        const Where *w = sent_where(b, turn_part - 1, &generation);
        if (w->message) {
            int same = 0;
            if (b->last_output != Py_None) {
                same = PyObject_RichCompareBool(w->message, b->last_output, Py_EQ);
                if (same < 0) goto fail_change;
            }
            if (same && turn_part - 1 >= keep_parts) {
                reply = turn_part - 1;
            } else if (extends && turn_part - 1 == keep_parts) {
                int assistant = role_is(w->message, S_ASSISTANT);
                if (assistant < 0) goto fail_change;
                if (assistant) reply = keep_parts;
            }
        }
    }
    int64_t out = output_of(b, call, output);
    if (out == -2) goto fail_change;
    int64_t tokens = reply_tokens(b, reply >= 0 ? sent_where(b, reply, &generation) : NULL, reply);
    if (tokens == -2) goto fail_change;
    Py_ssize_t from = first ? 0 : keep_parts;
    PyObject *new_parts = PyTuple_New(sent > from ? sent - from : 0);
    if (!new_parts) goto fail_change;
    for (Py_ssize_t j = from; j < sent; j++) {
        PyObject *id = PyLong_FromLongLong(sent_seg(b, j));
        if (!id) {
            Py_DECREF(new_parts);
            goto fail_change;
        }
        PyTuple_SET_ITEM(new_parts, j - from, id);
    }
    int timed = PyObject_IsTrue(time);
    if (timed < 0) {
        Py_DECREF(new_parts);
        goto fail_change;
    }
    PyObject *v[FIELDS] = {PyLong_FromSsize_t(first ? 0 : keep_parts),
                           new_parts,
                           PyLong_FromLongLong(turn_part),
                           long_or_none(reply),
                           long_or_none(tokens),
                           long_or_none(out),
                           Py_NewRef(reported),
                           timed ? Py_NewRef(time) : PyFloat_FromDouble(0.0),
                           Py_NewRef(unlogged),
                           change ? change : Py_NewRef(Py_None),
                           Py_NewRef(line)};
    change = NULL; /* the shape holds it */
    shape = kc_instance(&SHAPE, v, FIELDS);
    if (!shape) goto done;
    b->first = 0;
    PyObject *kept_reply = Py_BuildValue("(NNO)", Py_NewRef(output), long_or_none(out), reported);
    if (!kept_reply || PyDict_SetItem(b->replies, unlogged, kept_reply) < 0) Py_CLEAR(shape);
    Py_XDECREF(kept_reply);
    goto done;
fail_change:
    Py_XDECREF(change);
done:
    for (int i = 0; i < 9; i++) Py_XDECREF(f[i]);
    return shape;
}

/* attach(call) -> int | None: Builder.attach, a reply logged apart from its request */
static PyObject *builder_attach(Builder *b, PyObject *call) {
    PyObject *output = PyObject_GetAttr(call, S_OUTPUT), *reported = output ? PyObject_GetAttr(call, S_REPORTED) : NULL;
    PyObject *result = NULL;
    if (reported) {
        int64_t out = output_of(b, call, output);
        if (out != -2) {
            PyObject *kept = Py_BuildValue("(NNO)", Py_NewRef(output), long_or_none(out), reported);
            if (kept && PyDict_SetItem(b->replies, b->agent, kept) == 0) result = long_or_none(out);
            Py_XDECREF(kept);
        }
    }
    Py_XDECREF(output);
    Py_XDECREF(reported);
    return result;
}

static PyObject *builder_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    static char *kw[] = {"parts", "header", NULL};
    PyObject *parts;
    long long header;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OL", kw, &parts, &header)) return NULL;
    if (!READY) {
        PyErr_SetString(PyExc_RuntimeError, "setup() first");
        return NULL;
    }
    Builder *b = (Builder *)type->tp_alloc(type, 0);
    if (!b) return NULL;
    b->parts = Py_NewRef(parts);
    b->header = header;
    b->first = b->closed = 1;
    b->ids = PyObject_GetAttr(parts, S_IDS);
    b->estimates = b->ids ? PyObject_GetAttr(parts, S_ESTIMATES) : NULL;
    b->seg = b->estimates ? PyObject_GetAttr(parts, S_SEG) : NULL;
    b->heads = PyDict_New();
    b->replies = PyDict_New();
    b->head = PyTuple_New(0);
    b->messages = PyTuple_New(0);
    b->agent = Py_NewRef(Py_None);
    b->last_output = Py_NewRef(Py_None);
    b->last_output_seg = Py_NewRef(Py_None);
    b->last_usage = Py_NewRef(Py_None);
    if (!b->seg || !b->heads || !b->replies || !b->head || !b->messages || !PyDict_Check(b->ids)) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "the parts' ids are a dict");
        Py_DECREF(b);
        return NULL;
    }
    return (PyObject *)b;
}

static void builder_dealloc(Builder *b) {
    truncate_where(b, 0);
    truncate_names(b, 0);
    PyMem_Free(b->where);
    PyMem_Free(b->names);
    PyMem_Free(b->segs.v);
    PyMem_Free(b->after.v);
    PyMem_Free(b->turn.v);
    Py_XDECREF(b->parts);
    Py_XDECREF(b->ids);
    Py_XDECREF(b->estimates);
    Py_XDECREF(b->seg);
    Py_XDECREF(b->heads);
    Py_XDECREF(b->replies);
    Py_XDECREF(b->head);
    Py_XDECREF(b->messages);
    Py_XDECREF(b->agent);
    Py_XDECREF(b->last_output);
    Py_XDECREF(b->last_output_seg);
    Py_XDECREF(b->last_usage);
    Py_TYPE(b)->tp_free((PyObject *)b);
}

static PyMemberDef BUILDER_MEMBERS[] = {
    {"parts", T_OBJECT_EX, offsetof(Builder, parts), READONLY, "the parts by content, and their estimates"},
    {NULL, 0, 0, 0, NULL},
};

static PyMethodDef BUILDER_METHODS[] = {
    {"add", (PyCFunction)builder_add, METH_O, "add(call) -> Shape: Builder.add"},
    {"attach", (PyCFunction)builder_attach, METH_O, "attach(call) -> int | None: Builder.attach"},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject BUILDER = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "kcost.transcripts._builder.Builder",
    .tp_basicsize = sizeof(Builder),
    .tp_dealloc = (destructor)builder_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Builder(parts, header): calls -> shapes, as kcost.transcripts.prompts.Builder",
    .tp_methods = BUILDER_METHODS,
    .tp_members = BUILDER_MEMBERS,
    .tp_new = builder_new,
};

/* setup(Shape, its fields, assistant_body, message, _made_head, _changed, _Where, _GENERATION, a Message's fields,
 * a ToolCall's) */
static PyObject *py_setup(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *shape, *fields, *fns[6], *message_fields, *call_fields;
    if (!PyArg_ParseTuple(args, "O!O!OOOOOOO!O!", &PyType_Type, &shape, &PyTuple_Type, &fields, &fns[0], &fns[1],
                          &fns[2], &fns[3], &fns[4], &fns[5], &PyTuple_Type, &message_fields, &PyTuple_Type,
                          &call_fields))
        return NULL;
    AT_TOOL_CALLS = -1;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(message_fields); i++)
        if (PyUnicode_Check(PyTuple_GET_ITEM(message_fields, i)) &&
            PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(message_fields, i), "tool_calls") == 0)
            AT_TOOL_CALLS = i;
    if (AT_TOOL_CALLS < 0) {
        PyErr_SetString(PyExc_TypeError, "a message's fields name its tool calls");
        return NULL;
    }
    Py_XSETREF(MESSAGE_FIELDS, Py_NewRef(message_fields));
    Py_XSETREF(CALL_FIELDS, Py_NewRef(call_fields));
    if (kc_layout(&SHAPE, shape, fields, SHAPE_NAMES, FIELDS) < 0) return NULL;
    PyObject **to[] = {&ASSISTANT_BODY, &MESSAGE, &MADE_HEAD, &CHANGED, &WHERE, &GENERATION};
    for (int i = 0; i < 6; i++) Py_XSETREF(*to[i], Py_NewRef(fns[i]));
    READY = 1;
    Py_RETURN_NONE;
}

static PyMethodDef METHODS[] = {
    {"setup", py_setup, METH_VARARGS,
     "setup(Shape, its fields, assistant_body, message, _made_head, _changed, _Where, _GENERATION, a Message's "
     "fields, a ToolCall's)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef MODULE = {PyModuleDef_HEAD_INIT, "_builder", "The prompt builder, compiled.", -1, METHODS,
                                    NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__builder(void) {
    if (PyType_Ready(&BUILDER) < 0) return NULL;
    const KcName names[] = {
        {&S_ASSISTANT, "assistant"}, {&S_MESSAGE, "message"},     {&S_SYSTEM, "system"},
        {&S_TOOL, "tool"},           {&S_EMPTY, ""},              {&S_GENERATION_KIND, "generation"},
        {&S_SEG, "seg"},             {&S_IDS, "ids"},             {&S_ESTIMATES, "estimates"},
        {&S_COUNTER, "counter"},     {&S_COUNT, "count"},         {&S_MESSAGES, "messages"},
        {&S_UNLOGGED, "unlogged"},   {&S_TOOLS, "tools"},         {&S_EFFORT, "effort"},
        {&S_OUTPUT, "output"},       {&S_REPORTED, "reported"},   {&S_TIME, "time"},
        {&S_LINE, "line"},           {&S_ROLE, "role"},           {&S_PARTIAL, "partial"},
        {&S_TOOL_CALLS, "tool_calls"}, {&S_TOOL_CALL_ID, "tool_call_id"}, {&S_ID, "id"},
        {&S_NAME, "name"},           {&S_REASONING, "reasoning"}, {&S_KIND, "kind"},
        {&S_NUMBER, "number"},       {&S_AGENT, "agent"}};
    if (kc_intern(names, sizeof names / sizeof names[0]) < 0) return NULL;
    PyObject *m = PyModule_Create(&MODULE);
    if (!m) return NULL;
    if (PyModule_AddObjectRef(m, "Builder", (PyObject *)&BUILDER) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
