/* warpwizard's compiled core: the per-field work of the protobuf wire format (wizard/trace/read/protobuf.py).
 *
 * Each function here has a pure-Python twin in protobuf.py with the same name, arguments, results and errors,
 * byte for byte: the twin is the fallback where this module is not built (no compiler, WARPWIZARD_PURE=1) and the
 * tests' second computation (tests/trace/test_compiled_core.py runs both on the same bytes, damaged ones included).
 *
 * Built against the stable ABI of Python 3.10 (Py_LIMITED_API): one binary serves CPython 3.10 and every later
 * version, so a wheel per platform, not per platform and version. The input is untrusted: every read is checked
 * against the buffer's length, a varint is at most 10 bytes, a message at most MAX_FIELDS fields, and a field's
 * declared length is compared in 128 bits (a 70-bit length cannot wrap).
 */
#define Py_LIMITED_API 0x030A0000
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

typedef unsigned __int128 u128;

/* what protobuf.py hands over at import: its Damaged exception, its MAX_FIELDS, and its pure functions (used for
 * an input that is not bytes, e.g. a memoryview: the compiled path reads bytes only) */
static PyObject *Damaged = NULL;
static Py_ssize_t max_fields = 1000000;
static PyObject *pure_fields = NULL, *pure_varint = NULL, *pure_packed = NULL;

enum { OK = 0, CUT = 1, LONG_VARINT = 2 };

/* the varint at b[i], as protobuf.varint reads it: CUT where the bytes end inside it (IndexError there),
 * LONG_VARINT where it runs past 10 bytes; the value can hold 70 bits, as a Python int does */
static int read_varint(const unsigned char *b, Py_ssize_t n, Py_ssize_t *i, u128 *out) {
    Py_ssize_t j = *i;
    if (j >= n) return CUT;
    unsigned x = b[j];
    if (x < 0x80) { *out = x; *i = j + 1; return OK; }
    if (j + 1 >= n) return CUT;
    unsigned y = b[j + 1];
    if (y < 0x80) { *out = (u128)(x & 0x7F) | ((u128)y << 7); *i = j + 2; return OK; }
    u128 result = (u128)(x & 0x7F) | ((u128)(y & 0x7F) << 7);
    int shift = 14;
    j += 1;
    for (;;) {
        j += 1;
        if (j >= n) return CUT;
        x = b[j];
        result |= (u128)(x & 0x7F) << shift;
        if (x < 0x80) { *out = result; *i = j + 1; return OK; }
        shift += 7;
        if (shift > 63) return LONG_VARINT;
    }
}

static PyObject *py_int(u128 v) {
    if (v <= (u128)UINT64_MAX) return PyLong_FromUnsignedLongLong((unsigned long long)v);
    PyObject *hi = PyLong_FromUnsignedLongLong((unsigned long long)(v >> 64));
    PyObject *lo = PyLong_FromUnsignedLongLong((unsigned long long)v);
    PyObject *sixty_four = PyLong_FromLong(64);
    PyObject *shifted = (hi && sixty_four) ? PyNumber_Lshift(hi, sixty_four) : NULL;
    PyObject *whole = (shifted && lo) ? PyNumber_Or(shifted, lo) : NULL;
    Py_XDECREF(hi); Py_XDECREF(lo); Py_XDECREF(sixty_four); Py_XDECREF(shifted);
    return whole;
}

static PyObject *damaged(const char *text) {
    PyErr_SetString(Damaged ? Damaged : PyExc_ValueError, text);
    return NULL;
}

static PyObject *varint_error(int status, const char *cut_text) {
    return damaged(status == LONG_VARINT ? "a varint longer than 10 bytes" : cut_text);
}

/* (field number, wire type, value) appended as protobuf.fields does; a new reference to nothing on success */
static int append_field(PyObject *out, u128 number, long wire, PyObject *value) {
    if (!value) return -1;
    PyObject *num = py_int(number);
    PyObject *w = PyLong_FromLong(wire);
    PyObject *item = (num && w) ? PyTuple_Pack(3, num, w, value) : NULL;
    int rc = item ? PyList_Append(out, item) : -1;
    Py_XDECREF(num); Py_XDECREF(w); Py_XDECREF(value); Py_XDECREF(item);
    return rc;
}

