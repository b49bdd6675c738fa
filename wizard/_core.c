/* warpwizard's compiled core: the per-field work of the protobuf wire format (wizard/trace/read/protobuf.py), and
 * the field loops of the two messages a .pftrace is mostly made of (TracePacket, TrackEvent: packet_head and
 * track_event_fields, which hand perfetto.py what its loops over those messages' fields found).
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
#include <string.h>

typedef unsigned __int128 u128;

/* what protobuf.py hands over at import: its Damaged exception, its MAX_FIELDS, and its pure functions (used for
 * an input that is not bytes, e.g. a memoryview: the compiled path reads bytes only) */
static PyObject *Damaged = NULL;
static Py_ssize_t max_fields = 1000000;
static PyObject *pure_fields = NULL, *pure_varint = NULL, *pure_packed = NULL;
static PyObject *pure_packet_head = NULL, *pure_track_event = NULL;

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

/* one message's fields, one at a time, with protobuf.fields' checks in its order: a field's key, its value, its
 * length against the message's end, its wire type, then the count (MAX_FIELDS) once the field is whole */
typedef struct {
    const unsigned char *b;
    Py_ssize_t n, i, end, count;
} Reader;

typedef struct {
    u128 number, value;  /* value: a varint's or fixed field's, or a length-delimited field's length */
    long wire;
    Py_ssize_t start, stop;  /* a length-delimited field's span */
} Field;

/* 1: a field read into f; 0: the message ended whole; -1: the error raised (Damaged, in the twin's words) */
static int next_field(Reader *r, Field *f) {
    if (r->i >= r->end) {
        if (r->i > r->end) { damaged("a field runs past its message"); return -1; }
        return 0;
    }
    u128 key;
    int status = read_varint(r->b, r->n, &r->i, &key);
    if (status != OK) { varint_error(status, "a message cut off"); return -1; }
    f->wire = (long)(key & 7);
    f->number = key >> 3;
    if (f->wire == 0) {
        status = read_varint(r->b, r->n, &r->i, &f->value);
        if (status != OK) { varint_error(status, "a message cut off"); return -1; }
    } else if (f->wire == 2) {
        status = read_varint(r->b, r->n, &r->i, &f->value);
        if (status != OK) { varint_error(status, "a message cut off"); return -1; }
        if ((u128)r->i + f->value > (u128)r->end) { damaged("a field runs past its message"); return -1; }
        f->start = r->i;
        f->stop = r->i + (Py_ssize_t)f->value;
        r->i = f->stop;
    } else if (f->wire == 1 || f->wire == 5) {
        int width = f->wire == 1 ? 8 : 4;
        f->value = little(r->b, r->n, r->i, width);
        r->i += width;
    } else {
        char text[32];
        PyOS_snprintf(text, sizeof text, "wire type %ld", f->wire);
        damaged(text);
        return -1;
    }
    if (++r->count > max_fields) {
        char text[64];
        PyOS_snprintf(text, sizeof text, "a message of more than %zd fields", max_fields);
        damaged(text);
        return -1;
    }
    return 1;
}

/* a field as protobuf.fields gives it: (number, wire, an int or a (start, end) span) */
static PyObject *field_tuple(const Field *f) {
    PyObject *value = f->wire == 2 ? span(f->start, f->stop) : py_int(f->value);
    PyObject *num = value ? py_int(f->number) : NULL;
    PyObject *w = num ? PyLong_FromLong(f->wire) : NULL;
    PyObject *item = w ? PyTuple_Pack(3, num, w, value) : NULL;
    Py_XDECREF(num); Py_XDECREF(w); Py_XDECREF(value);
    return item;
}

