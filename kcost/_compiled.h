/* What kcost's compiled parts share (each a module of its own, each including this once): arrays that grow, whole
 * numbers and bytes put at an array's end, instances of kcost's slotted dataclasses made with their fields set in
 * their slots, and a module's names interned. Everything here is `static inline`, so a module that uses a part of it
 * compiles only that part, with no warning for the rest. */
#ifndef KCOST_COMPILED_H
#define KCOST_COMPILED_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <structmember.h>
#include <string.h>

/* ---- growing ------------------------------------------------------------------------------------------------ */

/* *a made to hold at least `need` items of `size` bytes (doubling from `*cap`, from 64); -1 with MemoryError */
static inline int kc_grow(void **a, Py_ssize_t *cap, Py_ssize_t need, size_t size) {
    if (need <= *cap) return 0;
    Py_ssize_t c = *cap ? *cap : 64;
    while (c < need) c *= 2;
    void *grown = PyMem_Realloc(*a, size * (size_t)c);
    if (!grown) {
        PyErr_NoMemory();
        return -1;
    }
    *a = grown;
    *cap = c;
    return 0;
}

/* whole numbers, pushed one after another */
typedef struct {
    int64_t *v;
    Py_ssize_t n, cap;
} KcInts;

static inline int kc_push(KcInts *a, int64_t x) {
    if (kc_grow((void **)&a->v, &a->cap, a->n + 1, sizeof(int64_t)) < 0) return -1;
    a->v[a->n++] = x;
    return 0;
}

/* bytes written one run after another */
typedef struct {
    char *p;
    Py_ssize_t n, cap;
} KcBytes;

static inline int kc_put(KcBytes *b, const char *s, Py_ssize_t n) {
    if (kc_grow((void **)&b->p, &b->cap, b->n + n, 1) < 0) return -1;
    memcpy(b->p + b->n, s, (size_t)n);
    b->n += n;
    return 0;
}

/* ---- a slotted dataclass's instances, made here -------------------------------------------------------------- */

#define KC_FIELDS 16 /* the fields a class made here may have */

typedef struct {
    PyTypeObject *type;
    Py_ssize_t offset[KC_FIELDS]; /* by the index of each field's name in the names the module knows */
} KcLayout;

/* `type`'s slots for its dataclass fields `fields` (the names in its order), each one of the `n` names this module
 * knows (`names`, in the order it sets them); -1 with TypeError where a field is unknown here or no slot */
static inline int kc_layout(KcLayout *l, PyObject *type, PyObject *fields, const char *const *names, int n) {
    if (n > KC_FIELDS || !PyType_Check(type) || !PyTuple_Check(fields) || PyTuple_GET_SIZE(fields) != n) {
        PyErr_SetString(PyExc_TypeError, "a class and the names of its fields, each known here");
        return -1;
    }
    for (int i = 0; i < n; i++) {
        PyObject *name = PyTuple_GET_ITEM(fields, i);
        int k = 0;
        while (k < n && !(PyUnicode_Check(name) && PyUnicode_CompareWithASCIIString(name, names[k]) == 0)) k++;
        if (k == n) {
            PyErr_Format(PyExc_TypeError, "a field not known here: %R", name);
            return -1;
        }
        PyObject *d = PyObject_GetAttr(type, name);
        if (!d) return -1;
        int slot = Py_IS_TYPE(d, &PyMemberDescr_Type) && ((PyMemberDescrObject *)d)->d_member->type == T_OBJECT_EX;
        if (slot) l->offset[k] = ((PyMemberDescrObject *)d)->d_member->offset;
        Py_DECREF(d);
        if (!slot) {
            PyErr_Format(PyExc_TypeError, "%R is not a slot", name);
            return -1;
        }
    }
    Py_XSETREF(l->type, (PyTypeObject *)Py_NewRef(type));
    return 0;
}

/* field k of an instance of the layout's class (borrowed) */
#define KC_SLOT(l, obj, k) (*(PyObject **)((char *)(obj) + (l).offset[k]))

/* an instance with the `n` values, in the module's order of names (each stolen; where one is NULL, a call made
 * them failed: no instance is made, every value is released, and NULL is returned with the error set) */
static inline PyObject *kc_instance(const KcLayout *l, PyObject **values, int n) {
    int ok = 1;
    for (int i = 0; i < n; i++) ok &= values[i] != NULL;
    PyObject *obj = ok ? l->type->tp_alloc(l->type, 0) : NULL;
    for (int i = 0; i < n; i++) {
        if (obj)
            KC_SLOT(*l, obj, i) = values[i];
        else
            Py_XDECREF(values[i]);
    }
    return obj;
}

/* ---- names --------------------------------------------------------------------------------------------------- */

typedef struct {
    PyObject **to;
    const char *text;
} KcName;

/* each name's text interned into its place; -1 on error */
static inline int kc_intern(const KcName *names, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (!(*names[i].to = PyUnicode_InternFromString(names[i].text))) return -1;
    return 0;
}

#endif