static PyObject *span(Py_ssize_t start, Py_ssize_t end) {
    PyObject *a = PyLong_FromSsize_t(start), *z = PyLong_FromSsize_t(end);
    PyObject *pair = (a && z) ? PyTuple_Pack(2, a, z) : NULL;
    Py_XDECREF(a); Py_XDECREF(z);
    return pair;
}

/* int.from_bytes(b[i:i+width], "little"): the slice is shorter where the bytes end (the caller then finds the
 * field running past its message, as the twin does) */
static uint64_t little(const unsigned char *b, Py_ssize_t n, Py_ssize_t i, int width) {
    uint64_t v = 0;
    for (int k = 0; k < width && i + k < n; k++) v |= (uint64_t)b[i + k] << (8 * k);
    return v;
}

static PyObject *call_pure(PyObject *pure, PyObject *const *args, Py_ssize_t nargs) {
    if (!pure) return damaged("warpwizard's compiled core was not bound (wizard.trace.read.protobuf binds it)");
    PyObject *tuple = PyTuple_New(nargs);
    if (!tuple) return NULL;
    for (Py_ssize_t k = 0; k < nargs; k++) { Py_INCREF(args[k]); PyTuple_SetItem(tuple, k, args[k]); }
    PyObject *result = PyObject_Call(pure, tuple, NULL);
    Py_DECREF(tuple);
    return result;
}

static PyObject *fields_loop(const unsigned char *b, Py_ssize_t n, Py_ssize_t i, Py_ssize_t end) {
    PyObject *out = PyList_New(0);
    int status = OK;
    if (!out) return NULL;
    while (i < end) {
        u128 key, value;
        status = read_varint(b, n, &i, &key);
        if (status != OK) goto varint_failed;
        long wire = (long)(key & 7);
        u128 number = key >> 3;
        if (wire == 0) {
            status = read_varint(b, n, &i, &value);
            if (status != OK) goto varint_failed;
            if (append_field(out, number, 0, py_int(value)) < 0) goto failed;
        } else if (wire == 2) {
            status = read_varint(b, n, &i, &value);
            if (status != OK) goto varint_failed;
            if ((u128)i + value > (u128)end) { damaged("a field runs past its message"); goto failed; }
            Py_ssize_t size = (Py_ssize_t)value;
            if (append_field(out, number, 2, span(i, i + size)) < 0) goto failed;
            i += size;
        } else if (wire == 1 || wire == 5) {
            int width = wire == 1 ? 8 : 4;
            if (append_field(out, number, wire, PyLong_FromUnsignedLongLong(little(b, n, i, width))) < 0) goto failed;
            i += width;
        } else {
            char text[32];
            PyOS_snprintf(text, sizeof text, "wire type %ld", wire);
            damaged(text);
            goto failed;
        }
        if (PyList_Size(out) > max_fields) {
            char text[64];
            PyOS_snprintf(text, sizeof text, "a message of more than %zd fields", max_fields);
            damaged(text);
            goto failed;
        }
    }
    if (i > end) { damaged("a field runs past its message"); goto failed; }
    return out;
varint_failed:
    varint_error(status, "a message cut off");
failed:
    Py_DECREF(out);
    return NULL;
}

/* fields(b, start=0, end=None): protobuf.fields */
static PyObject *core_fields(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs < 1 || nargs > 3 || !PyBytes_Check(args[0])) return call_pure(pure_fields, args, nargs);
    Py_ssize_t n = PyBytes_Size(args[0]), start = 0, end = n;
    if (nargs >= 2 && (start = PyLong_AsSsize_t(args[1])) == -1 && PyErr_Occurred()) return NULL;
    if (nargs == 3 && args[2] != Py_None && (end = PyLong_AsSsize_t(args[2])) == -1 && PyErr_Occurred()) return NULL;
    if (start < 0) return call_pure(pure_fields, args, nargs);  /* Python's negative index: the twin's meaning */
    return fields_loop((const unsigned char *)PyBytes_AsString(args[0]), n, start, end);
}