static PyObject *fields_loop(const unsigned char *b, Py_ssize_t n, Py_ssize_t i, Py_ssize_t end) {
    Reader r = {b, n, i, end, 0};
    Field f;
    PyObject *out = PyList_New(0);
    if (!out) return NULL;
    int more;
    while ((more = next_field(&r, &f)) == 1) {
        PyObject *item = field_tuple(&f);
        if (!item || PyList_Append(out, item) < 0) {
            Py_XDECREF(item);
            Py_DECREF(out);
            return NULL;
        }
        Py_DECREF(item);
    }
    if (more < 0) {
        Py_DECREF(out);
        return NULL;
    }
    return out;
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

/* a tuple of new references, or NULL (each of them released) where one is NULL */
static PyObject *tuple_of(PyObject **items, Py_ssize_t count) {
    PyObject *tuple = NULL;
    for (Py_ssize_t k = 0; k < count; k++)
        if (!items[k]) goto failed;
    if (!(tuple = PyTuple_New(count))) goto failed;
    for (Py_ssize_t k = 0; k < count; k++) PyTuple_SetItem(tuple, k, items[k]);  /* steals each */
    return tuple;
failed:
    for (Py_ssize_t k = 0; k < count; k++) Py_XDECREF(items[k]);
    return NULL;
}

static PyObject *new_ref(PyObject *object) {
    Py_INCREF(object);
    return object;
}

/* packet_head(b): protobuf.pure_packet_head, a TracePacket's fields as perfetto.py's packet() reads them */
static PyObject *core_packet_head(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 1 || !PyBytes_Check(args[0])) return call_pure(pure_packet_head, args, nargs);
    Py_ssize_t n = PyBytes_Size(args[0]);
    Reader r = {(const unsigned char *)PyBytes_AsString(args[0]), n, 0, n, 0};
    Field f;
    u128 ts = 0, seq_id = 0, flags = 0, kind = 0;
    int has_ts = 0, has_interned = 0, has_defaults = 0, snapshot = 0, clocks = 0, more;
    Py_ssize_t body[2] = {0, 0}, interned[2] = {0, 0}, defaults[2] = {0, 0};
    while ((more = next_field(&r, &f)) == 1) {
        u128 number = f.number;
        if (number == 8 && f.wire == 0) {  /* timestamp */
            ts = f.value;
            has_ts = 1;
        } else if (f.wire == 2 && (number == 11 || number == 60 || number == 53)) {  /* the body */
            kind = number;
            body[0] = f.start, body[1] = f.stop;
        } else if (number == 10 && f.wire == 0) {
            seq_id = f.value;
        } else if (number == 13 && f.wire == 0) {
            flags = f.value;
        } else if (number == 41 && f.wire == 0) {  /* incremental_state_cleared */
            if (f.value) flags |= 1;
        } else if (number == 12 && f.wire == 2) {
            interned[0] = f.start, interned[1] = f.stop;
            has_interned = 1;
        } else if (number == 59 && f.wire == 2) {
            defaults[0] = f.start, defaults[1] = f.stop;
            has_defaults = 1;
        } else if (number == 6 && f.wire == 2) {
            snapshot = 1;
        } else if (number == 58) {
            clocks = 1;
        }
    }
    if (more < 0) return NULL;
    PyObject *items[9] = {
        has_ts ? py_int(ts) : new_ref(Py_None),
        py_int(seq_id),
        py_int(flags),
        py_int(kind),
        span(body[0], body[1]),
        has_interned ? span(interned[0], interned[1]) : new_ref(Py_None),
        has_defaults ? span(defaults[0], defaults[1]) : new_ref(Py_None),
        PyBool_FromLong(snapshot),
        PyBool_FromLong(clocks),
    };
    return tuple_of(items, 9);
}

/* track_event_fields(b, start, end): protobuf.pure_track_event_fields, a TrackEvent's fields as perfetto.py's
 * _track_event reads them */
static PyObject *core_track_event(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 3 || !PyBytes_Check(args[0])) return call_pure(pure_track_event, args, nargs);
    Py_ssize_t n = PyBytes_Size(args[0]), start, end;
    if ((start = PyLong_AsSsize_t(args[1])) == -1 && PyErr_Occurred()) return NULL;
    if (args[2] == Py_None) return call_pure(pure_track_event, args, nargs);  /* the twin's meaning of None */
    if ((end = PyLong_AsSsize_t(args[2])) == -1 && PyErr_Occurred()) return NULL;
    if (start < 0) return call_pure(pure_track_event, args, nargs);  /* Python's negative index */
    Reader r = {(const unsigned char *)PyBytes_AsString(args[0]), n, start, end, 0};
    Field f;
    u128 kind = 0, track = 0, name_iid = 0;
    int has_track = 0, name_from = 0, more;  /* name_from: 0 none, 1 its span, 2 its iid (the last one written) */
    Py_ssize_t name[2] = {0, 0};
    PyObject *notes = PyList_New(0), *rest = NULL;
    if (!notes) return NULL;
    while ((more = next_field(&r, &f)) == 1) {
        u128 number = f.number;
        PyObject *item = NULL, *list = NULL;
        if (number == 4 && f.wire == 2) {  /* debug_annotations */
            item = span(f.start, f.stop);
            list = notes;
        } else if (number == 9 && f.wire == 0) {
            kind = f.value;
        } else if (number == 11 && f.wire == 0) {
            track = f.value;
            has_track = 1;
        } else if (number == 23 && f.wire == 2) {
            name[0] = f.start, name[1] = f.stop;
            name_from = 1;
        } else if (number == 10 && f.wire == 0) {
            name_iid = f.value;
            name_from = 2;
        } else if ((number == 22 && f.wire == 2) || number == 3 || ((number == 3000 || number == 6) && f.wire == 2)) {
            if (!rest && !(rest = PyList_New(0))) goto failed;  /* categories, category_iids, gpu_correlation, legacy */
            item = field_tuple(&f);
            list = rest;
        }
        if (list) {
            if (!item || PyList_Append(list, item) < 0) {
                Py_XDECREF(item);
                goto failed;
            }
            Py_DECREF(item);
        }
    }
    if (more < 0) goto failed;
    PyObject *items[6] = {
        py_int(kind),
        has_track ? py_int(track) : PyLong_FromLong(-1),
        name_from == 1 ? span(name[0], name[1]) : new_ref(Py_None),
        name_from == 2 ? py_int(name_iid) : new_ref(Py_None),
        notes,
        rest ? rest : new_ref(Py_None),
    };
    return tuple_of(items, 6);
