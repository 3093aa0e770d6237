/* A session's records made from the rows a worker sends them as (`kcost.session._session`, written again): each
 * record of the slotted classes `CallRecord`, `Request`, `Usage` and `Span` made as unpickling makes one, its
 * fields' values set in its slots, without a `__setstate__` call for each object. The Python function is the
 * fallback where this module is not built (`_from_rows`), and the oracle the tests hold it to.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

#define MOST 32 /* fields a class may have here */

typedef struct {
    PyTypeObject *type;
    Py_ssize_t n, offset[MOST];
} Layout;

static Layout RECORD, REQUEST, USAGE, SPAN;
static Py_ssize_t AT_REQUEST, AT_REPORTED, SPANS[MOST], N_SPANS;
static int READY;

/* the slots of `type`'s fields, in the order `names` gives them (its dataclass fields) */
static int layout(Layout *l, PyObject *type, PyObject *names) {
    if (!PyType_Check(type) || !PyTuple_Check(names) || PyTuple_GET_SIZE(names) > MOST) {
        PyErr_SetString(PyExc_TypeError, "a class and the names of at most 32 fields");
        return -1;
    }
    l->n = PyTuple_GET_SIZE(names);
    for (Py_ssize_t i = 0; i < l->n; i++) {
        PyObject *d = PyObject_GetAttr(type, PyTuple_GET_ITEM(names, i));
        if (!d) return -1;
        int slot = Py_IS_TYPE(d, &PyMemberDescr_Type) && ((PyMemberDescrObject *)d)->d_member->type == T_OBJECT_EX;
        if (slot) l->offset[i] = ((PyMemberDescrObject *)d)->d_member->offset;
        Py_DECREF(d);
        if (!slot) {
            PyErr_Format(PyExc_TypeError, "%R is not a slot", PyTuple_GET_ITEM(names, i));
            return -1;
        }
    }
    Py_XSETREF(l->type, (PyTypeObject *)Py_NewRef(type));
    return 0;
}

/* an instance of the layout's class with the `n` values at `items` (its fields' values, in order) */
static PyObject *made_of(const Layout *l, PyObject *const *items, Py_ssize_t n) {
    if (n != l->n) return PyErr_Format(PyExc_ValueError, "a row of %zd values for %zd fields", n, l->n);
    PyObject *obj = l->type->tp_alloc(l->type, 0);
    if (obj)
        for (Py_ssize_t i = 0; i < n; i++) *(PyObject **)((char *)obj + l->offset[i]) = Py_NewRef(items[i]);
    return obj;
}

/* the same of a row, a list or tuple of the values */
static PyObject *made(const Layout *l, PyObject *values) {
    PyObject *seq = PySequence_Fast(values, "a row");
    if (!seq) return NULL;
    PyObject *obj = made_of(l, PySequence_Fast_ITEMS(seq), PySequence_Fast_GET_SIZE(seq));
    Py_DECREF(seq);
    return obj;
}

/* `request[n]`'s spans, each row (a tuple) made a `Span` */
static PyObject *spans(PyObject *given) {
    PyObject *seq = PySequence_Fast(given, "spans");
    if (!seq) return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    PyObject *out = PyTuple_New(n);
    for (Py_ssize_t i = 0; out && i < n; i++) {
        PyObject *span = PySequence_Fast_GET_ITEM(seq, i);
        PyObject *one = PyTuple_CheckExact(span) ? made(&SPAN, span) : Py_NewRef(span);
        if (!one) Py_CLEAR(out);
        else PyTuple_SET_ITEM(out, i, one);
    }
    Py_DECREF(seq);
    return out;
}