/* varint(b, i): protobuf.varint, (value, position after it); IndexError where the bytes end inside it */
static PyObject *core_varint(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 2 || !PyBytes_Check(args[0])) return call_pure(pure_varint, args, nargs);
    Py_ssize_t n = PyBytes_Size(args[0]), i = PyLong_AsSsize_t(args[1]);
    if (i == -1 && PyErr_Occurred()) return NULL;
    if (i < 0) return call_pure(pure_varint, args, nargs);
    u128 value;
    int status = read_varint((const unsigned char *)PyBytes_AsString(args[0]), n, &i, &value);
    if (status == CUT) {
        PyErr_SetString(PyExc_IndexError, "index out of range");
        return NULL;
    }
    if (status == LONG_VARINT) return damaged("a varint longer than 10 bytes");
    PyObject *v = py_int(value), *at = PyLong_FromSsize_t(i);
    PyObject *pair = (v && at) ? PyTuple_Pack(2, v, at) : NULL;
    Py_XDECREF(v); Py_XDECREF(at);
    return pair;
}

/* packed_varints(b, wire, value): protobuf.packed_varints */
static PyObject *core_packed(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 3 || !PyBytes_Check(args[0]) || !PyLong_Check(args[1])) return call_pure(pure_packed, args, nargs);
    long wire = PyLong_AsLong(args[1]);
    if (wire == -1 && PyErr_Occurred()) return NULL;
    if (wire != 2 || !PyTuple_Check(args[2]) || PyTuple_Size(args[2]) != 2) return call_pure(pure_packed, args, nargs);
    Py_ssize_t i, end, n = PyBytes_Size(args[0]);
    if ((i = PyLong_AsSsize_t(PyTuple_GetItem(args[2], 0))) == -1 && PyErr_Occurred()) return NULL;
    if ((end = PyLong_AsSsize_t(PyTuple_GetItem(args[2], 1))) == -1 && PyErr_Occurred()) return NULL;
    if (i < 0) return call_pure(pure_packed, args, nargs);
    const unsigned char *b = (const unsigned char *)PyBytes_AsString(args[0]);
    PyObject *out = PyList_New(0);
    if (!out) return NULL;
    while (i < end) {
        u128 value;
        int status = read_varint(b, n, &i, &value);
        if (status != OK) {
            varint_error(status, "a packed field cut off");
            Py_DECREF(out);
            return NULL;
        }
        PyObject *v = py_int(value);
        if (!v || PyList_Append(out, v) < 0) {
            Py_XDECREF(v);
            Py_DECREF(out);
            return NULL;
        }
        Py_DECREF(v);
    }
    return out;
}

/* bind(Damaged, max_fields, fields, varint, packed_varints): protobuf.py hands over its error and its twins */
static PyObject *core_bind(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 5) {
        PyErr_SetString(PyExc_TypeError, "bind(Damaged, max_fields, fields, varint, packed_varints)");
        return NULL;
    }
    Py_ssize_t limit = PyLong_AsSsize_t(args[1]);
    if (limit == -1 && PyErr_Occurred()) return NULL;
    PyObject **slots[] = {&Damaged, &pure_fields, &pure_varint, &pure_packed};
    PyObject *values[] = {args[0], args[2], args[3], args[4]};
    for (int k = 0; k < 4; k++) {
        PyObject *old = *slots[k];
        Py_INCREF(values[k]);
        *slots[k] = values[k];
        Py_XDECREF(old);
    }
    max_fields = limit;
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"fields", (PyCFunction)(void (*)(void))core_fields, METH_FASTCALL, "protobuf.fields, compiled"},
    {"varint", (PyCFunction)(void (*)(void))core_varint, METH_FASTCALL, "protobuf.varint, compiled"},
    {"packed_varints", (PyCFunction)(void (*)(void))core_packed, METH_FASTCALL, "protobuf.packed_varints, compiled"},
    {"bind", (PyCFunction)(void (*)(void))core_bind, METH_FASTCALL, "hand over Damaged, MAX_FIELDS and the twins"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "wizard._core", "warpwizard's compiled core (protobuf.py's twins)", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__core(void) { return PyModule_Create(&module); }