failed:
    Py_DECREF(notes);
    Py_XDECREF(rest);
    return NULL;
}

/* bind(Damaged, max_fields, fields, varint, packed_varints[, packet_head, track_event_fields]): protobuf.py hands
 * over its error and its twins */
static PyObject *core_bind(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 5 && nargs != 7) {
        PyErr_SetString(PyExc_TypeError,
                        "bind(Damaged, max_fields, fields, varint, packed_varints[, packet_head, track_event_fields])");
        return NULL;
    }
    Py_ssize_t limit = PyLong_AsSsize_t(args[1]);
    if (limit == -1 && PyErr_Occurred()) return NULL;
    PyObject **slots[] = {&Damaged, &pure_fields, &pure_varint, &pure_packed, &pure_packet_head, &pure_track_event};
    PyObject *values[] = {args[0], args[2], args[3], args[4], nargs == 7 ? args[5] : NULL, nargs == 7 ? args[6] : NULL};
    for (int k = 0; k < 6; k++) {
        if (!values[k]) continue;  /* five arguments: the perfetto twins bound before stay */
        PyObject *old = *slots[k];
        Py_INCREF(values[k]);
        *slots[k] = values[k];
        Py_XDECREF(old);
    }
    max_fields = limit;
    Py_RETURN_NONE;
}

/* ==== .pftrace events (pfcore) ==== */

/* a function called before perfetto.py bound its twins: a programming error, not a damaged file */
static PyObject *not_bound(void) {
    PyErr_SetString(PyExc_RuntimeError, "bind_events was not called (wizard.trace.read.perfetto calls it)");
    return NULL;
}

/* event_args(b, notes, seq, args, entries): perfetto.pure_event_args, a TrackEvent's debug annotations into its
 * args (by EventArgs field), through the sequence's memo of annotations by their bytes. An annotation the memo does
 * not have is decoded here when it is one name and one value (nearly all: a correlation, a device, a grid as JSON);
 * one with nested entries or items goes to perfetto's Python decoder (bound below). Returns (the annotations'
 * bytes, the memo's entries over every sequence after it). */
static PyObject *pure_event_args = NULL, *decode_annotation = NULL, *json_decode = NULL, *json_errors = NULL;
static PyObject *raw_value = NULL;
static PyObject *arg_fields = NULL, *arg_fields_bytes = NULL, *raw_args = NULL;
static Py_ssize_t memo_bytes = 64, memo_limit = 100000;

/* the names looked up on a sequence, made once (bind_events) */
static PyObject *name_memo = NULL, *name_strings = NULL, *name_tables = NULL, *name_annotation_names = NULL;

/* an attribute of the sequence (memo, strings) or one of its tables (annotation_names): a new reference */
static PyObject *seq_table(PyObject *seq, PyObject *name, PyObject *table) {
    PyObject *found = PyObject_GetAttr(seq, name);
    if (!found || !table) return found;
    PyObject *inner = PyObject_GetItem(found, table);
    Py_DECREF(found);
    return inner;
}

/* dict.get(key, fallback) as a new reference, for a dict or any mapping the twin would call .get on */
static PyObject *get_or(PyObject *mapping, PyObject *key, PyObject *fallback) {
    if (PyDict_Check(mapping)) {
        PyObject *found = PyDict_GetItemWithError(mapping, key);
        if (found) return new_ref(found);
        if (PyErr_Occurred()) return NULL;
        return new_ref(fallback);
    }
    return PyObject_CallMethod(mapping, "get", "OO", key, fallback);
}

/* perfetto.JSON_DEPTH and perfetto.json_too_deep: whether the JSON text b[i:end] nests arrays and objects deeper
 * than that (brackets within strings, escapes skipped, do not count), counted in the bytes so that the answer does
 * not depend on the stack left to msgspec's decoder */
#define JSON_DEPTH 64
static int json_too_deep(const unsigned char *b, Py_ssize_t i, Py_ssize_t end) {
    Py_ssize_t depth = 0;
    for (; i < end; i++) {
        unsigned char c = b[i];
        if (c == '"') {
            for (i++; i < end && b[i] != '"'; i++)
                if (b[i] == '\\') i++;
        } else if (c == '[' || c == '{') {
            if (++depth > JSON_DEPTH) return 1;
        } else if (c == ']' || c == '}') {
            depth--;
        }
    }
    return 0;
}

