/* The estimate of a rendered part's tokens, compiled: `kcost.transcripts.tokenizer.Estimate.pieces` written again
 * (`Estimate.count` of each text piece, one token for each control token), the same floating-point operations in
 * the same order, so both give the same counts; the Python method is the oracle the tests hold this one to.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>

/* `Estimate.count`: about 4 ASCII characters or 1.5 CJK characters a token, any other character a token. CJK as
 * `cjk_characters` tells it by the UTF-8: U+3000..U+9FFF, U+AC00..U+D7AF, U+F900..U+FAFF and U+20000 on. */
static long long count(PyObject *text, double ascii_per_token, double cjk_per_token) {
    Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    if (PyUnicode_IS_ASCII(text)) return (long long)ceil((double)n / ascii_per_token);
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    Py_ssize_t ascii = 0, cjk = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_UCS4 c = PyUnicode_READ(kind, data, i);
        if (c < 0x80) ascii++;
        else if ((c >= 0x3000 && c <= 0x9FFF) || (c >= 0xAC00 && c <= 0xD7AF) || (c >= 0xF900 && c <= 0xFAFF) ||
                 c >= 0x20000)
            cjk++;
    }
    Py_ssize_t rest = n - ascii;
    return (long long)ceil((double)ascii / ascii_per_token + (double)cjk / cjk_per_token + (double)(rest - cjk));
}

static PyObject *py_pieces(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *pieces;
    double ascii_per_token, cjk_per_token;
    if (!PyArg_ParseTuple(args, "O!dd", &PyTuple_Type, &pieces, &ascii_per_token, &cjk_per_token)) return NULL;
    long long total = 0;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(pieces); i++) {
        PyObject *piece = PyTuple_GET_ITEM(pieces, i);
        total += PyUnicode_CheckExact(piece) ? count(piece, ascii_per_token, cjk_per_token) : 1;
    }
    return PyLong_FromLongLong(total);
}

static PyMethodDef METHODS[] = {
    {"pieces", py_pieces, METH_VARARGS,
     "pieces(pieces, ascii_per_token, cjk_per_token) -> int: the estimate of a rendered part (a tuple of text "
     "pieces and control-token ids), as kcost.transcripts.tokenizer.Estimate.pieces counts it"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef MODULE = {PyModuleDef_HEAD_INIT, "_estimate", "kcost's compiled token estimate.", -1,
                                    METHODS, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__estimate(void) { return PyModule_Create(&MODULE); }