static PyObject *record(PyObject *row) {
    Py_ssize_t n = PyList_GET_SIZE(row);
    if (n != RECORD.n || AT_REQUEST >= n || AT_REPORTED >= n)
        return PyErr_Format(PyExc_ValueError, "a row of %zd values for %zd fields", n, RECORD.n);
    PyObject *values[MOST];
    for (Py_ssize_t i = 0; i < n; i++) values[i] = Py_NewRef(PyList_GET_ITEM(row, i));
    PyObject *out = NULL, *request = values[AT_REQUEST], *usage = values[AT_REPORTED];
    if (PyList_CheckExact(request)) {
        PyObject *fields = PySequence_List(request);
        if (!fields) goto done;
        for (Py_ssize_t k = 0; k < N_SPANS; k++) {
            if (SPANS[k] >= PyList_GET_SIZE(fields)) {
                PyErr_SetString(PyExc_ValueError, "a request row too short");
                Py_DECREF(fields);
                goto done;
            }
            PyObject *s = spans(PyList_GET_ITEM(fields, SPANS[k]));
            if (!s) {
                Py_DECREF(fields);
                goto done;
            }
            PyList_SetItem(fields, SPANS[k], s); /* steals s */
        }
        PyObject *req = made(&REQUEST, fields);
        Py_DECREF(fields);
        if (!req) goto done;
        Py_SETREF(values[AT_REQUEST], req);
    }
    if (PyTuple_CheckExact(usage)) {
        PyObject *u = made(&USAGE, usage);
        if (!u) goto done;
        Py_SETREF(values[AT_REPORTED], u);
    }
    out = made_of(&RECORD, values, n);
done:
    for (Py_ssize_t i = 0; i < n; i++) Py_DECREF(values[i]);
    return out;
}

static PyObject *py_from_rows(PyObject *self, PyObject *rows) {
    (void)self;
    if (!READY) {
        PyErr_SetString(PyExc_RuntimeError, "kcost._records.setup was not called");
        return NULL;
    }
    if (!PyList_CheckExact(rows)) {
        PyErr_SetString(PyExc_TypeError, "rows must be a list");
        return NULL;
    }
    Py_ssize_t n = PyList_GET_SIZE(rows);
    PyObject *out = PyTuple_New(n);
    for (Py_ssize_t i = 0; out && i < n; i++) {
        PyObject *row = PyList_GET_ITEM(rows, i);
        PyObject *one = PyList_CheckExact(row) ? record(row) : Py_NewRef(row); /* a record of another class */
        if (!one) Py_CLEAR(out);
        else PyTuple_SET_ITEM(out, i, one);
    }
    return out;
}

static PyObject *py_setup(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *classes, *at_spans;
    if (!PyArg_ParseTuple(args, "O!nnO!", &PyTuple_Type, &classes, &AT_REQUEST, &AT_REPORTED, &PyTuple_Type,
                          &at_spans))
        return NULL;
    if (PyTuple_GET_SIZE(classes) != 8 || PyTuple_GET_SIZE(at_spans) > MOST) {
        PyErr_SetString(PyExc_TypeError, "four classes, each with its fields' names, and the spans' places");
        return NULL;
    }
    Layout *layouts[] = {&RECORD, &REQUEST, &USAGE, &SPAN};
    for (int i = 0; i < 4; i++)
        if (layout(layouts[i], PyTuple_GET_ITEM(classes, 2 * i), PyTuple_GET_ITEM(classes, 2 * i + 1)) < 0)
            return NULL;
    N_SPANS = PyTuple_GET_SIZE(at_spans);
    for (Py_ssize_t k = 0; k < N_SPANS; k++)
        if ((SPANS[k] = PyLong_AsSsize_t(PyTuple_GET_ITEM(at_spans, k))) < 0) {
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "a place past the fields");
            return NULL;
        }
    READY = 1;
    Py_RETURN_NONE;
}

static PyMethodDef METHODS[] = {
    {"from_rows", py_from_rows, METH_O,
     "from_rows(rows) -> tuple: a session's records made from their rows, as kcost.session._from_rows makes them"},
    {"setup", py_setup, METH_VARARGS,
     "setup((CallRecord, names, Request, names, Usage, names, Span, names), at_request, at_reported, at_spans)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef MODULE = {PyModuleDef_HEAD_INIT, "_records", "A session's records made from rows, compiled.",
                                    -1, METHODS, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__records(void) { return PyModule_Create(&MODULE); }