/* an annotation's value field, as perfetto._Reader._value reads the last one written */
static PyObject *note_value(const unsigned char *b, const Field *f, PyObject *seq) {
    long number = (long)f->number;
    if (number == 3) return py_int(f->value);
    if (number == 4) {  /* protobuf.signed: an int64 written as a varint (two's complement in 64 bits) */
        if (f->value >> 63 == 0) return py_int(f->value);
        if (f->value >> 64 == 0) return PyLong_FromLongLong((long long)(uint64_t)f->value);
        return py_int(f->value - ((u128)1 << 64));
    }
    if (number == 2) return PyBool_FromLong(f->value != 0);
    if (number == 5) {
        uint64_t bits = (uint64_t)f->value;
        double d;
        memcpy(&d, &bits, sizeof d);
        return PyFloat_FromDouble(d);
    }
    if (number == 6) return PyUnicode_DecodeUTF8((const char *)b + f->start, f->stop - f->start, "replace");
    if (number == 17) {
        PyObject *strings = seq_table(seq, name_strings, NULL), *key = py_int(f->value), *empty = PyUnicode_FromString("");
        PyObject *value = (strings && key && empty) ? get_or(strings, key, empty) : NULL;
        Py_XDECREF(strings); Py_XDECREF(key); Py_XDECREF(empty);
        return value;
    }
    /* 9: legacy_json_value, as perfetto._json decodes it: JSON, else the text where it is not JSON or too deep */
    if (json_too_deep(b, f->start, f->stop))
        return PyUnicode_DecodeUTF8((const char *)b + f->start, f->stop - f->start, "replace");
    PyObject *raw = PyBytes_FromStringAndSize((const char *)b + f->start, f->stop - f->start);
    if (!raw) return NULL;
    PyObject *value = PyObject_CallFunctionObjArgs(json_decode, raw, NULL);
    if (!value && PyErr_ExceptionMatches(json_errors)) {
        PyErr_Clear();
        value = PyUnicode_DecodeUTF8((const char *)b + f->start, f->stop - f->start, "replace");
    }
    Py_DECREF(raw);
    return value;
}

/* the EventArgs field an annotation's name (an interned iid) keeps, or None: a new reference */
static PyObject *attr_of_iid(PyObject *seq, u128 iid) {
    PyObject *names = seq_table(seq, name_tables, name_annotation_names), *key = py_int(iid), *empty = PyUnicode_FromString("");
    PyObject *name = (names && key && empty) ? get_or(names, key, empty) : NULL;
    PyObject *attr = name ? get_or(arg_fields, name, Py_None) : NULL;
    Py_XDECREF(names); Py_XDECREF(key); Py_XDECREF(empty); Py_XDECREF(name);
    return attr;
}

/* one annotation, (its EventArgs field or None, its value): perfetto._decode_annotation's result */
static PyObject *annotation(PyObject *bytes, Py_ssize_t start, Py_ssize_t end, PyObject *seq) {
    const unsigned char *b = (const unsigned char *)PyBytes_AsString(bytes);
    Reader r = {b, PyBytes_Size(bytes), start, end, 0};
    Field f, last = {0, 0, 0, 0, 0};
    int more, has_value = 0, nested = 0;
    PyObject *attr = new_ref(Py_None);
    while ((more = next_field(&r, &f)) == 1) {
        long number = f.number < 64 ? (long)f.number : -1;
        PyObject *named = NULL;
        if (number == 10 && f.wire == 2) {
            PyObject *key = PyBytes_FromStringAndSize((const char *)b + f.start, f.stop - f.start);
            named = key ? get_or(arg_fields_bytes, key, Py_None) : NULL;
            Py_XDECREF(key);
        } else if (number == 1 && f.wire == 0) {
            named = attr_of_iid(seq, f.value);
        } else if ((f.wire == 0 && (number == 3 || number == 4 || number == 2 || number == 17)) ||
                   (f.wire == 1 && number == 5) || (f.wire == 2 && (number == 6 || number == 9))) {
            last = f;
            has_value = 1;
            continue;
        } else {
            if ((number == 11 || number == 12) && f.wire == 2) nested = 1;
            continue;
        }
        if (!named) goto failed;
        Py_DECREF(attr);
        attr = named;
    }
    if (more < 0) goto failed;
    if (attr == Py_None) {
        PyObject *items[2] = {attr, new_ref(Py_None)};
        return tuple_of(items, 2);
    }
    if (nested) {  /* arrays and dicts: the twin's recursion, bounded by MAX_DEPTH there */
        Py_DECREF(attr);
        PyObject *where = span(start, end);
        PyObject *found = where ? PyObject_CallFunctionObjArgs(decode_annotation, bytes, where, seq, NULL) : NULL;
        Py_XDECREF(where);
        return found;
    }
    PyObject *value = has_value ? note_value(b, &last, seq) : new_ref(Py_None);
    if (value) {
        int raw = PySet_Contains(raw_args, attr);
        if (raw < 0) Py_CLEAR(value);
        else if (raw) {
            PyObject *kept = PyObject_CallFunctionObjArgs(raw_value, value, NULL);
            Py_DECREF(value);
            value = kept;
        }
    }
    PyObject *items[2] = {attr, value};
    return tuple_of(items, 2);
failed:
    Py_DECREF(attr);
    return NULL;
}

/* a note as track_event_fields gives it, (start, end) within the bytes; 0 where it is not (the twin then runs) */
static int note_span(PyObject *note, Py_ssize_t n, Py_ssize_t *start, Py_ssize_t *end) {
    if (!PyTuple_Check(note) || PyTuple_Size(note) != 2) return 0;
    PyObject *a = PyTuple_GetItem(note, 0), *z = PyTuple_GetItem(note, 1);
    if (!PyLong_CheckExact(a) || !PyLong_CheckExact(z)) return 0;
    if (((*start = PyLong_AsSsize_t(a)) == -1 && PyErr_Occurred()) ||
        ((*end = PyLong_AsSsize_t(z)) == -1 && PyErr_Occurred())) {
        PyErr_Clear();
        return 0;
    }
    return 0 <= *start && *start <= *end && *end <= n;
}

/* one note into args through the memo: 0, or -1 with the error raised */
static int one_note(PyObject *bytes, Py_ssize_t start, Py_ssize_t end, PyObject *seq, PyObject *memo, PyObject *args,
                    Py_ssize_t *entries) {
    int is_short = end - start <= memo_bytes;
    PyObject *key = NULL, *found = NULL;
    if (is_short) {
        key = PyBytes_FromStringAndSize(PyBytes_AsString(bytes) + start, end - start);
        if (!key) return -1;
        if (PyDict_Check(memo)) {  /* a miss raises no KeyError: most annotations of a kernel miss */
            found = PyDict_GetItemWithError(memo, key);
            if (found) Py_INCREF(found);
            else if (PyErr_Occurred()) goto failed;
        } else if (!(found = PyObject_GetItem(memo, key))) {
            if (!PyErr_ExceptionMatches(PyExc_KeyError)) goto failed;
            PyErr_Clear();
        }
    }
    if (!found) {
        if (!(found = annotation(bytes, start, end, seq))) goto failed;
        if (is_short && *entries < memo_limit) {
            PyObject *value = PySequence_GetItem(found, 1);  /* found[1], as the twin reads it: any sequence */
            if (!value) goto failed;
            int kept = !PyList_Check(value) && !PyDict_Check(value);
            Py_DECREF(value);
            if (kept) {
                if (PyObject_SetItem(memo, key, found) < 0) goto failed;
                *entries += 1;
            }
        }
    }
    PyObject *attr = PySequence_GetItem(found, 0);
    if (!attr) goto failed;
    if (attr != Py_None) {
        PyObject *value = PySequence_GetItem(found, 1);
        int set = value ? PyObject_SetItem(args, attr, value) : -1;
        Py_XDECREF(value);
        if (set < 0) {
            Py_DECREF(attr);
            goto failed;
        }
    }
    Py_DECREF(attr);
    Py_XDECREF(key);
    Py_DECREF(found);
    return 0;
failed:
    Py_XDECREF(key);
    Py_XDECREF(found);
    return -1;
}

static PyObject *core_event_args(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (!pure_event_args || !decode_annotation) return not_bound();
    if (nargs != 5 || !PyBytes_Check(args[0]) || !PyList_Check(args[1]) || !PyDict_Check(args[3]) ||
        !PyLong_CheckExact(args[4]))
        return call_pure(pure_event_args, args, nargs);
    PyObject *bytes = args[0], *notes = args[1], *seq = args[2], *out = args[3];
    Py_ssize_t n = PyBytes_Size(bytes), count = PyList_Size(notes), size = 0, start, end;
    Py_ssize_t entries = PyLong_AsSsize_t(args[4]);
    if (entries == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        return call_pure(pure_event_args, args, nargs);
    }
    /* the spans copied before any Python code runs (a sequence's property, a finalizer): what that code does to the
     * list cannot change what is read */
    Py_ssize_t *spans = PyMem_Malloc(sizeof(Py_ssize_t) * 2 * (count ? count : 1));
    if (!spans) return PyErr_NoMemory();
    for (Py_ssize_t k = 0; k < count; k++)  /* spans other than a field's: Python's slicing, in the twin */
        if (!note_span(PyList_GetItem(notes, k), n, &spans[2 * k], &spans[2 * k + 1])) {
            PyMem_Free(spans);
            return call_pure(pure_event_args, args, nargs);
        }
    PyObject *memo = seq_table(seq, name_memo, NULL);
    for (Py_ssize_t k = 0; memo && k < count; k++) {
        start = spans[2 * k];
        end = spans[2 * k + 1];
        size += end - start;
        if (one_note(bytes, start, end, seq, memo, out, &entries) < 0) Py_CLEAR(memo);
    }
    PyMem_Free(spans);
    if (!memo) return NULL;
    Py_DECREF(memo);
    PyObject *items[2] = {PyLong_FromSsize_t(size), PyLong_FromSsize_t(entries)};
    return tuple_of(items, 2);
}

/* split_packets(buf, pos, limit, max_packet): perfetto.pure_split_packets, the whole packets (field 1 of Trace,
 * tag 0x0a) at buf[pos:], at most limit of them: (their bytes, where each starts in buf, the position after the
 * last). It stops, leaving the entry to perfetto's one-entry path, at fewer than 20 bytes left (a header may run
 * past the buffer), another tag, a size over max_packet or past the buffer, and a size varint that does not read. */
static PyObject *pure_split = NULL;

static PyObject *core_split_packets(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (!pure_split) return not_bound();
    if (nargs != 4 || !PyBytes_Check(args[0]) || !PyLong_CheckExact(args[1]) || !PyLong_CheckExact(args[2]) ||
        !PyLong_CheckExact(args[3]))
        return call_pure(pure_split, args, nargs);
    Py_ssize_t n = PyBytes_Size(args[0]), pos, limit = 0, max_packet = 0;
    int wide = (pos = PyLong_AsSsize_t(args[1])) == -1 && PyErr_Occurred();
    wide = wide || ((limit = PyLong_AsSsize_t(args[2])) == -1 && PyErr_Occurred());
    wide = wide || ((max_packet = PyLong_AsSsize_t(args[3])) == -1 && PyErr_Occurred());
    if (wide || pos < 0 || max_packet < 0) {  /* past 63 bits, or Python's meaning: the twin's */
        PyErr_Clear();
        return call_pure(pure_split, args, nargs);
    }
    const unsigned char *b = (const unsigned char *)PyBytes_AsString(args[0]);
    PyObject *found = PyList_New(0), *starts = PyList_New(0);
    if (!found || !starts) goto failed;
    for (Py_ssize_t count = 0; count < limit && n - pos >= 20 && b[pos] == 0x0A; count++) {
        Py_ssize_t i = pos + 1;
        u128 size;
        if (read_varint(b, n, &i, &size) != OK || size > (u128)max_packet || (u128)i + size > (u128)n) break;
        PyObject *packet = PyBytes_FromStringAndSize((const char *)b + i, (Py_ssize_t)size);
        PyObject *at = packet ? PyLong_FromSsize_t(pos) : NULL;
        int appended = at && PyList_Append(found, packet) == 0 && PyList_Append(starts, at) == 0;
        Py_XDECREF(packet);
        Py_XDECREF(at);
        if (!appended) goto failed;
        pos = i + (Py_ssize_t)size;
    }
    PyObject *items[3] = {found, starts, PyLong_FromSsize_t(pos)};
    return tuple_of(items, 3);
failed:
    Py_XDECREF(found);
    Py_XDECREF(starts);
    return NULL;
}

/* track_event(b, start, end, seq): perfetto.pure_track_event, track_event_fields with what the decoder made of them
 * next: the name as text (a span decoded, at most name_bytes of it, then max_name characters; an iid looked up in
 * the sequence's names) and the category (the first of the categories, cut as a name is, and category iids, in
 * their order, that names one), the fields left for Python (gpu_correlation, legacy events) in their order or None:
 * (type, track, name, category or None, the annotations' spans, the fields left or None) */
static PyObject *pure_track_event_named = NULL, *name_names = NULL, *name_categories = NULL;
static Py_ssize_t name_bytes = 4096, max_name = 1024;

/* bytes[first:last].decode("utf-8", "replace") for 0 <= first: a span of track_event_fields may pass the buffer's
 * end where the window given did (Python's slice stops at the end; so does this) */
static PyObject *decode_slice(PyObject *bytes, Py_ssize_t first, Py_ssize_t last) {
    Py_ssize_t n = PyBytes_Size(bytes);
    if (last > n) last = n;
    if (first > last) first = last;
    return PyUnicode_DecodeUTF8(PyBytes_AsString(bytes) + first, last - first, "replace");
}

/* a name or category span as kept (perfetto._name): at most name_bytes of it decoded, then max_name characters */
static PyObject *cut_name(PyObject *bytes, PyObject *where) {
    Py_ssize_t first = PyLong_AsSsize_t(PyTuple_GetItem(where, 0));
    if (first == -1 && PyErr_Occurred()) return NULL;
    Py_ssize_t last = PyLong_AsSsize_t(PyTuple_GetItem(where, 1));
    if (last == -1 && PyErr_Occurred()) return NULL;
    if (last - first > name_bytes) last = first + name_bytes;
    PyObject *name = decode_slice(bytes, first, last);
    if (name && PyUnicode_GetLength(name) > max_name) {
        PyObject *cut = PyUnicode_Substring(name, 0, max_name);
        Py_DECREF(name);
        name = cut;
    }
    return name;
}

/* the name of a TrackEvent from its span or its iid, as perfetto._Reader._track_event reads it */
static PyObject *event_name(PyObject *bytes, PyObject *name_span, PyObject *name_iid, PyObject *seq) {
    if (name_span != Py_None) return cut_name(bytes, name_span);
    if (name_iid == Py_None) return PyUnicode_FromString("");
    PyObject *names = seq_table(seq, name_tables, name_names), *empty = PyUnicode_FromString("");
    PyObject *name = (names && empty) ? get_or(names, name_iid, empty) : NULL;
    Py_XDECREF(names);
    Py_XDECREF(empty);
    return name;
}

/* the category from the rest's categories (22) and category iids (3), the first that names one; the other fields
 * into *others (a new list, or left NULL where there are none): 0, or -1 with the error raised */
static int event_category(PyObject *bytes, PyObject *rest, PyObject *seq, PyObject **cat, PyObject **others) {
    *cat = new_ref(Py_None);
    *others = NULL;
    if (rest == Py_None) return 0;
    for (Py_ssize_t k = 0; k < PyList_Size(rest); k++) {
        PyObject *field = PyList_GetItem(rest, k);
        long number = PyLong_AsLong(PyTuple_GetItem(field, 0));
        if (number == -1 && PyErr_Occurred()) return -1;
        if (number != 22 && number != 3) {  /* gpu_correlation, a legacy event: Python's */
            if (!*others && !(*others = PyList_New(0))) return -1;
            if (PyList_Append(*others, field) < 0) return -1;
            continue;
        }
        if (*cat != Py_None) continue;
        PyObject *found = NULL, *value = PyTuple_GetItem(field, 2);
        long wire = number == 22 ? 2 : PyLong_AsLong(PyTuple_GetItem(field, 1));
        if (wire == -1 && PyErr_Occurred()) return -1;
        if (number == 22) {  /* track_event_fields keeps it only length-delimited; cut as a name is */
            found = cut_name(bytes, value);
        } else if (wire == 0) {  /* one iid, as proto2 writers write it */
            PyObject *table = seq_table(seq, name_tables, name_categories);
            found = table ? get_or(table, value, Py_None) : NULL;
            Py_XDECREF(table);
        } else if (wire != 2) {  /* a fixed field names none (packed_varints' []) */
            found = new_ref(Py_None);
        } else {  /* a packed run: the first iid counts, the run must read whole */
            PyObject *call[3] = {bytes, PyTuple_GetItem(field, 1), value};
            PyObject *ids = core_packed(NULL, call, 3);
            if (!ids) return -1;
            if (PyList_Size(ids) == 0) {
                found = new_ref(Py_None);
            } else {
                PyObject *table = seq_table(seq, name_tables, name_categories);
                found = table ? get_or(table, PyList_GetItem(ids, 0), Py_None) : NULL;
                Py_XDECREF(table);
            }
            Py_DECREF(ids);
        }
        if (!found) return -1;
        Py_DECREF(*cat);
        *cat = found;
    }
    return 0;
}

static PyObject *core_track_event_named(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (!pure_track_event_named) return not_bound();
    if (nargs != 4 || !PyBytes_Check(args[0]) || !PyLong_CheckExact(args[1]) || !PyLong_CheckExact(args[2]))
        return call_pure(pure_track_event_named, args, nargs);
    Py_ssize_t start = PyLong_AsSsize_t(args[1]);
    int wide = start == -1 && PyErr_Occurred();
    wide = wide || (PyLong_AsSsize_t(args[2]) == -1 && PyErr_Occurred());
    if (wide || start < 0) {  /* past 63 bits, or Python's negative index: the twin's meaning */
        PyErr_Clear();
        return call_pure(pure_track_event_named, args, nargs);
    }
    PyObject *fields = core_track_event(self, args, 3);
    if (!fields) return NULL;
    PyObject *cat = NULL, *others = NULL, *name = NULL;
    name = event_name(args[0], PyTuple_GetItem(fields, 2), PyTuple_GetItem(fields, 3), args[3]);
    if (!name || event_category(args[0], PyTuple_GetItem(fields, 5), args[3], &cat, &others) < 0) {
        Py_XDECREF(name); Py_XDECREF(cat); Py_XDECREF(others); Py_DECREF(fields);
        return NULL;
    }
    PyObject *items[6] = {
        new_ref(PyTuple_GetItem(fields, 0)), new_ref(PyTuple_GetItem(fields, 1)), name, cat,
        new_ref(PyTuple_GetItem(fields, 4)), others ? others : new_ref(Py_None),
    };
    Py_DECREF(fields);
    return tuple_of(items, 6);
}

/* bind_events(pure_event_args, decode_annotation, json_decode, json_errors, raw, arg_fields, arg_fields_bytes,
 * raw_args, memo_bytes, memo_entries, pure_split_packets, pure_track_event, name_bytes, max_name): perfetto.py
 * hands over its twins, its JSON decoder and the errors its _json turns into text, its tables and its bounds */
static PyObject *core_bind_events(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 14 || !PyTuple_Check(args[3]) || !PyDict_Check(args[5]) || !PyDict_Check(args[6]) ||
        !PyAnySet_Check(args[7])) {
        PyErr_SetString(PyExc_TypeError, "bind_events(pure_event_args, decode_annotation, json_decode, "
                                         "json_errors: tuple, raw, arg_fields: dict, arg_fields_bytes: dict, "
                                         "raw_args: set, memo_bytes, memo_entries, pure_split_packets, "
                                         "pure_track_event, name_bytes, max_name)");
        return NULL;
    }
    Py_ssize_t limit_bytes, limit_entries, limit_name, limit_chars;
    if ((limit_bytes = PyLong_AsSsize_t(args[8])) == -1 && PyErr_Occurred()) return NULL;
    if ((limit_entries = PyLong_AsSsize_t(args[9])) == -1 && PyErr_Occurred()) return NULL;
    if ((limit_name = PyLong_AsSsize_t(args[12])) == -1 && PyErr_Occurred()) return NULL;
    if ((limit_chars = PyLong_AsSsize_t(args[13])) == -1 && PyErr_Occurred()) return NULL;
    PyObject **names[] = {&name_memo, &name_strings, &name_tables, &name_annotation_names, &name_names,
                          &name_categories};
    const char *texts[] = {"memo", "strings", "tables", "annotation_names", "names", "categories"};
    for (int k = 0; k < 6; k++)
        if (!*names[k] && !(*names[k] = PyUnicode_InternFromString(texts[k]))) return NULL;
    PyObject **slots[] = {&pure_event_args, &decode_annotation, &json_decode, &json_errors, &raw_value,
                          &arg_fields, &arg_fields_bytes, &raw_args, &pure_split, &pure_track_event_named};
    PyObject *values[] = {args[0], args[1], args[2], args[3], args[4], args[5], args[6], args[7], args[10], args[11]};
    for (int k = 0; k < 10; k++) {
        PyObject *old = *slots[k];
        *slots[k] = new_ref(values[k]);
        Py_XDECREF(old);
    }
    memo_bytes = limit_bytes;
    memo_limit = limit_entries;
    name_bytes = limit_name;
    max_name = limit_chars;
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"fields", (PyCFunction)(void (*)(void))core_fields, METH_FASTCALL, "protobuf.fields, compiled"},
    {"varint", (PyCFunction)(void (*)(void))core_varint, METH_FASTCALL, "protobuf.varint, compiled"},
    {"packed_varints", (PyCFunction)(void (*)(void))core_packed, METH_FASTCALL, "protobuf.packed_varints, compiled"},
    {"packet_head", (PyCFunction)(void (*)(void))core_packet_head, METH_FASTCALL, "protobuf.pure_packet_head, compiled"},
    {"track_event_fields", (PyCFunction)(void (*)(void))core_track_event, METH_FASTCALL,
     "protobuf.pure_track_event_fields, compiled"},
    {"bind", (PyCFunction)(void (*)(void))core_bind, METH_FASTCALL, "hand over Damaged, MAX_FIELDS and the twins"},
    {"event_args", (PyCFunction)(void (*)(void))core_event_args, METH_FASTCALL, "perfetto.pure_event_args, compiled"},
    {"split_packets", (PyCFunction)(void (*)(void))core_split_packets, METH_FASTCALL,
     "perfetto.pure_split_packets, compiled"},
    {"track_event", (PyCFunction)(void (*)(void))core_track_event_named, METH_FASTCALL,
     "perfetto.pure_track_event, compiled"},
    {"bind_events", (PyCFunction)(void (*)(void))core_bind_events, METH_FASTCALL,
     "hand over perfetto's event twins, tables and bounds"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "wizard._core", "warpwizard's compiled core (protobuf.py's twins)", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__core(void) { return PyModule_Create(&module); }
