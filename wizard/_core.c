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
#include <limits.h>
#include <string.h>
#include <stdlib.h>
#include <math.h>
#include <float.h>
#if defined(__SSE2__) || defined(_M_X64) || (defined(_M_IX86_FP) && _M_IX86_FP >= 2)
#include <emmintrin.h> /* every x86-64 has SSE2 */
#define CORE_SSE2 1
#else
#define CORE_SSE2 0
#endif

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
static int read_varint_on(const unsigned char *b, Py_ssize_t n, Py_ssize_t *i, u128 *out) {
    Py_ssize_t j = *i;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    if (n - j >= 9) {  /* up to nine bytes (63 bits: a timestamp in ns) from one 8-byte load, without a loop (j + 9
                        * would overflow where a caller passes a position near PY_SSIZE_T_MAX) */
        uint64_t w, stops;
        memcpy(&w, b + j, 8);
        stops = ~w & 0x8080808080808080u;  /* each byte's stop bit: set where the varint ends */
        int used = stops ? (__builtin_ctzll(stops) >> 3) + 1 : 8;
        if (stops || b[j + 8] < 0x80) {
            uint64_t x = (used == 8 ? w : w & ((UINT64_C(1) << (8 * used)) - 1)) & 0x7F7F7F7F7F7F7F7Fu;
            x = ((x & 0x7F007F007F007F00u) >> 1) | (x & 0x007F007F007F007Fu);  /* 7-bit groups packed pairwise */
            x = ((x & 0x3FFF00003FFF0000u) >> 2) | (x & 0x00003FFF00003FFFu);
            x = ((x & 0x0FFFFFFF00000000u) >> 4) | (x & 0x000000000FFFFFFFu);
            if (!stops) x |= (uint64_t)b[j + 8] << 56, used = 9;
            *out = x;
            *i = j + used;
            return OK;
        }
    }
#endif
    uint64_t low = 0;  /* the first nine bytes' 63 bits: a 64-bit shift, where a u128 one cost twice as much */
    for (int shift = 0; shift < 63; shift += 7, j++) {
        if (j >= n) return CUT;
        unsigned x = b[j];
        low |= (uint64_t)(x & 0x7F) << shift;
        if (x < 0x80) {
            *out = low;
            *i = j + 1;
            return OK;
        }
    }
    if (j >= n) return CUT;
    unsigned x = b[j];  /* the tenth byte: bits 63-69 */
    if (x >= 0x80) return LONG_VARINT;
    *out = (u128)low | ((u128)(x & 0x7F) << 63);
    *i = j + 1;
    return OK;
}

/* read_varint_on, with a one-byte varint (most tags and lengths) read inline */
static inline __attribute__((always_inline)) int read_varint(const unsigned char *b, Py_ssize_t n, Py_ssize_t *i,
                                                             u128 *out) {
    Py_ssize_t j = *i;
    if (j < n && b[j] < 0x80) {
        *out = b[j];
        *i = j + 1;
        return OK;
    }
    return read_varint_on(b, n, i, out);
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

/* strings by the bytes they were decoded from: one object per distinct run of bytes (a direct-mapped table: a
 * crafted run of colliding bytes costs a decode each, as without it) */
typedef struct {
    uint64_t hash;
    PyObject *text;
} StrSlot;

/* a hash of a run of bytes (FNV-1a's primes, eight bytes a step), for the tables of strings */
static uint64_t bytes_hash(const unsigned char *p, Py_ssize_t len) {
    uint64_t h = 1469598103934665603u ^ (uint64_t)len;
    Py_ssize_t k = 0;
    for (; k + 8 <= len; k += 8) {
        uint64_t w;
        memcpy(&w, p + k, 8);
        h = (h ^ w) * 1099511628211u, h ^= h >> 29;
    }
    for (; k < len; k++) h = (h ^ p[k]) * 1099511628211u;
    h ^= h >> 32, h *= 0xd6e8feb86659fd93u, h ^= h >> 32;  /* a product carries only upward: the low bits, which
                                                             * index the tables, mixed from every bit */
    return h;
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

/* next_field's whole path: every field, every check, every error */
static int next_field_on(Reader *r, Field *f) {
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

/* a varint of one or two bytes at b[i] (a field's key, a length) into *v: where it ends, or -1 (longer, or cut) */
static inline __attribute__((always_inline)) Py_ssize_t short_varint(const unsigned char *b, Py_ssize_t n, Py_ssize_t i,
                                                                     unsigned *v) {
    if (i < n && b[i] < 0x80) {
        *v = b[i];
        return i + 1;
    }
    if (i < n - 1 && b[i + 1] < 0x80) {  /* not i + 1 < n: no overflow whatever the position */
        *v = (b[i] & 0x7Fu) | ((unsigned)b[i + 1] << 7);
        return i + 2;
    }
    return -1;
}

/* 1: a field read into f; 0: the message ended whole; -1: the error raised (Damaged, in the twin's words). A field
 * whose key is one or two bytes, and whose value is a varint or whose length (one or two bytes) lies within the
 * message, is read inline: most fields, 1.6 million of them in a .pftrace of 100,000 slices, where the call and its
 * 128-bit checks were 14% of the read's instructions. Anything else, and every error, goes the whole path from the
 * field's start. */
static inline __attribute__((always_inline)) int next_field(Reader *r, Field *f) {
    Py_ssize_t i = r->i, j;
    unsigned key, length;
    if (i >= r->end || r->count >= max_fields || (j = short_varint(r->b, r->n, i, &key)) < 0) return next_field_on(r, f);
    if ((key & 7) == 0) {
        u128 value;
        if (read_varint(r->b, r->n, &j, &value) == OK) {
            f->wire = 0, f->number = key >> 3, f->value = value;
            r->i = j, r->count += 1;
            return 1;
        }
    } else if ((key & 7) == 2 && (j = short_varint(r->b, r->n, j, &length)) >= 0 && j + (Py_ssize_t)length <= r->end) {
        f->wire = 2, f->number = key >> 3, f->value = length;
        f->start = j, f->stop = j + (Py_ssize_t)length;
        r->i = f->stop, r->count += 1;
        return 1;
    }
    return next_field_on(r, f);
}

/* a field as protobuf.fields gives it: (number, wire, an int or a (start, end) span) */
static PyObject *track_int(u128 v);

static PyObject *field_tuple(const Field *f) {  /* an int as track_int keeps it: a descriptor's uuid the events' */
    PyObject *value = f->wire == 2 ? span(f->start, f->stop) : track_int(f->value);
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

/* an instance of a heap type freed, what it held already released, and its type released (each instance holds a
 * reference to its heap type) */
static void instance_free(PyObject *self) {
    PyTypeObject *type = Py_TYPE(self);
    freefunc free_slot = (freefunc)PyType_GetSlot(type, Py_tp_free);
    free_slot(self);
    Py_DECREF(type);
}

/* the dealloc of a heap type the cyclic GC tracks: untracked, cleared, freed */
static void gc_dealloc(PyObject *self, inquiry clear) {
    PyObject_GC_UnTrack(self);
    clear(self);
    instance_free(self);
}

/* A track's uuid as one int object a value: each packet names its track again, and the dicts keyed by tracks (the
 * open slices, the tracks, the ends) compare a new int by value (a rich comparison, 130 instructions) where the same
 * object is found by identity. Ints are immutable, so which object comes back is not seen. A direct-mapped table
 * for the life of the process; values past 64 bits are made anew. */
#define TRACK_SLOTS 256
static struct {
    uint64_t value;
    PyObject *obj;
} s_track_ints[TRACK_SLOTS];

static PyObject *track_int(u128 v) {
    if (v > (u128)UINT64_MAX) return py_int(v);
    uint64_t x = (uint64_t)v;
    unsigned k = (unsigned)((x * 0x9E3779B97F4A7C15ull) >> 56);
    if (s_track_ints[k].obj && s_track_ints[k].value == x) return new_ref(s_track_ints[k].obj);
    PyObject *obj = PyLong_FromUnsignedLongLong((unsigned long long)x);
    if (obj) {
        PyObject *old = s_track_ints[k].obj;
        s_track_ints[k].obj = new_ref(obj), s_track_ints[k].value = x;
        Py_XDECREF(old);
    }
    return obj;
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
        has_track ? track_int(track) : PyLong_FromLong(-1),
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
/* legacy JSON values decoded before, by their bytes (a kernel's grid and block repeat on every kernel): the last
 * JSON_CACHE of at most JSON_CACHE_BYTES whose value is a list of ints, floats, text, bools and None, handed out as
 * a new list of the same items (what decoding the same bytes again gives: each event's list is its own). Private:
 * no Python code sees a list kept here. */
enum { JSON_CACHE = 32, JSON_CACHE_BYTES = 64 };
static struct {
    Py_ssize_t size;
    unsigned char bytes[JSON_CACHE_BYTES];
    PyObject *value;
} json_cache[JSON_CACHE];
static int json_cache_next = 0;

static int flat_list(PyObject *v) {
    if (!PyList_CheckExact(v)) return 0;
    for (Py_ssize_t k = 0; k < PyList_Size(v); k++) {
        PyObject *item = PyList_GetItem(v, k);
        if (!(PyLong_CheckExact(item) || PyFloat_CheckExact(item) || PyUnicode_CheckExact(item) ||
              PyBool_Check(item) || item == Py_None))
            return 0;
    }
    return 1;
}

/* a copy of the value the bytes decoded to before, or NULL (not kept; no error) */
static PyObject *json_cached(const unsigned char *b, Py_ssize_t size, int *failed) {
    *failed = 0;
    if (size > JSON_CACHE_BYTES) return NULL;
    for (int k = 0; k < JSON_CACHE; k++)
        if (json_cache[k].value && json_cache[k].size == size && memcmp(json_cache[k].bytes, b, (size_t)size) == 0) {
            PyObject *copy = PyList_GetSlice(json_cache[k].value, 0, PyList_Size(json_cache[k].value));
            *failed = !copy;
            return copy;
        }
    return NULL;
}

/* the value decoded from these bytes kept (a flat list of them only), replacing the oldest */
static void json_keep(const unsigned char *b, Py_ssize_t size, PyObject *value) {
    if (size > JSON_CACHE_BYTES || !flat_list(value)) return;
    PyObject *copy = PyList_GetSlice(value, 0, PyList_Size(value));
    if (!copy) {
        PyErr_Clear();  /* not kept: the value itself is the answer */
        return;
    }
    int k = json_cache_next;
    json_cache_next = (json_cache_next + 1) % JSON_CACHE;
    Py_XDECREF(json_cache[k].value);
    json_cache[k].value = copy;
    json_cache[k].size = size;
    memcpy(json_cache[k].bytes, b, (size_t)size);
}

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
    int failed;
    PyObject *known = json_cached(b + f->start, f->stop - f->start, &failed);
    if (known || failed) return known;
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
    if (value && PyList_CheckExact(value)) json_keep(b + f->start, f->stop - f->start, value);
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

static PyObject *memo_key(const unsigned char *p, Py_ssize_t len);

/* one annotation, (its EventArgs field or None, its value): perfetto._decode_annotation's result */
static PyObject *annotation(PyObject *bytes, Py_ssize_t n, Py_ssize_t start, Py_ssize_t end, PyObject *seq) {
    const unsigned char *b = (const unsigned char *)PyBytes_AsString(bytes);
    Reader r = {b, n, start, end, 0};  /* n: where the packet ends (reads stop there), the bytes' end or before */
    Field f, last = {0, 0, 0, 0, 0};
    int more, has_value = 0, nested = 0;
    PyObject *attr = new_ref(Py_None);
    while ((more = next_field(&r, &f)) == 1) {
        long number = f.number < 64 ? (long)f.number : -1;
        PyObject *named = NULL;
        if (number == 10 && f.wire == 2) {  /* a name written out: its bytes object kept (memo_key), its hash with it */
            PyObject *key = f.stop - f.start <= memo_bytes ? memo_key(b + f.start, f.stop - f.start)
                                                           : PyBytes_FromStringAndSize((const char *)b + f.start, f.stop - f.start);
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
        int cut = n < PyBytes_Size(bytes);  /* a run's packet: the note up to its packet's end, the bound it reads to */
        PyObject *own = cut ? PyBytes_FromStringAndSize((const char *)b + start, n - start) : new_ref(bytes);
        PyObject *where = own ? span(cut ? 0 : start, cut ? end - start : end) : NULL;
        PyObject *found = where ? PyObject_CallFunctionObjArgs(decode_annotation, own, where, seq, NULL) : NULL;
        Py_XDECREF(where);
        Py_XDECREF(own);
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

/* Memo: a sequence's memo of annotations by their bytes (perfetto._Sequence.memo where the core is built), a
 * mapping of bytes to what the annotation decoded to. A dict keyed by bytes cost a note a bytes object, its SipHash
 * and, where the object was not the key's own, a comparison: 20% of a .pftrace read's instructions. one_note looks
 * a note up here by the bytes where they lie, with the core's own hash. It is the memo, not a mirror of one: Python
 * reads and changes it only through these methods, so what a look-up answers is what it holds. Entries keep the
 * order they were set in, as a dict's; a key deleted is a hole until the table is rebuilt.
 *
 * The core's hash is not keyed, so a trace can be made of notes that collide. Every key lies within MEMO_PROBES
 * slots of its own on the look-up's path, so a look-up stops there; a key that would lie further turns the memo
 * into a dict (SipHash, keyed per process), which it then stays until cleared: a hostile trace costs what a dict
 * costs. */
typedef struct {
    uint64_t hash;
    PyObject *key;  /* bytes; NULL: deleted */
    PyObject *value;
} MemoEntry;

typedef struct {
    PyObject_HEAD
    MemoEntry *entries;  /* in the order set */
    Py_ssize_t used, live, cap;  /* entries written (holes included), held, allocated */
    int32_t *index;  /* mask + 1 slots: MEMO_FREE, MEMO_HOLE, or an entry's number */
    Py_ssize_t mask;
    PyObject *dict;  /* where the entries are instead, after a key too far from its slot; else NULL */
} Memo;

#define MEMO_FREE (-1)
#define MEMO_HOLE (-2)
#define MEMO_PROBES 32
static PyTypeObject *memo_type = NULL;

/* the slot of the entry of these bytes, or -1 */
static Py_ssize_t memo_slot(const Memo *m, const unsigned char *p, Py_ssize_t len, uint64_t h) {
    if (!m->index) return -1;
    Py_ssize_t i = (Py_ssize_t)(h & (uint64_t)m->mask);
    for (Py_ssize_t step = 1; step <= MEMO_PROBES; i = (i + step++) & m->mask) {
        int32_t at = m->index[i];
        if (at == MEMO_FREE) return -1;
        if (at >= 0) {
            const MemoEntry *e = &m->entries[at];
            if (e->hash == h && PyBytes_Size(e->key) == len && memcmp(PyBytes_AsString(e->key), p, (size_t)len) == 0)
                return i;
        }
    }
    return -1;
}

/* the first free slot or hole on the path of hash h in index, or -1: none within MEMO_PROBES */
static Py_ssize_t memo_free_slot(const int32_t *index, Py_ssize_t mask, uint64_t h) {
    Py_ssize_t i = (Py_ssize_t)(h & (uint64_t)mask);
    for (Py_ssize_t step = 1; step <= MEMO_PROBES; i = (i + step++) & mask)
        if (index[i] < 0) return i;
    return -1;
}

/* the value held for these bytes (not in dict form): borrowed, or NULL (no error) */
static PyObject *memo_find(const Memo *m, const unsigned char *p, Py_ssize_t len, uint64_t h) {
    Py_ssize_t i = memo_slot(m, p, len, h);
    return i < 0 ? NULL : m->entries[m->index[i]].value;
}

/* the table's entries and index given up: what they held is the caller's (to keep or to release) */
static void memo_detach(Memo *m, MemoEntry **entries, Py_ssize_t *used) {
    *entries = m->entries, *used = m->used;
    PyMem_Free(m->index);
    m->entries = NULL, m->index = NULL, m->used = m->live = m->cap = 0, m->mask = 0;
}

/* the entries moved into a dict, in their order: 0, or -1 with the error raised (the table kept) */
static int memo_to_dict(Memo *m) {
    PyObject *dict = PyDict_New();
    for (Py_ssize_t k = 0; dict && k < m->used; k++)
        if (m->entries[k].key && PyDict_SetItem(dict, m->entries[k].key, m->entries[k].value) < 0) Py_CLEAR(dict);
    if (!dict) return -1;
    MemoEntry *entries;
    Py_ssize_t used;
    memo_detach(m, &entries, &used);
    m->dict = dict;
    for (Py_ssize_t k = 0; k < used; k++) {  /* the dict holds them now */
        Py_XDECREF(entries[k].key);
        Py_XDECREF(entries[k].value);
    }
    PyMem_Free(entries);
    return 0;
}

/* the table rebuilt for at least want entries, the holes dropped: 1, 0 where a key would lie too far (the table as it
 * was), or -1 with MemoryError */
static int memo_rebuild(Memo *m, Py_ssize_t want) {
    Py_ssize_t cap = 8;
    while (cap < want + want / 2) cap *= 2;  /* room for half as many again before the next rebuild */
    if (cap > INT32_MAX / 2) return 0;  /* entries numbered in 32 bits: more go to a dict */
    MemoEntry *entries = PyMem_Malloc(sizeof(MemoEntry) * (size_t)cap);
    int32_t *index = PyMem_Malloc(sizeof(int32_t) * (size_t)(cap * 2));  /* entries at most half the slots */
    if (!entries || !index) {
        PyMem_Free(entries);
        PyMem_Free(index);
        PyErr_NoMemory();
        return -1;
    }
    Py_ssize_t mask = cap * 2 - 1, n = 0;
    for (Py_ssize_t i = 0; i <= mask; i++) index[i] = MEMO_FREE;
    for (Py_ssize_t k = 0; k < m->used; k++) {
        if (!m->entries[k].key) continue;
        Py_ssize_t i = memo_free_slot(index, mask, m->entries[k].hash);
        if (i < 0) {
            PyMem_Free(entries);
            PyMem_Free(index);
            return 0;
        }
        entries[n] = m->entries[k];
        index[i] = (int32_t)n++;
    }
    PyMem_Free(m->entries);
    PyMem_Free(m->index);
    m->entries = entries, m->index = index, m->mask = mask, m->cap = cap, m->used = n;
    return 1;
}

/* value set for key (bytes, of hash h): 0, or -1 with the error raised */
static int memo_put(Memo *m, PyObject *key, uint64_t h, PyObject *value) {
    if (m->dict) return PyDict_SetItem(m->dict, key, value);
    Py_ssize_t i = memo_slot(m, (const unsigned char *)PyBytes_AsString(key), PyBytes_Size(key), h);
    if (i >= 0) {
        MemoEntry *e = &m->entries[m->index[i]];
        PyObject *old = e->value;
        e->value = new_ref(value);
        Py_DECREF(old);
        return 0;
    }
    int built = m->used >= m->cap ? memo_rebuild(m, m->live + 1) : 1;
    if (built < 0) return -1;
    if (!built || (i = memo_free_slot(m->index, m->mask, h)) < 0)  /* too far from its slot: a dict from now on */
        return memo_to_dict(m) < 0 ? -1 : PyDict_SetItem(m->dict, key, value);
    MemoEntry *e = &m->entries[m->used];
    e->hash = h, e->key = new_ref(key), e->value = new_ref(value);
    m->index[i] = (int32_t)m->used++;
    m->live += 1;
    return 0;
}

/* a bytes key as the memo keeps it, exact bytes (a subclass's by its bytes: its __hash__ and __eq__ never run, so
 * no Python code runs while an entry is found, set or moved), and its hash: a new reference, or NULL with the error
 * raised (a key of another type: a TypeError, or the key's own where it is not hashable) */
static PyObject *memo_key_of(PyObject *key, uint64_t *h) {
    if (!PyBytes_Check(key)) {
        if (PyObject_Hash(key) != -1) PyErr_SetString(PyExc_TypeError, "a Memo's keys are bytes");
        return NULL;
    }
    PyObject *exact = PyBytes_CheckExact(key) ? new_ref(key) : PyBytes_FromStringAndSize(PyBytes_AsString(key),
                                                                                          PyBytes_Size(key));
    if (exact) *h = bytes_hash((const unsigned char *)PyBytes_AsString(exact), PyBytes_Size(exact));
    return exact;
}

/* the value of a key: borrowed, or NULL (*failed: with the error raised, a dict's for an unhashable key) */
static PyObject *memo_get_of(Memo *m, PyObject *key, int *failed) {
    *failed = 0;
    if (!PyBytes_Check(key)) {  /* held by no entry: a miss, as a dict's (its TypeError where not hashable) */
        *failed = PyObject_Hash(key) == -1;
        return NULL;
    }
    const unsigned char *p = (const unsigned char *)PyBytes_AsString(key);
    if (m->dict) {  /* found by its bytes, as in the table (a bytes subclass's methods never run) */
        PyObject *exact = PyBytes_CheckExact(key) ? new_ref(key) : PyBytes_FromStringAndSize((const char *)p,
                                                                                              PyBytes_Size(key));
        PyObject *value = exact ? PyDict_GetItemWithError(m->dict, exact) : NULL;
        Py_XDECREF(exact);
        *failed = !value && PyErr_Occurred();
        return value;
    }
    return memo_find(m, p, PyBytes_Size(key), bytes_hash(p, PyBytes_Size(key)));
}

/* KeyError(key), as a dict raises it: the key as its one argument (a tuple key is not taken as the arguments) */
static void memo_key_error(PyObject *key) {
    PyObject *args = PyTuple_Pack(1, key);
    if (args) {
        PyErr_SetObject(PyExc_KeyError, args);
        Py_DECREF(args);
    }
}

static Py_ssize_t memo_length(Memo *m) {
    return m->dict ? PyDict_Size(m->dict) : m->live;
}

static PyObject *memo_subscript(Memo *m, PyObject *key) {
    int failed;
    PyObject *value = memo_get_of(m, key, &failed);
    if (value) return new_ref(value);
    if (!failed) memo_key_error(key);
    return NULL;
}

static int memo_ass_subscript(Memo *m, PyObject *key, PyObject *value) {
    uint64_t h = 0;
    if (!PyBytes_Check(key) && PyObject_Hash(key) == -1) return -1;  /* a dict's TypeError where not hashable */
    PyObject *exact = PyBytes_Check(key) ? memo_key_of(key, &h) : NULL;
    if (PyErr_Occurred()) return -1;
    if (value) {
        int put = exact ? memo_put(m, exact, h, value) : -1;
        if (!exact) PyErr_SetString(PyExc_TypeError, "a Memo's keys are bytes");
        Py_XDECREF(exact);
        return put;
    }
    Py_ssize_t i = exact && !m->dict ? memo_slot(m, (const unsigned char *)PyBytes_AsString(exact), PyBytes_Size(exact), h)
                                     : -1;
    if (exact && m->dict) {
        int deleted = PyDict_DelItem(m->dict, exact);
        Py_DECREF(exact);
        return deleted;
    }
    Py_XDECREF(exact);
    if (i < 0) {
        memo_key_error(key);
        return -1;
    }
    MemoEntry *e = &m->entries[m->index[i]];
    PyObject *old_key = e->key, *old_value = e->value;
    e->key = e->value = NULL;  /* unlinked before a finalizer can run */
    m->index[i] = MEMO_HOLE;
    m->live -= 1;
    Py_DECREF(old_key);
    Py_DECREF(old_value);
    return 0;
}

static int memo_contains(Memo *m, PyObject *key) {
    int failed;
    PyObject *value = memo_get_of(m, key, &failed);
    return failed ? -1 : value != NULL;
}

/* every entry dropped, the table again; what they held released once the memo is empty (a finalizer sees it so) */
static int memo_clear(Memo *m) {
    MemoEntry *entries;
    Py_ssize_t used;
    PyObject *dict = m->dict;
    m->dict = NULL;
    memo_detach(m, &entries, &used);
    for (Py_ssize_t k = 0; k < used; k++) {
        Py_XDECREF(entries[k].key);
        Py_XDECREF(entries[k].value);
    }
    PyMem_Free(entries);
    Py_XDECREF(dict);
    return 0;
}

static PyObject *memo_clear_method(Memo *m, PyObject *unused) {
    (void)unused;
    memo_clear(m);
    Py_RETURN_NONE;
}

static PyObject *memo_get(Memo *m, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs < 1 || nargs > 2) {
        PyErr_SetString(PyExc_TypeError, "Memo.get(key[, default])");
        return NULL;
    }
    int failed;
    PyObject *value = memo_get_of(m, args[0], &failed);
    if (failed) return NULL;
    return new_ref(value ? value : nargs == 2 ? args[1] : Py_None);
}

/* keys (0), values (1) or items (2), in the order set: a list (what a caller does to it changes nothing here) */
static PyObject *memo_list(Memo *m, int which) {
    if (m->dict) return which == 0 ? PyDict_Keys(m->dict) : which == 1 ? PyDict_Values(m->dict) : PyDict_Items(m->dict);
    PyObject *out = PyList_New(0);
    for (Py_ssize_t k = 0; out && k < m->used; k++) {
        MemoEntry *e = &m->entries[k];
        if (!e->key) continue;
        PyObject *item = which == 0 ? new_ref(e->key) : which == 1 ? new_ref(e->value)
                                                                   : PyTuple_Pack(2, e->key, e->value);
        if (!item || PyList_Append(out, item) < 0) Py_CLEAR(out);
        Py_XDECREF(item);
    }
    return out;
}

static PyObject *memo_keys_method(Memo *m, PyObject *unused) {
    (void)unused;
    return memo_list(m, 0);
}

static PyObject *memo_values_method(Memo *m, PyObject *unused) {
    (void)unused;
    return memo_list(m, 1);
}

static PyObject *memo_items_method(Memo *m, PyObject *unused) {
    (void)unused;
    return memo_list(m, 2);
}

static PyObject *memo_iter(Memo *m) {
    PyObject *keys = memo_list(m, 0), *it = keys ? PyObject_GetIter(keys) : NULL;
    Py_XDECREF(keys);
    return it;
}

static PyObject *memo_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    if (PyTuple_Size(args) || (kwargs && PyDict_Size(kwargs))) {
        PyErr_SetString(PyExc_TypeError, "Memo() takes no arguments");
        return NULL;
    }
    allocfunc alloc = (allocfunc)PyType_GetSlot(type, Py_tp_alloc);
    return alloc(type, 0);  /* zeroed: no entries, no table */
}

static int memo_traverse(Memo *m, visitproc visit, void *arg) {
    for (Py_ssize_t k = 0; k < m->used; k++) Py_VISIT(m->entries[k].value);
    Py_VISIT(m->dict);
    Py_VISIT(Py_TYPE(m));
    return 0;
}

static void memo_dealloc(Memo *m) {
    gc_dealloc((PyObject *)m, (inquiry)memo_clear);
}

static PyMethodDef memo_methods[] = {
    {"get", (PyCFunction)(void (*)(void))memo_get, METH_FASTCALL, "the value of a key, or the default (None)"},
    {"clear", (PyCFunction)memo_clear_method, METH_NOARGS, "every entry dropped"},
    {"keys", (PyCFunction)memo_keys_method, METH_NOARGS, "the keys in the order set (a list)"},
    {"values", (PyCFunction)memo_values_method, METH_NOARGS, "the values in the order set (a list)"},
    {"items", (PyCFunction)memo_items_method, METH_NOARGS, "(key, value) in the order set (a list)"},
    {NULL, NULL, 0, NULL},
};

static PyObject *memo_get_spilled(Memo *m, void *closure) {
    (void)closure;
    return PyBool_FromLong(m->dict != NULL);
}

static PyGetSetDef memo_getset[] = {
    {"spilled", (getter)memo_get_spilled, NULL, "whether the entries went to a dict (a key too far from its slot)",
     NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot memo_slots[] = {
    {Py_tp_new, memo_new}, {Py_tp_dealloc, memo_dealloc}, {Py_tp_traverse, memo_traverse},
    {Py_tp_clear, memo_clear}, {Py_tp_methods, memo_methods}, {Py_tp_iter, memo_iter}, {Py_tp_getset, memo_getset},
    {Py_mp_length, memo_length}, {Py_mp_subscript, memo_subscript}, {Py_mp_ass_subscript, memo_ass_subscript},
    {Py_sq_contains, memo_contains}, {Py_sq_length, memo_length}, {Py_tp_hash, PyObject_HashNotImplemented},
    {Py_tp_doc, "a sequence's memo of annotations by their bytes (perfetto._Sequence.memo), compiled"}, {0, NULL},
};

static PyType_Spec memo_spec = {
    "wizard._core.Memo", sizeof(Memo), 0, Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC, memo_slots,
};

/* the twin's full memo: where the sequence's holds any, its entries leave the count and it starts again (len(memo)
 * and memo.clear(), as the twin calls them on any mapping); 0, or -1 with the error raised */
static int memo_restart(PyObject *memo, Py_ssize_t *entries) {
    Py_ssize_t held = PyObject_Size(memo);
    if (held < 0) return -1;
    if (!held) return 0;
    *entries -= held;
    if (PyDict_CheckExact(memo)) {
        PyDict_Clear(memo);
        return 0;
    }
    if (Py_TYPE(memo) == memo_type) return memo_clear((Memo *)memo);
    PyObject *done = PyObject_CallMethod(memo, "clear", NULL);
    Py_XDECREF(done);
    return done ? 0 : -1;
}

/* The memos' keys by their bytes (the notes' memo, the slice ends'): each look-up made a bytes object and hashed it
 * with SipHash (a note's: 20% of a .pftrace read's instructions). The same bytes object is handed again for the
 * same bytes: its hash is kept in it, and the memo, which holds it as the key of its entry, finds it by identity.
 * The look-up is the memo's own, so what it answers is what it holds. A direct-mapped table (colliding bytes only
 * make a new object) of short keys (a memo's are at most MEMO_BYTES, an end's END_BYTES), for the life of the
 * process. */
#define KEY_SLOTS 2048
typedef struct {
    uint64_t hash;
    PyObject *key;
} KeySlot;
static KeySlot memo_keys[KEY_SLOTS];

/* the key of the bytes at p[0..len): a new reference, or NULL with the error raised */
static PyObject *memo_key(const unsigned char *p, Py_ssize_t len) {
    uint64_t h = bytes_hash(p, len);
    KeySlot *slot = &memo_keys[h & (KEY_SLOTS - 1)];
    if (slot->key && slot->hash == h && PyBytes_Size(slot->key) == len &&
        memcmp(PyBytes_AsString(slot->key), p, (size_t)len) == 0)
        return new_ref(slot->key);
    PyObject *key = PyBytes_FromStringAndSize((const char *)p, len);
    if (key) {
        PyObject *old = slot->key;
        slot->key = new_ref(key), slot->hash = h;
        Py_XDECREF(old);
    }
    return key;
}


/* one note at bytes[start:end] into args through the memo (n: where its packet ends): 0, or -1 with the error
 * raised */
static int one_note(PyObject *bytes, Py_ssize_t n, Py_ssize_t start, Py_ssize_t end, PyObject *seq, PyObject *memo,
                    PyObject *args, Py_ssize_t *entries) {
    int is_short = end - start <= memo_bytes, own = Py_TYPE(memo) == memo_type && !((Memo *)memo)->dict;
    const unsigned char *p = (const unsigned char *)PyBytes_AsString(bytes) + start;
    uint64_t h = 0;
    PyObject *key = NULL, *found = NULL;
    if (is_short && own) {  /* the memo's own look-up, by the bytes where they lie */
        h = bytes_hash(p, end - start);
        found = memo_find((Memo *)memo, p, end - start, h);
        Py_XINCREF(found);
    } else if (is_short) {
        key = memo_key(p, end - start);
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
        if (!(found = annotation(bytes, n, start, end, seq))) goto failed;
        if (is_short) {
            PyObject *value = PySequence_GetItem(found, 1);  /* found[1], as the twin reads it: any sequence */
            if (!value) goto failed;
            int kept = !PyList_Check(value) && !PyDict_Check(value);
            Py_DECREF(value);
            if (kept && *entries >= memo_limit && memo_restart(memo, entries) < 0) goto failed;
            if (kept && *entries < memo_limit) {
                if (own && !(key = PyBytes_FromStringAndSize((const char *)p, end - start))) goto failed;
                if (own ? memo_put((Memo *)memo, key, h, found) < 0 : PyObject_SetItem(memo, key, found) < 0)
                    goto failed;
                *entries += 1;
            }
        }
    }
    if (PyTuple_CheckExact(found) && PyTuple_Size(found) == 2) {  /* what the memo holds: (attr, value) */
        PyObject *attr = PyTuple_GetItem(found, 0);
        if (attr != Py_None && (PyDict_CheckExact(args) ? PyDict_SetItem(args, attr, PyTuple_GetItem(found, 1))
                                                        : PyObject_SetItem(args, attr, PyTuple_GetItem(found, 1))) < 0)
            goto failed;
    } else {  /* found[0] and found[1], as the twin reads them: any sequence */
        PyObject *attr = PySequence_GetItem(found, 0);
        if (!attr) goto failed;
        if (attr != Py_None) {
            PyObject *value = PySequence_GetItem(found, 1);
            int set = !value ? -1 : PyDict_CheckExact(args) ? PyDict_SetItem(args, attr, value)
                                                            : PyObject_SetItem(args, attr, value);
            Py_XDECREF(value);
            if (set < 0) {
                Py_DECREF(attr);
                goto failed;
            }
        }
        Py_DECREF(attr);
    }
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
        if (one_note(bytes, n, start, end, seq, memo, out, &entries) < 0) Py_CLEAR(memo);
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

/* Run: the packets split_run found, as a sequence of their bytes (run[k] makes packet k's), lying in the buffer they
 * were found in: Slices.packets reads a run's packets there, where a bytes object a packet, made and freed, was 15% of
 * a .pftrace read. Python reads one as it reads the twin's list. */
typedef struct {
    PyObject_HEAD
    PyObject *buf;      /* the bytes they lie in */
    Py_ssize_t count;
    Py_ssize_t *spans;  /* packet k starts at spans[3k] (its field's tag), its bytes are buf[spans[3k + 1]:spans[3k + 2]] */
} Run;

static PyTypeObject *run_type = NULL;

static Py_ssize_t run_length(Run *run) {
    return run->count;
}

static PyObject *run_item(Run *run, Py_ssize_t k) {
    if (k < 0 || k >= run->count) {
        PyErr_SetString(PyExc_IndexError, "a run's packet out of range");
        return NULL;
    }
    return PyBytes_FromStringAndSize(PyBytes_AsString(run->buf) + run->spans[3 * k + 1],
                                     run->spans[3 * k + 2] - run->spans[3 * k + 1]);
}

static void run_dealloc(Run *run) {
    Py_XDECREF(run->buf);
    PyMem_Free(run->spans);
    instance_free((PyObject *)run);
}

static PyType_Slot run_slots[] = {
    {Py_tp_dealloc, run_dealloc}, {Py_sq_length, run_length}, {Py_sq_item, run_item},
    {Py_tp_doc, "the packets split_run found: run[k] is packet k's bytes"}, {0, NULL},
};

static PyType_Spec run_spec = {"wizard._core.Run", sizeof(Run), 0, Py_TPFLAGS_DEFAULT, run_slots};

/* pure_split_packets' reading: the whole packets at b[pos:], at most limit, as spans (PyMem, 3 a packet: where its field
 * starts, where its bytes start and end; NULL where none); the position after the last, or -1 with the error raised */
static Py_ssize_t split_spans(const unsigned char *b, Py_ssize_t n, Py_ssize_t pos, Py_ssize_t limit,
                              Py_ssize_t max_packet, Py_ssize_t **spans, Py_ssize_t *count) {
    Py_ssize_t cap = 0;
    *spans = NULL, *count = 0;
    for (Py_ssize_t k = 0; k < limit && n - pos >= 20 && b[pos] == 0x0A; k++) {
        Py_ssize_t i = pos + 1;
        u128 size;
        if (read_varint(b, n, &i, &size) != OK || size > (u128)max_packet || (u128)i + size > (u128)n) break;
        if (*count == cap) {
            cap = cap ? cap * 2 : 256;
            Py_ssize_t *grown = cap < PY_SSIZE_T_MAX / 32 ? PyMem_Realloc(*spans, sizeof(Py_ssize_t) * 3 * (size_t)cap)
                                                          : NULL;
            if (!grown) {
                PyErr_NoMemory();
                return -1;
            }
            *spans = grown;
        }
        Py_ssize_t *at = *spans + 3 * *count;
        at[0] = pos, at[1] = i, at[2] = i + (Py_ssize_t)size;
        *count += 1;
        pos = i + (Py_ssize_t)size;
    }
    return pos;
}

/* split_run's arguments read: 1, 0 where the twin is to answer (types, values past 63 bits,
 * Python's meaning of a negative), -1 */
static int split_args(PyObject *const *args, Py_ssize_t nargs, Py_ssize_t *pos, Py_ssize_t *limit,
                      Py_ssize_t *max_packet) {
    if (nargs != 4 || !PyBytes_Check(args[0]) || !PyLong_CheckExact(args[1]) || !PyLong_CheckExact(args[2]) ||
        !PyLong_CheckExact(args[3]))
        return 0;
    int wide = (*pos = PyLong_AsSsize_t(args[1])) == -1 && PyErr_Occurred();
    wide = wide || ((*limit = PyLong_AsSsize_t(args[2])) == -1 && PyErr_Occurred());
    wide = wide || ((*max_packet = PyLong_AsSsize_t(args[3])) == -1 && PyErr_Occurred());
    if (wide || *pos < 0 || *max_packet < 0) {  /* past 63 bits, or Python's meaning: the twin's */
        PyErr_Clear();
        return 0;
    }
    return 1;
}

/* split_run(buf, pos, limit, max_packet): perfetto.pure_split_packets, the packets a Run lying in buf and their
 * starts int64s (a memoryview of them): neither an object a packet (what the twin gives, where the arguments are not
 * ints of 63 bits, is the twin's lists) */
static PyObject *core_split_run(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (!pure_split) return not_bound();
    Py_ssize_t pos = 0, limit = 0, max_packet = 0;
    if (!split_args(args, nargs, &pos, &limit, &max_packet)) return call_pure(pure_split, args, nargs);
    if (!run_type && !(run_type = (PyTypeObject *)PyType_FromSpec(&run_spec))) return NULL;
    allocfunc alloc = (allocfunc)PyType_GetSlot(run_type, Py_tp_alloc);
    Run *run = (Run *)alloc(run_type, 0);
    if (!run) return NULL;
    run->buf = new_ref(args[0]);
    pos = split_spans((const unsigned char *)PyBytes_AsString(args[0]), PyBytes_Size(args[0]), pos, limit, max_packet,
                      &run->spans, &run->count);
    PyObject *raw = pos < 0 ? NULL : PyBytes_FromStringAndSize(NULL, run->count * (Py_ssize_t)sizeof(long long));
    if (raw) {
        long long *at = (long long *)(void *)PyBytes_AsString(raw);
        for (Py_ssize_t k = 0; k < run->count; k++) at[k] = (long long)run->spans[3 * k];
    }
    PyObject *view = raw ? PyMemoryView_FromObject(raw) : NULL;
    PyObject *starts = view ? PyObject_CallMethod(view, "cast", "s", "q") : NULL;
    Py_XDECREF(raw);
    Py_XDECREF(view);
    if (!starts) {
        Py_DECREF(run);
        return NULL;
    }
    PyObject *items[3] = {(PyObject *)run, starts, PyLong_FromSsize_t(pos)};
    return tuple_of(items, 3);
}

/* track_event(b, start, end, seq): perfetto.pure_track_event, track_event_fields with what the decoder made of them
 * next: the name as text (a span decoded, at most name_bytes of it, then max_name characters; an iid looked up in
 * the sequence's names) and the category (the first of the categories, cut as a name is, and category iids, in
 * their order, that names one), the fields left for Python (gpu_correlation, legacy events) in their order or None:
 * (type, track, name, category or None, the annotations' spans, the fields left or None) */
static PyObject *pure_track_event_named = NULL, *name_names = NULL, *name_categories = NULL;
static Py_ssize_t name_bytes = 4096, max_name = 1024;

static PyObject *cut_span(PyObject *bytes, Py_ssize_t first, Py_ssize_t last);

/* a name or category span as kept (perfetto._name): at most name_bytes of it decoded, then max_name characters */
static PyObject *cut_name(PyObject *bytes, PyObject *where) {
    Py_ssize_t first = PyLong_AsSsize_t(PyTuple_GetItem(where, 0));
    if (first == -1 && PyErr_Occurred()) return NULL;
    Py_ssize_t last = PyLong_AsSsize_t(PyTuple_GetItem(where, 1));
    if (last == -1 && PyErr_Occurred()) return NULL;
    return cut_span(bytes, first, last);
}

/* Names and categories written as text (not interned) decoded once each: a trace repeats a few of them on every
 * slice, and the same object for each lets every look-up after (sets, the collector's dicts) find it by identity
 * with its hash kept. A name's text is taken again only where its UTF-8 is the span's bytes (so it was decoded
 * whole, without a replacement) and it is within max_name (a test's smaller bound cuts it as before). */
#define NAME_SLOTS 1024
#define NAME_CACHED 256
static StrSlot name_cache[NAME_SLOTS];

static PyObject *cut_span(PyObject *bytes, Py_ssize_t first, Py_ssize_t last) {
    if (last - first > name_bytes) last = first + name_bytes;
    /* 0 <= first: a span of track_event_fields may pass the buffer's end where the window given did (Python's
     * slice stops at the end; so does this) */
    Py_ssize_t n = PyBytes_Size(bytes), len;
    if (last > n) last = n;
    if (first > last) first = last;
    const unsigned char *p = (const unsigned char *)PyBytes_AsString(bytes) + first;
    StrSlot *slot = NULL;
    uint64_t h = 0;
    if ((len = last - first) <= NAME_CACHED) {
        h = bytes_hash(p, len);
        slot = &name_cache[h & (NAME_SLOTS - 1)];
        if (slot->text && slot->hash == h) {
            Py_ssize_t size = 0;
            const char *held = PyUnicode_AsUTF8AndSize(slot->text, &size);
            if (!held) return NULL;
            if (size == len && memcmp(held, p, (size_t)len) == 0 && PyUnicode_GetLength(slot->text) <= max_name)
                return new_ref(slot->text);
        }
    }
    PyObject *name = PyUnicode_DecodeUTF8((const char *)p, len, "replace");
    if (name && slot && PyUnicode_GetLength(name) <= max_name) {
        PyObject *old = slot->text;
        slot->text = new_ref(name), slot->hash = h;
        Py_XDECREF(old);
    }
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

/* Slices(tracks, exact): perfetto.PureSlices, the slices open on each track and the events the closed ones become
 * (perfetto's old _open, _close, _emit and _event): a slice begun is held on its track's stack within MAX_OPEN
 * slices and MAX_OPEN_BYTES of what they keep; an end pops the innermost one of its track and makes it an Event
 * (its row from the reader's tracks, microseconds from the base, its args an EventArgs) into the batch, its
 * nanoseconds beside the table the collector puts it in (ExactTimes.add's int64 rule); a launch linked to render
 * stages without its correlation waits in pending (MAX_PENDING). Every method returns True where the batch is due
 * to be handed to the collector (take). No Python code runs inside a call (dict and set look-ups of ints and text,
 * msgspec's constructors, array.append): the state is read again at every call. The exact nanoseconds are held
 * here as int64s and added to ExactTimes' arrays at take(), with the events they go beside (an array.append call a
 * number was 3% of a .pftrace read), where the arrays are array('q'); else appended one by one. */
typedef struct {
    PyObject_HEAD
    PyObject *open;     /* {track: [began, ...]}: private, never an empty stack */
    PyObject *tracks;   /* the reader's {uuid: _Track} */
    PyObject *exact;    /* ExactTimes: its usable flag */
    PyObject *append[6];  /* exact.ts[0..2].append, exact.dur[0..2].append */
    PyObject *extend[6];  /* their frombytes, where every array is array('q'); else NULL */
    struct {
        long long *v;
        Py_ssize_t n, cap;
    } held[6];            /* the exact times not yet added, in the arrays' order */
    PyObject *batch, *pending, *base;
    PyObject *ends;     /* the reader's {a slice end's bytes: its track, -1 the sequence's default} */
    Py_ssize_t open_count, open_bytes, batch_bytes, track_events, memo_entries, at;
    Py_ssize_t max_open, max_open_bytes, max_pending, batch_limit, batch_bytes_limit, end_bytes, memo_limit;
    PyObject *sink;     /* the collector each event is handed to as it is made (sink()), or NULL: the batch */
    void *run;          /* what has been handed to the sink since it was last flushed (Sink, below), or NULL */
} Slices;

/* the sink (below, after the collector's dispatch): an event handed over; the run flushed; the run dropped */
static int sink_event(Slices *self, PyObject *const *f, PyObject *start, PyObject *length);
static int sink_flush(Slices *self);
static void sink_drop(Slices *self);
static Py_ssize_t sink_count(const Slices *self);
static int sink_traverse(Slices *self, visitproc visit, void *arg);

static PyTypeObject *slices_type = NULL;
static PyObject *s_event = NULL, *s_args = NULL, *s_no_args = NULL, *s_cats[5] = {NULL}, *s_empty = NULL;
static PyObject *s_correlation = NULL, *s_thousand = NULL, *s_pid = NULL, *s_tid = NULL, *s_usable = NULL;
static PyObject *s_args_read = NULL, *s_default_track = NULL, *s_blank = NULL, *s_track = NULL;
static long s_tables[3] = {0, 1, 2};  /* KERNELS, GPU_OPS, SLICES */
enum { S_KERNEL, S_GPU_OP, S_OP, S_RUNTIME, S_PYTHON };

static int slices_traverse(Slices *self, visitproc visit, void *arg) {
    Py_VISIT(Py_TYPE(self));
    Py_VISIT(self->open); Py_VISIT(self->tracks); Py_VISIT(self->exact);
    for (int k = 0; k < 6; k++) {
        Py_VISIT(self->append[k]);
        Py_VISIT(self->extend[k]);
    }
    Py_VISIT(self->batch); Py_VISIT(self->pending); Py_VISIT(self->base); Py_VISIT(self->ends);
    Py_VISIT(self->sink);
    return sink_traverse(self, visit, arg);
}

static int slices_clear(Slices *self) {
    Py_CLEAR(self->open); Py_CLEAR(self->tracks); Py_CLEAR(self->exact);
    for (int k = 0; k < 6; k++) {
        Py_CLEAR(self->append[k]);
        Py_CLEAR(self->extend[k]);
        PyMem_Free(self->held[k].v);  /* what was not taken goes with the events it went beside */
        self->held[k].v = NULL, self->held[k].n = self->held[k].cap = 0;
    }
    Py_CLEAR(self->batch); Py_CLEAR(self->pending); Py_CLEAR(self->base); Py_CLEAR(self->ends);
    sink_drop(self);
    Py_CLEAR(self->sink);
    return 0;
}

static void slices_dealloc(Slices *self) {
    gc_dealloc((PyObject *)self, (inquiry)slices_clear);
}

/* exact.ts[k].append and exact.dur[k].append for k in 0..2, and their frombytes where all six are array('q') (else
 * NULL): 0, or -1 with the error raised */
static int exact_appends(PyObject *exact, PyObject **out, PyObject **extend) {
    const char *names[2] = {"ts", "dur"};
    int direct = 1;
    for (int which = 0; which < 2; which++) {
        PyObject *arrays = PyObject_GetAttrString(exact, names[which]);
        if (!arrays) return -1;
        for (int k = 0; k < 3; k++) {
            PyObject *array = PySequence_GetItem(arrays, k);
            out[3 * which + k] = array ? PyObject_GetAttrString(array, "append") : NULL;
            if (!out[3 * which + k]) {  /* its error raised, before any look-up below clears one */
                Py_XDECREF(array);
                Py_DECREF(arrays);
                return -1;
            }
            PyObject *code = PyObject_GetAttrString(array, "typecode");
            if (!code) PyErr_Clear();
            direct = direct && code && PyUnicode_Check(code) && PyUnicode_CompareWithASCIIString(code, "q") == 0;
            Py_XDECREF(code);
            extend[3 * which + k] = direct ? PyObject_GetAttrString(array, "frombytes") : NULL;
            if (!extend[3 * which + k]) PyErr_Clear();
            direct = direct && extend[3 * which + k];
            Py_DECREF(array);
        }
        Py_DECREF(arrays);
    }
    if (!direct)
        for (int k = 0; k < 6; k++) Py_CLEAR(extend[k]);
    return 0;
}

static PyObject *slices_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    PyObject *tracks, *exact, *ends;
    Py_ssize_t bounds[7];
    if (kwargs || !PyArg_ParseTuple(args, "O!OO!(nnnnnnn):Slices", &PyDict_Type, &tracks, &exact, &PyDict_Type, &ends,
                                    &bounds[0], &bounds[1], &bounds[2], &bounds[3], &bounds[4], &bounds[5],
                                    &bounds[6])) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_TypeError, "Slices(tracks: dict, exact, ends: dict, (max_open, max_open_bytes, "
                                             "max_pending, batch, batch_bytes, end_bytes, memo_limit))");
        return NULL;
    }
    allocfunc alloc = (allocfunc)PyType_GetSlot(type, Py_tp_alloc);
    Slices *self = (Slices *)alloc(type, 0);
    if (!self) return NULL;
    self->max_open = bounds[0], self->max_open_bytes = bounds[1], self->max_pending = bounds[2];
    self->batch_limit = bounds[3], self->batch_bytes_limit = bounds[4];
    self->end_bytes = bounds[5], self->memo_limit = bounds[6];
    self->ends = new_ref(ends);
    self->tracks = new_ref(tracks);
    self->exact = new_ref(exact);
    self->open = PyDict_New();
    self->batch = PyList_New(0);
    self->pending = PyList_New(0);
    self->base = PyLong_FromLong(0);
    if (!self->open || !self->batch || !self->pending || !self->base || exact_appends(exact, self->append, self->extend) < 0) {
        Py_DECREF(self);
        return NULL;
    }
    return (PyObject *)self;
}

/* a - b for ints, as Python computes it (int64 where it fits) */
static PyObject *int_minus(PyObject *a, PyObject *b) {
    int over_a, over_b;
    long long x = PyLong_AsLongLongAndOverflow(a, &over_a), y, z;
    if (x == -1 && PyErr_Occurred()) return NULL;
    y = PyLong_AsLongLongAndOverflow(b, &over_b);
    if (y == -1 && PyErr_Occurred()) return NULL;
    if (over_a || over_b || __builtin_sub_overflow(x, y, &z)) return PyNumber_Subtract(a, b);
    return PyLong_FromLongLong(z);
}

/* v / 1000.0 for an int v, as Python computes it (the int correctly rounded to a double, then divided) */
static PyObject *micro(PyObject *v) {
    int over;
    long long x = PyLong_AsLongLongAndOverflow(v, &over);
    if (x == -1 && PyErr_Occurred()) return NULL;
    if (over) return PyNumber_TrueDivide(v, s_thousand);
    return PyFloat_FromDouble((double)x / 1000.0);
}

/* one time held for the array k: 0, or -1 with MemoryError */
static int exact_hold(Slices *self, int k, long long v) {
    if (self->held[k].n == self->held[k].cap) {
        Py_ssize_t cap = self->held[k].cap ? self->held[k].cap * 2 : 1024;
        long long *grown = cap < PY_SSIZE_T_MAX / 8 ? PyMem_Realloc(self->held[k].v, sizeof(long long) * (size_t)cap)
                                                    : NULL;
        if (!grown) {
            PyErr_NoMemory();
            return -1;
        }
        self->held[k].v = grown, self->held[k].cap = cap;
    }
    self->held[k].v[self->held[k].n++] = v;
    return 0;
}

/* the times held added to ExactTimes' arrays (frombytes, each array's in one call): 0, or -1 with the error raised */
static int exact_flush(Slices *self) {
    for (int k = 0; k < 6; k++) {
        Py_ssize_t n = self->held[k].n;
        if (!n || !self->extend[k]) continue;
        self->held[k].n = 0;  /* taken before any Python code runs */
        PyObject *bytes = PyBytes_FromStringAndSize((const char *)self->held[k].v, n * (Py_ssize_t)sizeof(long long));
        PyObject *done = bytes ? PyObject_CallFunctionObjArgs(self->extend[k], bytes, NULL) : NULL;
        Py_XDECREF(bytes);
        if (!done) return -1;
        Py_DECREF(done);
    }
    return 0;
}

/* an int as an int64: 1, or 0 where it does not fit (or an error is raised) */
static int int64_of(PyObject *v, long long *out) {
    int over;
    *out = PyLong_AsLongLongAndOverflow(v, &over);
    return !over && !(*out == -1 && PyErr_Occurred());
}

/* ExactTimes.add(table, ts, dur), given as int64s where both fit (fits), else 0 and 0 and usable False: held until
 * take() where the arrays are array('q'), else appended (the ints the twin appends, made from the int64s) */
static int exact_add(Slices *self, int table, long long t, long long d, int fits) {
    if (!fits) {
        if (PyObject_SetAttr(self->exact, s_usable, Py_False) < 0) return -1;
        t = d = 0;
    }
    if (self->extend[0]) return exact_hold(self, table, t) < 0 || exact_hold(self, 3 + table, d) < 0 ? -1 : 0;
    PyObject *ts = PyLong_FromLongLong(t), *dur = ts ? PyLong_FromLongLong(d) : NULL;
    PyObject *done = dur ? PyObject_CallFunctionObjArgs(self->append[table], ts, NULL) : NULL;
    Py_XDECREF(done);
    if (done) done = PyObject_CallFunctionObjArgs(self->append[3 + table], dur, NULL);
    Py_XDECREF(done);
    Py_XDECREF(ts);
    Py_XDECREF(dur);
    return done ? 0 : -1;
}

/* The categories looked up last (strs: their membership in the bound frozensets never changes), with their table
 * and whether their args are read: a trace's slices come in a few interned categories, and up to six set look-ups
 * an event were 2% of a .pftrace read's instructions. Found by identity among CAT_MEMO, the oldest replaced;
 * forgotten where the sets are bound again. */
#define CAT_MEMO 8
static struct {
    PyObject *cat;
    int table, wanted;  /* exact_table's and args_read's answers; -3 not yet asked */
} s_cat_memo[CAT_MEMO];
static int s_cat_next = 0;
static int s_cats_frozen = 0;  /* every bound set a frozenset: else nothing is remembered */

static void cat_memo_forget(void) {
    for (int k = 0; k < CAT_MEMO; k++) {
        Py_CLEAR(s_cat_memo[k].cat);
        s_cat_memo[k].table = s_cat_memo[k].wanted = -3;
    }
    s_cat_next = 0;
}

/* the memo of cat (which: 0 its table, 1 whether its args are read), made where it is new; NULL where cat is not an
 * exact str (not remembered) */
static int *cat_memo_of(PyObject *cat, int which) {
    if (!s_cats_frozen || !PyUnicode_CheckExact(cat)) return NULL;
    int k = 0;
    while (k < CAT_MEMO && s_cat_memo[k].cat != cat) k++;
    if (k == CAT_MEMO) {
        k = s_cat_next, s_cat_next = (s_cat_next + 1) % CAT_MEMO;
        PyObject *old = s_cat_memo[k].cat;
        s_cat_memo[k].cat = new_ref(cat);
        Py_XDECREF(old);
        s_cat_memo[k].table = s_cat_memo[k].wanted = -3;
    }
    return which ? &s_cat_memo[k].wanted : &s_cat_memo[k].table;
}

static int exact_table_of(PyObject *cat);

/* which ExactTimes table a category's events go beside (the collector's dispatch, in its order), or -1: none */
static int exact_table(PyObject *cat) {
    int *memo = cat_memo_of(cat, 0);
    if (!memo) return exact_table_of(cat);
    if (*memo == -3) *memo = exact_table_of(cat);
    int table = *memo;
    if (table == -2) *memo = -3;  /* an error is not remembered */
    return table;
}

/* whether a category's args are read (ARGS_READ), or -1 with the error raised */
static int args_read(PyObject *cat) {
    int *memo = cat_memo_of(cat, 1);
    if (!memo) return PySet_Contains(s_args_read, cat);
    if (*memo == -3) *memo = PySet_Contains(s_args_read, cat);
    int wanted = *memo;
    if (wanted < 0) *memo = -3;
    return wanted;
}

static int exact_table_of(PyObject *cat) {
    int in;
    if ((in = PySet_Contains(s_cats[S_KERNEL], cat)) != 0) return in < 0 ? -2 : (int)s_tables[0];
    if ((in = PySet_Contains(s_cats[S_GPU_OP], cat)) != 0) return in < 0 ? -2 : (int)s_tables[1];
    for (int k = S_OP; k <= S_PYTHON; k++)
        if ((in = PySet_Contains(s_cats[k], cat)) != 0) return in < 0 ? -2 : -1;
    return (int)s_tables[2];
}

static PyObject *due(Slices *self) {
    Py_ssize_t events = PyList_Size(self->batch) + sink_count(self);
    return PyBool_FromLong(events >= self->batch_limit || self->batch_bytes >= self->batch_bytes_limit);
}

/* PureSlices.event: one Event into the batch; us: its start in microseconds where taken earlier, or NULL */
static PyObject *slices_event_of(Slices *self, PyObject *const *f, PyObject *us) {
    PyObject *cat = f[0], *ts = f[4], *dur = f[5], *args = f[6];
    if (!PyLong_Check(ts) || !PyLong_Check(dur) || !PyDict_Check(args) || !PyLong_Check(self->base)) {
        PyErr_SetString(PyExc_TypeError, "Slices.event: ts, dur and base are ints, args a dict");
        return NULL;
    }
    long long t64 = 0, b64 = 0, d64 = 0;  /* ts - base and dur where both fit an int64 (most): no int made for them */
    int small = int64_of(ts, &t64) && int64_of(self->base, &b64) && !__builtin_sub_overflow(t64, b64, &t64) &&
                int64_of(dur, &d64);
    if (PyErr_Occurred()) return NULL;
    PyObject *rel = small ? NULL : int_minus(ts, self->base), *ev = NULL;
    if (!small && !rel) return NULL;
    int fits = small || (int64_of(rel, &t64) && int64_of(dur, &d64));  /* the exact times kept as they are */
    if (PyErr_Occurred()) {
        Py_DECREF(rel);
        return NULL;
    }
    PyObject *start = us ? new_ref(us) : small ? PyFloat_FromDouble((double)t64 / 1000.0) : micro(rel);
    PyObject *length = !start ? NULL : small ? PyFloat_FromDouble((double)d64 / 1000.0) : micro(dur), *kept = NULL;
    int sunk = length && self->sink ? sink_event(self, f, start, length) : 0;  /* handed to the collector now */
    if (length && sunk == 0) kept = PyDict_Size(args) ? PyObject_Call(s_args, s_empty, args) : new_ref(s_no_args);
    if (kept)  /* Event(cat, name, pid, tid, ts, dur, args), positional as the twin makes it */
        ev = PyObject_CallFunctionObjArgs(s_event, cat, f[1], f[2], f[3], start, length, kept, NULL);
    Py_XDECREF(start);
    Py_XDECREF(length);
    Py_XDECREF(kept);
    int table = ev || sunk > 0 ? exact_table(cat) : -2;
    int failed = table == -2 || (table >= 0 && exact_add(self, table, t64, d64, fits) < 0);
    Py_XDECREF(rel);
    if (failed || (ev && PyList_Append(self->batch, ev) < 0)) {
        Py_XDECREF(ev);
        return NULL;
    }
    Py_XDECREF(ev);
    return due(self);
}

static PyObject *slices_event(Slices *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 7 && nargs != 8) {
        PyErr_SetString(PyExc_TypeError, "Slices.event(cat, name, pid, tid, ts, dur, args[, us])");
        return NULL;
    }
    return slices_event_of(self, args, nargs == 8 && args[7] != Py_None ? args[7] : NULL);
}

/* PureSlices.emit: (track, ts, dur, name, cat, args, links, size) as an event of the track's row, or pending */
static PyObject *slices_emit_of(Slices *self, PyObject *const *f) {
    PyObject *track = f[0], *ts = f[1], *dur = f[2], *name = f[3], *cat = f[4], *args = f[5], *links = f[6];
    Py_ssize_t size = PyLong_AsSsize_t(f[7]);
    if (size == -1 && PyErr_Occurred()) return NULL;
    if (!PyDict_Check(args)) {
        PyErr_SetString(PyExc_TypeError, "Slices.emit: args is a dict");
        return NULL;
    }
    self->batch_bytes += size;
    PyObject *where = PyDict_GetItemWithError(self->tracks, track), *pid, *tid, *result = NULL;
    if (!where && PyErr_Occurred()) return NULL;
    Py_XINCREF(where);  /* held: the attribute reads below run no Python code, but the reference is ours */
    if (where && Py_TYPE(where) == (PyTypeObject *)s_track && PyTuple_Size(where) >= 2) {  /* a _Track: (pid, tid, name) */
        pid = new_ref(PyTuple_GetItem(where, 0));
        tid = new_ref(PyTuple_GetItem(where, 1));
    } else {
        pid = where ? PyObject_GetAttr(where, s_pid) : new_ref(Py_None);
        tid = where ? (pid ? PyObject_GetAttr(where, s_tid) : NULL) : new_ref(track);
    }
    Py_XDECREF(where);
    if (!pid || !tid) goto done;
    int linked = PyObject_IsTrue(links), has = 0;
    if (linked < 0 || (linked && (has = PyDict_Contains(args, s_correlation)) < 0)) goto done;
    if (linked && !has) {
        if (PyList_Size(self->pending) >= self->max_pending) {
            PyErr_Format(Damaged ? Damaged : PyExc_ValueError,
                         "more than %zd launches linked to render stages not yet read", self->max_pending);
            goto done;
        }
        PyObject *rel = PyLong_Check(ts) && PyLong_Check(self->base) ? int_minus(ts, self->base) : NULL;
        if (!rel && !PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "Slices.emit: ts and base are ints");
        PyObject *items[9] = {new_ref(cat), new_ref(name), new_ref(pid), new_ref(tid), rel ? micro(rel) : NULL,
                              new_ref(ts), new_ref(dur), new_ref(args), new_ref(links)};
        Py_XDECREF(rel);
        PyObject *waiting = tuple_of(items, 9);
        int appended = waiting && PyList_Append(self->pending, waiting) == 0;
        Py_XDECREF(waiting);
        if (appended) result = new_ref(Py_False);
        goto done;
    }
    PyObject *fields[7] = {cat, name, pid, tid, ts, dur, args};
    result = slices_event_of(self, fields, NULL);
done:
    Py_XDECREF(pid);
    Py_XDECREF(tid);
    return result;
}

static PyObject *slices_emit(Slices *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 8) {
        PyErr_SetString(PyExc_TypeError, "Slices.emit(track, ts, dur, name, cat, args, links, size)");
        return NULL;
    }
    return slices_emit_of(self, args);
}

/* began: (ts in ns, name, cat, args, links, size), as perfetto._Open; its size read as an int */
static int began_size(PyObject *began, Py_ssize_t *size) {
    if (!PyTuple_Check(began) || PyTuple_Size(began) != 6 || !PyLong_Check(PyTuple_GetItem(began, 0)) ||
        !PyLong_Check(PyTuple_GetItem(began, 5))) {
        PyErr_SetString(PyExc_TypeError, "a slice begun is (ts: int, name, cat, args, links, size: int)");
        return -1;
    }
    *size = PyLong_AsSsize_t(PyTuple_GetItem(began, 5));
    return *size == -1 && PyErr_Occurred() ? -1 : 0;
}

/* PureSlices.open(track, began): held on its track's stack, within MAX_OPEN slices and MAX_OPEN_BYTES */
static PyObject *slices_open(Slices *self, PyObject *const *args, Py_ssize_t nargs) {
    Py_ssize_t size;
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "Slices.open(track, began)");
        return NULL;
    }
    if (began_size(args[1], &size) < 0) return NULL;
    if (self->open_count >= self->max_open)
        return PyErr_Format(Damaged ? Damaged : PyExc_ValueError, "more than %zd slices open at once",
                            self->max_open);
    if (size > self->max_open_bytes - self->open_bytes)  /* open_bytes + size > MAX_OPEN_BYTES, without overflow */
        return PyErr_Format(Damaged ? Damaged : PyExc_ValueError, "slices open at once holding more than %zd MiB",
                            self->max_open_bytes >> 20);
    PyObject *stack = PyDict_GetItemWithError(self->open, args[0]);
    if (stack) {
        if (PyList_Append(stack, args[1]) < 0) return NULL;
    } else {
        if (PyErr_Occurred() || !(stack = PyList_New(1))) return NULL;
        PyList_SetItem(stack, 0, new_ref(args[1]));
        int set = PyDict_SetItem(self->open, args[0], stack);
        Py_DECREF(stack);
        if (set < 0) return NULL;
    }
    self->open_count += 1;
    self->open_bytes += size;
    Py_RETURN_NONE;
}

/* PureSlices.close(track, ts): the innermost slice open on the track ends at ts (an end with none open: nothing) */
static PyObject *slices_close(Slices *self, PyObject *const *args, Py_ssize_t nargs) {
    Py_ssize_t size;
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "Slices.close(track, ts)");
        return NULL;
    }
    PyObject *track = args[0], *ts = args[1];
    if (!PyLong_Check(ts)) {
        PyErr_SetString(PyExc_TypeError, "Slices.close: ts is an int");
        return NULL;
    }
    PyObject *stack = PyDict_GetItemWithError(self->open, track);
    if (!stack) {
        if (PyErr_Occurred()) return NULL;
        Py_RETURN_FALSE;
    }
    if (!PyList_Check(stack)) {
        PyErr_SetString(PyExc_TypeError, "Slices.close: a track's open slices are a list");
        return NULL;
    }
    Py_ssize_t depth = PyList_Size(stack);
    if (depth < 1) Py_RETURN_FALSE;  /* the twin's `if not stack`: an empty stack left by a failed delete */
    Py_INCREF(stack);  /* held while it is changed: the dict's reference is borrowed */
    PyObject *began = new_ref(PyList_GetItem(stack, depth - 1));
    int failed = !began || began_size(began, &size) < 0 || PyList_SetSlice(stack, depth - 1, depth, NULL) < 0;
    Py_DECREF(stack);
    if (failed) {
        Py_XDECREF(began);
        return NULL;
    }
    self->open_count -= 1;
    self->open_bytes -= size;
    if (depth == 1 && PyDict_DelItem(self->open, track) < 0) {  /* the stack is gone with it: not read again */
        Py_DECREF(began);
        return NULL;
    }
    PyObject *start = PyTuple_GetItem(began, 0), *result = NULL;
    PyObject *dur = int_minus(ts, start);
    if (dur) {
        PyObject *fields[8] = {track, start, dur, PyTuple_GetItem(began, 1), PyTuple_GetItem(began, 2),
                               PyTuple_GetItem(began, 3), PyTuple_GetItem(began, 4), PyTuple_GetItem(began, 5)};
        result = slices_emit_of(self, fields);
        Py_DECREF(dur);
    }
    Py_DECREF(began);
    return result;
}

/* the sign of an int (-1, 0, 1), or -2 with the error raised */
static int int_sign(PyObject *v) {
    int over;
    long long x = PyLong_AsLongLongAndOverflow(v, &over);
    if (x == -1 && PyErr_Occurred()) return -2;
    return over ? over : (x > 0) - (x < 0);
}

/* whether an int is the small value given (1 or 0), or -1 with the error raised */
static int int_is(PyObject *v, long long small) {
    int over;
    long long x = PyLong_AsLongLongAndOverflow(v, &over);
    if (x == -1 && PyErr_Occurred()) return -1;
    return !over && x == small;
}

/* the track an event names, the sequence's default where it names none (below 0): a new reference */
static PyObject *track_of(PyObject *track, PyObject *seq) {
    int sign = int_sign(track);
    if (sign == -2) return NULL;
    return sign < 0 ? PyObject_GetAttr(seq, s_default_track) : new_ref(track);
}

/* an end's track, closed at ts: the batch due or not (a new reference) */
static PyObject *close_on(Slices *self, PyObject *track, PyObject *seq, PyObject *ts) {
    PyObject *where = track_of(track, seq);
    if (!where) return NULL;
    PyObject *call[2] = {where, ts};
    PyObject *due = slices_close(self, call, 2);
    Py_DECREF(where);
    return due;
}

/* a TrackEvent's annotations into args through core_event_args: what they held added to *held; 0, or -1 */
static int slice_args(Slices *self, PyObject *b, PyObject *notes, PyObject *seq, PyObject *args, Py_ssize_t *held) {
    PyObject *entries = PyLong_FromSsize_t(self->memo_entries);
    if (!entries) return -1;
    PyObject *call[5] = {b, notes, seq, args, entries};
    PyObject *got = core_event_args(NULL, call, 5);
    Py_DECREF(entries);
    if (!got) return -1;
    Py_ssize_t size = -1, after = -1;
    if (PyTuple_Check(got) && PyTuple_Size(got) == 2) {
        size = PyLong_AsSsize_t(PyTuple_GetItem(got, 0));
        if (!PyErr_Occurred()) after = PyLong_AsSsize_t(PyTuple_GetItem(got, 1));
    } else {
        PyErr_SetString(PyExc_TypeError, "event_args gives (size, entries)");
    }
    Py_DECREF(got);
    if (PyErr_Occurred()) return -1;
    self->memo_entries = after;
    *held += size;
    return 0;
}

/* a TrackEvent decoded: its type (1 begin, 2 end, 0 other), track (-1: the default), name, category, and its
 * annotations as track_event's list of spans or, read here, as spans in C (notes NULL) */
typedef struct {
    int kind;
    PyObject *track, *name, *cat, *notes;
    const Py_ssize_t *spans;
    Py_ssize_t count;
    Py_ssize_t n;  /* where its packet ends in the bytes (a run's packets lie in one buffer): reads stop there */
} Decoded;

/* the annotations of a TrackEvent read here (spans in C) into args, as core_event_args reads a list of them */
static int spans_args(Slices *self, PyObject *b, const Decoded *d, PyObject *seq, PyObject *args, Py_ssize_t *held) {
    if (!pure_event_args || !decode_annotation) {
        not_bound();
        return -1;
    }
    PyObject *memo = seq_table(seq, name_memo, NULL);
    if (!memo) return -1;
    Py_ssize_t entries = self->memo_entries, size = 0;
    for (Py_ssize_t k = 0; k < d->count; k++) {
        Py_ssize_t start = d->spans[2 * k], end = d->spans[2 * k + 1];
        size += end - start;
        if (one_note(b, d->n, start, end, seq, memo, args, &entries) < 0) {
            Py_DECREF(memo);
            return -1;
        }
    }
    Py_DECREF(memo);
    self->memo_entries = entries;
    *held += size;
    return 0;
}

/* a slice begun (held until its end) or complete in the legacy form (legacy: its duration in µs, or None) */
static PyObject *slice_held(Slices *self, PyObject *where, PyObject *ts, const Decoded *d, PyObject *args,
                            Py_ssize_t held, PyObject *links, PyObject *legacy) {
    PyObject *result = NULL;
    if (d->kind == 1) {
        PyObject *items[6] = {new_ref(ts), new_ref(d->name), new_ref(d->cat), new_ref(args), new_ref(links),
                              PyLong_FromSsize_t(held)};
        PyObject *began = tuple_of(items, 6), *opened = NULL;
        if (began) {
            PyObject *call[2] = {where, began};
            opened = slices_open(self, call, 2);
            Py_DECREF(began);
        }
        if (opened) result = new_ref(Py_False);
        Py_XDECREF(opened);
    } else if (legacy != Py_None) {
        PyObject *thousand = PyLong_FromLong(1000), *dur = thousand ? PyNumber_Multiply(legacy, thousand) : NULL;
        PyObject *kept = dur ? PyLong_FromSsize_t(held) : NULL;
        if (kept) {
            PyObject *call[8] = {where, ts, dur, d->name, d->cat, args, links, kept};
            result = slices_emit_of(self, call);
        }
        Py_XDECREF(thousand);
        Py_XDECREF(dur);
        Py_XDECREF(kept);
    } else {
        result = new_ref(Py_False);
    }
    return result;
}

/* PureSlices.slice on a TrackEvent decoded, at b[start:end], at ts: a slice begun, ended (its bytes remembered in
 * ends) or complete (legacy): the batch due or not (a new reference) */
static PyObject *slice_core(Slices *self, PyObject *b, Py_ssize_t start, Py_ssize_t end, PyObject *ts, PyObject *seq,
                            const Decoded *d, PyObject *links, PyObject *legacy) {
    self->track_events += 1;
    if (d->kind == 2) {
        if (end - start <= self->end_bytes && PyDict_Size(self->ends) < self->memo_limit) {
            PyObject *key = memo_key((const unsigned char *)PyBytes_AsString(b) + start, end - start);
            int set = key ? PyDict_SetItem(self->ends, key, d->track) : -1;
            Py_XDECREF(key);
            if (set < 0) return NULL;
        }
        return close_on(self, d->track, seq, ts);
    }
    PyObject *where = track_of(d->track, seq), *args = NULL, *result = NULL;
    if (!where) return NULL;
    Py_ssize_t held = PyObject_Size(d->name), size;
    if (held < 0) goto done;
    if (d->cat != Py_None) {
        if ((size = PyObject_Size(d->cat)) < 0) goto done;
        held += size;
    }
    int noted = d->notes ? PyObject_IsTrue(d->notes) : d->count > 0, wanted = 0;
    if (noted < 0 || !(args = PyDict_New())) goto done;
    if (noted && (wanted = d->cat == Py_None ? 1 : args_read(d->cat)) < 0) goto done;
    if (wanted && (d->notes ? slice_args(self, b, d->notes, seq, args, &held)
                            : spans_args(self, b, d, seq, args, &held)) < 0)
        goto done;
    result = slice_held(self, where, ts, d, args, held, links, legacy);
done:
    Py_DECREF(where);
    Py_XDECREF(args);
    return result;
}

/* slice_core on track_event's six fields (kind, track, name, cat, notes, rest) */
static PyObject *slice_of(Slices *self, PyObject *b, Py_ssize_t start, Py_ssize_t end, PyObject *ts, PyObject *seq,
                          PyObject *fields, PyObject *links, PyObject *legacy) {
    if (!PyTuple_Check(fields) || PyTuple_Size(fields) != 6) {
        PyErr_SetString(PyExc_TypeError, "a TrackEvent's fields are track_event's six");
        return NULL;
    }
    PyObject *kind = PyTuple_GetItem(fields, 0);
    int ending = int_is(kind, 2), beginning = ending ? 0 : int_is(kind, 1);
    if (ending < 0 || beginning < 0) return NULL;
    Decoded d = {ending ? 2 : beginning, PyTuple_GetItem(fields, 1), PyTuple_GetItem(fields, 2),
                 PyTuple_GetItem(fields, 3), PyTuple_GetItem(fields, 4), NULL, 0, PyBytes_Size(b)};
    return slice_core(self, b, start, end, ts, seq, &d, links, legacy);
}

/* slice(b, start, end, ts, seq, fields, links, legacy_dur) */
static PyObject *slices_slice(Slices *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 8 || !PyBytes_Check(args[0]) || !PyLong_Check(args[3])) {
        PyErr_SetString(PyExc_TypeError, "Slices.slice(b: bytes, start, end, ts: int, seq, fields, links, legacy_dur)");
        return NULL;
    }
    Py_ssize_t n = PyBytes_Size(args[0]), start = PyLong_AsSsize_t(args[1]), end;
    if (start == -1 && PyErr_Occurred()) return NULL;
    if ((end = PyLong_AsSsize_t(args[2])) == -1 && PyErr_Occurred()) return NULL;
    if (start < 0 || end < 0) {
        PyErr_SetString(PyExc_ValueError, "Slices.slice: a TrackEvent's span is within its packet");
        return NULL;
    }
    if (end > n) end = n;  /* b[start:end] as Python slices it */
    if (start > end) start = end;
    return slice_of(self, args[0], start, end, args[3], args[4], args[5], args[6], args[7]);
}

/* A TrackEvent read here for packets(), without track_event's lists and tuples: what core_track_event reads of
 * it, in its order and with its errors. 1: read; 2: more annotations or categories than these arrays hold (then
 * read through track_event's lists); 0: not plain (gpu_correlation or legacy fields: the reader's, which reads it
 * again); -1: the error raised */
enum { PLAIN_NOTES = 64, PLAIN_CATEGORIES = 8 };

typedef struct {
    u128 kind, track, name_iid;
    int has_track, name_from;  /* name_from: 0 none, 1 its span, 2 its iid (the last one written) */
    Py_ssize_t name[2], spans[2 * PLAIN_NOTES], count;
    Field cats[PLAIN_CATEGORIES];  /* categories (22) and category iids (3), in their order */
    int cat_count;
} Plain;

static int plain_fields(const unsigned char *b, Py_ssize_t n, Py_ssize_t start, Py_ssize_t end, Plain *p) {
    Reader r = {b, n, start, end, 0};
    Field f;
    int more, other = 0, many = 0;
    p->kind = p->track = p->name_iid = 0;
    p->has_track = p->name_from = p->cat_count = 0;
    p->count = 0;
    while ((more = next_field(&r, &f)) == 1) {
        u128 number = f.number;
        if (number == 4 && f.wire == 2) {
            if (p->count == PLAIN_NOTES) many = 1;
            else p->spans[2 * p->count] = f.start, p->spans[2 * p->count + 1] = f.stop, p->count++;
        } else if (number == 9 && f.wire == 0) {
            p->kind = f.value;
        } else if (number == 11 && f.wire == 0) {
            p->track = f.value;
            p->has_track = 1;
        } else if (number == 23 && f.wire == 2) {
            p->name[0] = f.start, p->name[1] = f.stop;
            p->name_from = 1;
        } else if (number == 10 && f.wire == 0) {
            p->name_iid = f.value;
            p->name_from = 2;
        } else if ((number == 22 && f.wire == 2) || number == 3) {
            if (p->cat_count == PLAIN_CATEGORIES) many = 1;
            else p->cats[p->cat_count++] = f;
        } else if ((number == 3000 || number == 6) && f.wire == 2) {
            other = 1;
        }
    }
    return more < 0 ? -1 : other ? 0 : many ? 2 : 1;
}

/* a table of the sequence looked up (event_name's and event_category's get): a new reference */
static PyObject *plain_lookup(PyObject *seq, PyObject *table_name, u128 iid, PyObject *fallback) {
    PyObject *table = seq_table(seq, name_tables, table_name), *key = table ? py_int(iid) : NULL;
    PyObject *found = key ? get_or(table, key, fallback) : NULL;
    Py_XDECREF(table);
    Py_XDECREF(key);
    return found;
}

/* event_category's rule on the fields kept: the first category, cut as a name, or category iid that names one */
static PyObject *plain_category(PyObject *bytes, const Plain *p, PyObject *seq) {
    for (int k = 0; k < p->cat_count; k++) {
        const Field *f = &p->cats[k];
        PyObject *found;
        if (f->number == 22) {
            found = cut_span(bytes, f->start, f->stop);
        } else if (f->wire == 0) {
            found = plain_lookup(seq, name_categories, f->value, Py_None);
        } else if (f->wire != 2) {
            found = new_ref(Py_None);
        } else {  /* a packed run: the first iid counts, the run must read whole */
            PyObject *wire = PyLong_FromLong(2), *where = span(f->start, f->stop), *ids = NULL;
            if (wire && where) {
                PyObject *call[3] = {bytes, wire, where};
                ids = core_packed(NULL, call, 3);
            }
            Py_XDECREF(wire);
            Py_XDECREF(where);
            if (!ids) return NULL;
            found = PyList_Size(ids) == 0 ? new_ref(Py_None) : NULL;
            if (!found) {
                PyObject *table = seq_table(seq, name_tables, name_categories);
                found = table ? get_or(table, PyList_GetItem(ids, 0), Py_None) : NULL;
                Py_XDECREF(table);
            }
            Py_DECREF(ids);
        }
        if (!found || found != Py_None) return found;
        Py_DECREF(found);
    }
    return new_ref(Py_None);
}

/* a plain TrackEvent at b[start:end] read (its name, category, annotations) and handed to slice_core: 1 read, 0
 * not plain, -1 the error raised; *result: the batch due or not */
static int plain_event(Slices *self, PyObject *b, Py_ssize_t first, Py_ssize_t n, Py_ssize_t start, Py_ssize_t end,
                       PyObject *ts, PyObject *seq, PyObject **result) {
    Plain p;
    int plain = plain_fields((const unsigned char *)PyBytes_AsString(b), n, start, end, &p);
    if (plain <= 0) return plain;
    if (plain == 2 && (first || n != PyBytes_Size(b))) {  /* a run's packet, read by Python's rules: its own bytes */
        PyObject *own = PyBytes_FromStringAndSize(PyBytes_AsString(b) + first, n - first);
        int read = own ? plain_event(self, own, 0, n - first, start - first, end - first, ts, seq, result) : -1;
        Py_XDECREF(own);
        return read;
    }
    if (plain == 2) {  /* more than the arrays hold: track_event's lists */
        PyObject *first = PyLong_FromSsize_t(start), *last = PyLong_FromSsize_t(end), *fields = NULL;
        if (first && last) {
            PyObject *call[4] = {b, first, last, seq};
            fields = core_track_event_named(NULL, call, 4);
        }
        Py_XDECREF(first);
        Py_XDECREF(last);
        if (fields) *result = slice_of(self, b, start, end, ts, seq, fields, s_empty, Py_None);
        Py_XDECREF(fields);
        return *result ? 1 : -1;
    }
    PyObject *name = p.name_from == 1 ? cut_span(b, p.name[0], p.name[1])
                   : p.name_from == 2 ? plain_lookup(seq, name_names, p.name_iid, s_blank)
                                      : new_ref(s_blank);
    PyObject *cat = name ? plain_category(b, &p, seq) : NULL;
    PyObject *track = cat ? (p.has_track ? track_int(p.track) : PyLong_FromLong(-1)) : NULL;
    if (track) {
        Decoded d = {p.kind == 2 ? 2 : p.kind == 1, track, name, cat, NULL, p.spans, p.count, n};
        *result = slice_core(self, b, start, end, ts, seq, &d, s_empty, Py_None);
    }
    Py_XDECREF(name);
    Py_XDECREF(cat);
    Py_XDECREF(track);
    return *result ? 1 : -1;
}

/* a TracePacket that is a plain TrackEvent of the sequence seq_id: 1 read (*due: the batch is), 0 not plain (left
 * before any change), -1 the error raised. Its fields as protobuf.packet_head reads them, in its order. */
static int plain_packet(Slices *self, PyObject *b, Py_ssize_t first, Py_ssize_t n, PyObject *seq_id, int narrow,
                        u128 want, PyObject *seq, int *due) {
    const unsigned char *buf = (const unsigned char *)PyBytes_AsString(b);
    Reader r = {buf, n, first, n, 0};  /* the packet at b[first:n]: its own bytes, or one of a run's */
    Field f;
    u128 ts = 0, sid = 0, flags = 0, kind = 0;
    int has_ts = 0, other = 0, more;  /* other: interned data, defaults, a clock snapshot or a clock id */
    Py_ssize_t body[2] = {0, 0};
    while ((more = next_field(&r, &f)) == 1) {
        u128 number = f.number;
        if (number == 8 && f.wire == 0) {
            ts = f.value;
            has_ts = 1;
        } else if (f.wire == 2 && (number == 11 || number == 60 || number == 53)) {
            kind = number;
            body[0] = f.start, body[1] = f.stop;
        } else if (number == 10 && f.wire == 0) {
            sid = f.value;
        } else if (number == 13 && f.wire == 0) {
            flags = f.value;
        } else if (number == 41 && f.wire == 0) {
            if (f.value) flags |= 1;
        } else if (((number == 12 || number == 59 || number == 6) && f.wire == 2) || number == 58) {
            other = 1;
        }
    }
    if (more < 0) return -1;
    if (kind != 11 || !has_ts || (flags & 1) || other) return 0;
    if (narrow) {  /* the sequence's id fits 64 bits: compared here */
        if (sid != want) return 0;
    } else {  /* as the reader compares it: any int, 70 bits or negative included */
        PyObject *same = py_int(sid);
        int equal = same ? PyObject_RichCompareBool(same, seq_id, Py_EQ) : -1;
        Py_XDECREF(same);
        if (equal <= 0) return equal;
    }
    Py_ssize_t start = body[0], end = body[1];
    PyObject *stamp = py_int(ts), *result = NULL;
    if (!stamp) return -1;
    if (end - start <= self->end_bytes) {  /* a slice's end seen before: its track, without decoding it */
        PyObject *key = memo_key(buf + start, end - start);
        PyObject *ended = key ? PyDict_GetItemWithError(self->ends, key) : NULL;
        Py_XINCREF(ended);
        Py_XDECREF(key);
        if (ended) {
            self->track_events += 1;
            result = close_on(self, ended, seq, stamp);
            Py_DECREF(ended);
            goto read;
        }
        if (PyErr_Occurred()) goto failed;
    }
    if (!pure_track_event_named) {  /* what track_event needs bound */
        not_bound();
        goto failed;
    }
    int plain = plain_event(self, b, first, n, start, end, stamp, seq, &result);
    if (plain <= 0) {  /* 0: gpu_correlation or legacy fields, the reader's */
        Py_DECREF(stamp);
        return plain;
    }
read:
    Py_DECREF(stamp);
    if (!result) return -1;
    *due = PyObject_IsTrue(result);
    Py_DECREF(result);
    return *due < 0 ? -1 : 1;
failed:
    Py_DECREF(stamp);
    return -1;
}

/* packets(batch, k, last): PureSlices.packets, from batch[k] on the plain TrackEvent packets of last's sequence
 * (last: the reader's (seq_id, seq) or None): (the first packet not read, whether the batch is due) */
static PyObject *slices_packets(Slices *self, PyObject *const *args, Py_ssize_t nargs) {
    Run *run = nargs == 3 && run_type && Py_TYPE(args[0]) == run_type ? (Run *)args[0] : NULL;
    if (nargs != 3 || !(run || PyList_Check(args[0])) || !PyLong_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "Slices.packets(batch: list or Run, k: int, last)");
        return NULL;
    }
    PyObject *batch = args[0], *last = args[2];
    Py_ssize_t k = PyLong_AsSsize_t(args[1]);
    if (k == -1 && PyErr_Occurred()) return NULL;
    if (k < 0) {
        PyErr_SetString(PyExc_ValueError, "Slices.packets: k is a packet of the run");
        return NULL;
    }
    int due = 0, narrow = 0;
    u128 want = 0;
    PyObject *seq = NULL, *seq_id = NULL;
    if (last != Py_None) {
        if (!PyTuple_Check(last) || PyTuple_Size(last) != 2 || !PyLong_Check(PyTuple_GetItem(last, 0))) {
            PyErr_SetString(PyExc_TypeError, "Slices.packets: last is (seq_id: int, seq) or None");
            return NULL;
        }
        seq_id = new_ref(PyTuple_GetItem(last, 0));
        seq = new_ref(PyTuple_GetItem(last, 1));
        unsigned long long id = PyLong_AsUnsignedLongLong(seq_id);
        if (id == (unsigned long long)-1 && PyErr_Occurred()) PyErr_Clear();  /* negative or past 64 bits */
        else narrow = 1, want = id;
    }
    while (seq && !due && k < (run ? run->count : PyList_Size(batch))) {
        PyObject *b = run ? run->buf : PyList_GetItem(batch, k);
        if (!PyBytes_Check(b)) break;  /* the reader's to say what it is */
        Py_INCREF(b);  /* a run's packet: where it lies in the run's bytes (held: the batch is the caller's) */
        Py_ssize_t first = run ? run->spans[3 * k + 1] : 0, n = run ? run->spans[3 * k + 2] : PyBytes_Size(b);
        int read = plain_packet(self, b, first, n, seq_id, narrow, want, seq, &due);
        Py_DECREF(b);
        if (read < 0) {
            self->at = k;
            Py_DECREF(seq);
            Py_DECREF(seq_id);
            return NULL;
        }
        if (!read) break;
        k += 1;
    }
    Py_XDECREF(seq);
    Py_XDECREF(seq_id);
    PyObject *items[2] = {PyLong_FromSsize_t(k), PyBool_FromLong(due)};
    return tuple_of(items, 2);
}

/* PureSlices.take(): the batch for the collector, a new one begun */
static PyObject *slices_take(Slices *self, PyObject *unused) {
    (void)unused;
    if (exact_flush(self) < 0 || sink_flush(self) < 0) return NULL;
    PyObject *fresh = PyList_New(0);
    if (!fresh) return NULL;
    PyObject *batch = self->batch;
    self->batch = fresh;
    self->batch_bytes = 0;
    return batch;
}

static PyObject *slices_get_base(Slices *self, void *closure) {
    (void)closure;
    return new_ref(self->base);
}

static int slices_set_base(Slices *self, PyObject *value, void *closure) {
    (void)closure;
    if (!value || !PyLong_Check(value)) {
        PyErr_SetString(PyExc_TypeError, "Slices.base is an int");
        return -1;
    }
    PyObject *old = self->base;
    self->base = new_ref(value);
    Py_DECREF(old);
    return 0;
}

static int sink_ready(void);

/* sink(collector or None): each event handed to the collector (Collector.add's bookkeeping and its compiled dispatch)
 * as it is made, in one Event reused, instead of kept in the batch for the reader's flush; None: the batch again.
 * What was handed over reaches the collector's tables at take(), as a batch does. True where the sink is set (the
 * collector's compiled dispatch bound), else False (the batch, as before). */
static int sink_check(PyObject *collector);

static PyObject *slices_sink(Slices *self, PyObject *collector) {
    if (collector != Py_None && PyList_Size(self->batch)) {
        PyErr_SetString(PyExc_ValueError, "Slices.sink: the batch holds events (take them first: they go first)");
        return NULL;
    }
    if (sink_flush(self) < 0) return NULL;
    Py_CLEAR(self->sink);
    if (collector == Py_None || !sink_ready()) Py_RETURN_FALSE;
    if (sink_check(collector) < 0) return NULL;
    self->sink = new_ref(collector);
    Py_RETURN_TRUE;
}

static PyMethodDef slices_methods[] = {
    {"sink", (PyCFunction)slices_sink, METH_O, "each event to the collector as it is made (the batch: None)"},
    {"open", (PyCFunction)(void (*)(void))slices_open, METH_FASTCALL, "a slice begun (PureSlices.open)"},
    {"close", (PyCFunction)(void (*)(void))slices_close, METH_FASTCALL, "a slice's end (PureSlices.close)"},
    {"emit", (PyCFunction)(void (*)(void))slices_emit, METH_FASTCALL, "a slice as an event (PureSlices.emit)"},
    {"event", (PyCFunction)(void (*)(void))slices_event, METH_FASTCALL, "an event (PureSlices.event)"},
    {"take", (PyCFunction)(void (*)(void))slices_take, METH_NOARGS, "the batch (PureSlices.take)"},
    {"slice", (PyCFunction)(void (*)(void))slices_slice, METH_FASTCALL, "a TrackEvent decoded (PureSlices.slice)"},
    {"packets", (PyCFunction)(void (*)(void))slices_packets, METH_FASTCALL,
     "the plain TrackEvent packets of a run (PureSlices.packets)"},
    {NULL, NULL, 0, NULL},
};

/* the counts as the twin's attributes, read-only (what the reader reads: the slices left open at the end) */
static Py_ssize_t *slices_count(Slices *self, const char *which) {
    switch (which[0]) {
    case 'c': return &self->open_count;
    case 'o': return &self->open_bytes;
    case 'b': return &self->batch_bytes;
    case 't': return &self->track_events;
    case 'm': return &self->memo_entries;
    default: return &self->at;
    }
}

static PyObject *slices_get_count(Slices *self, void *closure) {
    return PyLong_FromSsize_t(*slices_count(self, closure));
}

/* track_events and memo_entries: the reader counts some itself (an end it remembered, a sequence cleared) */
static int slices_set_count(Slices *self, PyObject *value, void *closure) {
    Py_ssize_t v = value && PyLong_Check(value) ? PyLong_AsSsize_t(value) : -1;
    if (v == -1 && (!value || !PyLong_Check(value) || PyErr_Occurred())) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "a count of Slices is an int");
        return -1;
    }
    *slices_count(self, closure) = v;
    return 0;
}

/* what it was given (tracks, exact, ends) and the launches waiting: the objects themselves, as the twin's */
static PyObject *slices_get_held(Slices *self, void *closure) {
    const char *which = closure;
    if (which[0] == 'e' && exact_flush(self) < 0) return NULL;  /* the exact times as the twin's, where it is read */
    return new_ref(which[0] == 'p' ? self->pending : which[0] == 't' ? self->tracks
                   : which[0] == 'e' ? self->exact : self->ends);
}

/* the slices open, {track: [began, ...]}, and the batch: copies (what a caller does to them changes nothing here) */
static PyObject *slices_get_open(Slices *self, void *closure) {
    (void)closure;
    PyObject *copy = PyDict_New(), *track, *stack;
    Py_ssize_t at = 0;
    while (copy && PyDict_Next(self->open, &at, &track, &stack)) {
        PyObject *list = PySequence_List(stack);
        if (!list || PyDict_SetItem(copy, track, list) < 0) Py_CLEAR(copy);
        Py_XDECREF(list);
    }
    return copy;
}

static PyObject *slices_get_batch(Slices *self, void *closure) {
    (void)closure;
    return PySequence_List(self->batch);
}

static PyGetSetDef slices_getset[] = {
    {"base", (getter)slices_get_base, (setter)slices_set_base, "Kineto's base time, ns (0: none)", NULL},
    {"open_count", (getter)slices_get_count, NULL, "slices open", "c"},
    {"open_bytes", (getter)slices_get_count, NULL, "what they keep (names, categories, annotations)", "o"},
    {"batch_bytes", (getter)slices_get_count, NULL, "what the batch's slices kept", "b"},
    {"track_events", (getter)slices_get_count, (setter)slices_set_count, "TrackEvents read", "t"},
    {"memo_entries", (getter)slices_get_count, (setter)slices_set_count, "annotations remembered", "m"},
    {"at", (getter)slices_get_count, NULL, "the packet packets() was reading when it raised", "a"},
    {"pending", (getter)slices_get_held, NULL, "launches waiting for their render stages", "p"},
    {"tracks", (getter)slices_get_held, NULL, "the reader's tracks", "t"},
    {"exact", (getter)slices_get_held, NULL, "the read's ExactTimes", "e"},
    {"ends", (getter)slices_get_held, NULL, "the slice ends remembered by their bytes", "n"},
    {"stacks", (getter)slices_get_open, NULL, "the slices open, by track (a copy)", NULL},
    {"batch", (getter)slices_get_batch, NULL, "the events not yet taken (a copy)", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot slices_slots[] = {
    {Py_tp_new, slices_new}, {Py_tp_dealloc, slices_dealloc}, {Py_tp_traverse, slices_traverse},
    {Py_tp_clear, slices_clear}, {Py_tp_methods, slices_methods},
    {Py_tp_getset, slices_getset}, {Py_tp_doc, "perfetto.PureSlices, compiled"}, {0, NULL},
};

static PyType_Spec slices_spec = {
    "wizard._core.Slices", sizeof(Slices), 0, Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC, slices_slots,
};

/* bind_slices(Event, EventArgs, no_args, (kernel, gpu op, op, runtime, python categories), (KERNELS, GPU_OPS,
 * SLICES), ARGS_READ, _Track): perfetto.py hands over its types and categories (the bounds are each Slices' own);
 * returns the type */
static PyObject *core_bind_slices(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 7 || !PyTuple_Check(args[3]) || PyTuple_Size(args[3]) != 5 || !PyTuple_Check(args[4]) ||
        PyTuple_Size(args[4]) != 3 || !PyAnySet_Check(args[5]) || !PyType_Check(args[6]) ||
        !PyType_IsSubtype((PyTypeObject *)args[6], &PyTuple_Type)) {
        PyErr_SetString(PyExc_TypeError, "bind_slices(Event, EventArgs, no_args, categories: 5 sets, tables: 3 ints, "
                                         "args_read: set, track: a tuple type)");
        return NULL;
    }
    long tables[3];
    for (int k = 0; k < 5; k++)
        if (!PyAnySet_Check(PyTuple_GetItem(args[3], k)))
            return PyErr_Format(PyExc_TypeError, "bind_slices: the categories are sets");
    for (int k = 0; k < 3; k++) {
        if ((tables[k] = PyLong_AsLong(PyTuple_GetItem(args[4], k))) == -1 && PyErr_Occurred()) return NULL;
        if (tables[k] < 0 || tables[k] > 2) return PyErr_Format(PyExc_ValueError, "bind_slices: a table of 0-2");
    }
    if (!slices_type && !(slices_type = (PyTypeObject *)PyType_FromSpec(&slices_spec))) return NULL;
    const char *texts[] = {"correlation", "pid", "tid", "usable", "default_track"};
    PyObject **names[] = {&s_correlation, &s_pid, &s_tid, &s_usable, &s_default_track};
    for (int k = 0; k < 5; k++)
        if (!*names[k] && !(*names[k] = PyUnicode_InternFromString(texts[k]))) return NULL;
    if (!s_empty && !(s_empty = PyTuple_New(0))) return NULL;
    if (!s_blank && !(s_blank = PyUnicode_FromString(""))) return NULL;
    if (!s_thousand && !(s_thousand = PyFloat_FromDouble(1000.0))) return NULL;
    PyObject **slots[] = {&s_event, &s_args, &s_no_args, &s_cats[0], &s_cats[1], &s_cats[2], &s_cats[3], &s_cats[4],
                          &s_args_read, &s_track};
    PyObject *values[] = {args[0], args[1], args[2], PyTuple_GetItem(args[3], 0), PyTuple_GetItem(args[3], 1),
                          PyTuple_GetItem(args[3], 2), PyTuple_GetItem(args[3], 3), PyTuple_GetItem(args[3], 4),
                          args[5], args[6]};
    for (int k = 0; k < 10; k++) {
        PyObject *old = *slots[k];
        *slots[k] = new_ref(values[k]);
        Py_XDECREF(old);
    }
    for (int k = 0; k < 3; k++) s_tables[k] = tables[k];
    cat_memo_forget();
    s_cats_frozen = PyFrozenSet_CheckExact(s_args_read);
    for (int k = 0; k < 5; k++) s_cats_frozen &= PyFrozenSet_CheckExact(s_cats[k]);
    return new_ref((PyObject *)slices_type);
}

/* ==== JSON events (jsoncore) ==== */
/* collect_events(collector, events): wizard/trace/read/collector.py's pure_collect_events, compiled. The collector's
 * dispatch of each decoded event by category, with the three commonest kinds handled here whole: an op (cpu_op:
 * its interned descriptor, then its interval on its thread's arrays), a runtime call (its thread's and name's ids,
 * correlation and start on RuntimeIndex's arrays) and a kernel (KernelTable.add's arguments, from the same
 * memoised values and interned names the twin uses). Every value that is not the common type (an int or a float
 * time, an int id, a str name, a list of three ints) goes to the twin's own Python function for it (_number, as_int,
 * Collector._value, _dims, _op_ref, ...), so the bounds (MAX_NAME, INT_LIMIT) and the values kept are the twin's by
 * construction; the rarer kinds (Python functions, GPU copies, complete events) call the twin's methods.
 * Appends are gathered per call in C buffers and handed to the arrays once (array.frombytes), in the same order. */

enum {
    A_CAT, A_NAME, A_PID, A_TID, A_TS, A_DUR, A_ARGS, A_CORRELATION, A_DEVICE, A_STREAM, A_GRID, A_BLOCK,
    A_REGISTERS, A_SHARED_MEMORY, A_BLOCKS_PER_SM, A_WARPS_PER_SM, A_OCCUPANCY, A_THEORETICAL, A_INPUT_DIMS,
    A_INPUT_DIMS_OLD, A_INPUT_TYPE, A_CALL_STACK, A_FIXED, A_PROFILER_OCCUPANCY, A_ORIGINAL_STREAM, A_SPELLING,
    A_STARTS, A_ENDS, A_REFS, A_SORTED, A_FROMBYTES, A_APPEND, A_NUMBER, A_COUNTERS, A_LAST_END, A_COUNTER_EVENTS,
    A_COUNT
};
static const char *const attr_names[A_COUNT] = {
    "cat", "name", "pid", "tid", "ts", "dur", "args", "correlation", "device", "stream", "grid", "block",
    "registers", "shared_memory", "blocks_per_sm", "warps_per_sm", "occupancy", "theoretical", "input_dims",
    "input_dims_old", "input_type", "call_stack", "fixed", "profiler_occupancy", "original_stream", "spelling",
    "starts", "ends", "refs", "sorted_", "frombytes", "append", "number", " Counters", "last_end", "counter_events",
};
static PyObject *attr[A_COUNT];

/* Py_SETREF, which the limited API of 3.10 does not have */
#define J_SETREF(slot, value)        \
    do {                             \
        PyObject *old_ = (slot);     \
        (slot) = (value);            \
        Py_XDECREF(old_);            \
    } while (0)

/* what collector.py hands over once (json_bind): the categories, MAX_NAME, its pure helpers and constants */
static PyObject *op_cats = NULL, *runtime_cats = NULL, *kernel_cats = NULL, *python_cats = NULL, *gpu_op_cats = NULL;
static PyObject *kind_of = NULL;  /* {category: 1 op, 2 runtime, 3 kernel, 4 python, 5 gpu op}: the first set's */
static PyObject *j_number = NULL, *j_as_int = NULL, *j_thread_class = NULL, *j_no_args = NULL;
static PyObject *j_occupancy_key = NULL, *j_theoretical_key = NULL, *j_missing = NULL, *j_empty = NULL;
static Py_ssize_t j_max_name = 16384;
static PyObject *j_event_type = NULL, *j_args_type = NULL;  /* held: field_owner points at them */
static PyObject *j_collector_type = NULL;  /* Collector itself: the type the kernel slots serve */
static unsigned long j_binds = 0;  /* json_bind's calls, failed ones too (each may move or clear the slots) */

/* a growable run of bytes (doubles, int64s or C ints), handed to an array.array by frombytes */
typedef struct {
    char *p;
    Py_ssize_t len, cap;
} Buf;

static int buf_put(Buf *b, const void *x, Py_ssize_t size) {
    if (b->len + size > b->cap) {
        /* from 64 bytes, doubling: a block of ops on 65,000 threads has a run of buffers per thread (a first
         * 4,096 bytes each took 800 MB where the twin's arrays took 32) */
        Py_ssize_t cap = b->cap ? b->cap * 2 : 64;
        while (cap < b->len + size) cap *= 2;
        char *p = PyMem_Realloc(b->p, (size_t)cap);
        if (!p) {
            PyErr_NoMemory();
            return -1;
        }
        b->p = p, b->cap = cap;
    }
    memcpy(b->p + b->len, x, (size_t)size);
    b->len += size;
    return 0;
}

static int buf_double(Buf *b, double x) { return buf_put(b, &x, sizeof x); }
static int buf_int(Buf *b, int x) { return buf_put(b, &x, sizeof x); }
static int buf_int64(Buf *b, long long x) { return buf_put(b, &x, sizeof x); }

/* owner.<name>.frombytes(the buffer); the buffer emptied; 0 or -1 */
static int buf_flush(Buf *b, PyObject *array) {
    if (!b->len) return 0;
    PyObject *bytes = PyBytes_FromStringAndSize(b->p, b->len);
    PyObject *r = bytes ? PyObject_CallMethodObjArgs(array, attr[A_FROMBYTES], bytes, NULL) : NULL;
    Py_XDECREF(bytes);
    b->len = 0;
    if (!r) return -1;
    Py_DECREF(r);
    return 0;
}

/* one thread's ops gathered in a call: the _ThreadIntervals it goes to, its last start (sorted_) */
typedef struct {
    PyObject *thread;
    Buf starts, ends, refs;
    double last;
    int has_last, unsorted;
} OpRun;

/* one IntervalIndex's threads gathered in a call (the ops', the Python frames'): its _threads, {(pid, tid): index
 * into the call's runs}, and the last thread's keys (strong references) and run */
typedef struct {
    PyObject *threads, *run_of, *pid, *tid;
    Py_ssize_t run;
} Lane;

/* A few categories seen in a call, each with a number (its kind, its place in the count), found by identity: a
 * .pftrace's events share a few category objects (a dict look-up of each was 2% of its read). Strs only (an
 * equal str gives the same answer); strong references, dropped by seen_free. */
#define SEEN 8
typedef struct {
    PyObject *cat[SEEN];
    long value[SEEN];
    int next;
} Seen;

static int seen_find(const Seen *t, PyObject *cat, long *value) {
    for (int k = 0; k < SEEN; k++)
        if (t->cat[k] == cat) {
            *value = t->value[k];
            return 1;
        }
    return 0;
}

static void seen_add(Seen *t, PyObject *cat, long value) {
    if (!PyUnicode_CheckExact(cat)) return;
    int k = t->next;
    t->next = (k + 1) % SEEN;
    PyObject *old = t->cat[k];
    t->cat[k] = new_ref(cat), t->value[k] = value;
    Py_XDECREF(old);
}

static void seen_free(Seen *t) {
    for (int k = 0; k < SEEN; k++) Py_CLEAR(t->cat[k]);
}

/* Collector.add's count of categories in the order they first came: each category's place (by identity among the
 * last few, else in a dict), the categories in that order, and each one's count */
typedef struct {
    PyObject *seen, *order;
    Py_ssize_t *counts, cap;
    Seen places;
} Tally;

/* 0, or -1 with the error raised (then tally_close) */
static int tally_open(Tally *t) {
    memset(t, 0, sizeof *t);
    t->seen = PyDict_New();
    t->order = t->seen ? PyList_New(0) : NULL;
    return t->order ? 0 : -1;
}

static void tally_close(Tally *t) {
    Py_CLEAR(t->seen);
    Py_CLEAR(t->order);
    seen_free(&t->places);
    PyMem_Free(t->counts);
    t->counts = NULL, t->cap = 0;
}

static int tally_traverse(Tally *t, visitproc visit, void *arg) {
    Py_VISIT(t->seen);
    Py_VISIT(t->order);
    for (int j = 0; j < SEEN; j++) Py_VISIT(t->places.cat[j]);
    return 0;
}

static long dict_long(PyObject *dict, PyObject *key, int *missing);

/* one event of category cat counted: 0, or -1 with the error raised (an unhashable category: the counts before it
 * kept, as the twin's Counter keeps them) */
static int tally_count(Tally *t, PyObject *cat) {
    long at = -2;
    int missing = 0;
    if (seen_find(&t->places, cat, &at)) {
        t->counts[at]++;
        return 0;
    }
    if ((at = dict_long(t->seen, cat, &missing)) == -2) return -1;
    if (missing) {
        at = (long)PyList_Size(t->order);
        if (at >= t->cap) {
            Py_ssize_t cap = t->cap ? t->cap * 2 : 16, *grown = PyMem_Realloc(t->counts, (size_t)cap * sizeof *grown);
            if (!grown) {
                PyErr_NoMemory();
                return -1;
            }
            t->counts = grown, t->cap = cap;
        }
        PyObject *index = PyLong_FromLong(at);
        int failed = !index || PyDict_SetItem(t->seen, cat, index) < 0 || PyList_Append(t->order, cat) < 0;
        Py_XDECREF(index);
        if (failed) return -1;
        t->counts[at] = 0;
    }
    seen_add(&t->places, cat, at);
    t->counts[at]++;
    return 0;
}

/* an op key (Collector._op_ref's: name, dims, types, stack; strong references) and its ref. An op's key was a 4-tuple
 * made, hashed and compared for every op event (3% of a JSON read); the ops of a run repeat a few keys. */
typedef struct {
    PyObject *name, *dims, *types, *stack;
    long ref;
} OpSlot;
#define OP_SLOTS 64

/* A kernel's shape by the raw values it was made of. Every kernel made its 15-tuple shape from 16 of the event's
 * fields (its name interned, grid and block interned, three metrics memoised, ...) and looked it up in shape_ids:
 * ~7,900 instructions a kernel, where a run repeats a few shapes. A slot keeps the last kernel's raw values with the
 * shape and id they made; a kernel whose raw values are the same (the same object, or an int, a non-NaN float or a
 * str of the same type and value, or a grid or block of the same three ints) gets them, since each step from raw
 * values to the shape is a function of the values and every table it reads only grows. */
enum { R_NAME, R_PID, R_TID, R_OCC, R_THEO, R_BPS, R_WPS, R_ORIG, R_STREAM, R_DEVICE, R_REGS, R_SMEM, R_GRID,
       R_BLOCK, R_FIXED, R_PROF, R_COUNT };
typedef struct {
    PyObject *raw[R_COUNT];  /* strong references to immutable values (a grid or block: its ints, as a tuple) */
    PyObject *shape;         /* the shape table's own tuple (its metrics at 9..11); NULL: an empty slot */
    long id;                 /* its id in shape_ids */
    int numbers;             /* whether its three metrics are written as plain numbers */
} KernelSlot;
#define KERNEL_BITS 8                       /* sets of two slots: two shapes met in turn do not evict each other */
#define KERNEL_SLOTS (2 << KERNEL_BITS)

/* The slots serve one collector (of Collector's own type: a subclass's methods might want to be asked each time),
 * from block to block of a read (a block's ~180 kernels met few of their shapes twice), through a weak reference: a
 * collector gone, or another one, empties them, and they keep no table alive. kernel_slots_gen changes whenever they
 * are emptied, so a state that checked them (JState.kernel_gen) checks again after code that may have. */
static KernelSlot kernel_slots[KERNEL_SLOTS];
static PyObject *kernel_slots_for = NULL;
static unsigned long kernel_slots_gen = 1;
static int kernel_slots_busy = 0;  /* being emptied: a free there may run code, which finds no slots meanwhile */

static void kernel_slots_clear(void) {
    kernel_slots_gen++;
    kernel_slots_busy++;
    PyObject *owner = kernel_slots_for;
    kernel_slots_for = NULL;
    for (int k = 0; k < KERNEL_SLOTS; k++) {
        KernelSlot *slot = &kernel_slots[k];
        PyObject *held[R_COUNT + 1];
        for (int r = 0; r < R_COUNT; r++) held[r] = slot->raw[r], slot->raw[r] = NULL;
        held[R_COUNT] = slot->shape, slot->shape = NULL;
        for (int r = 0; r <= R_COUNT; r++) Py_XDECREF(held[r]);  /* after the slot is empty */
    }
    Py_XDECREF(owner);
    kernel_slots_busy--;
}

/* one call's state: the collector's tables and helpers (borrowed from `held`), the gathered appends */
typedef struct {
    PyObject *held[40];
    int nheld;
    PyObject *contents, *op_refs, *op_ref, *names, *reported, *value, *dims, *dims_fn, *occupancy;
    PyObject *non_finite, *kernel_add, *frame_refs, *frame_ref, *gpu_op, *complete;
    PyObject *runtime, *thread_ids, *thread_keys, *name_ids, *name_list, *categories;
    PyObject *kernel_table, *shape_ids, *shapes;  /* shape_ids NULL: the table takes launches as columns (add) */
    Buf k_ts, k_dur, k_corr, k_shape;  /* KernelTable.add's appends, gathered */
    OpRun *runs;  /* both lanes' */
    Py_ssize_t nruns, cap_runs;
    Lane ops, frames;
    PyObject *rt_pid, *rt_tid;  /* the last keys seen (strong references) */
    int rt_thread;
    Buf rt_corr, rt_threads, rt_starts, rt_names;
    double last_end, last_end_before;
    long counters;
    Seen kinds;  /* the categories' kinds (kind_of_cat) */
    int exposed;  /* the event was handed to Python code since the scanner last cleared it (scan_settle) */
    OpSlot *op_cache;  /* op_refs' last keys, by slot (op_key_ref): OP_SLOTS of them, or NULL */
    int op_ok;         /* a collector of Collector's own type and _op_ref: the op slots may serve it */
    PyObject *collector;       /* borrowed (its bound methods are held) */
    int kernel_ok;             /* a collector of Collector's own type: the kernel slots may serve it */
    unsigned long kernel_gen;  /* the kernel slots' generation this state found serving its collector; 0: none */
} JState;

static PyObject *hold(JState *s, PyObject *object) {
    if (object && s->nheld < (int)(sizeof s->held / sizeof s->held[0])) s->held[s->nheld++] = object;
    return object;
}

static void keep(PyObject **slot, PyObject *object) {
    Py_XINCREF(object);
    Py_XDECREF(*slot);
    *slot = object;
}

static OpRun *grow_runs(JState *s) {
    Py_ssize_t cap = s->cap_runs ? s->cap_runs * 2 : 16;
    OpRun *runs = PyMem_Realloc(s->runs, (size_t)cap * sizeof *runs);
    if (!runs) {
        PyErr_NoMemory();
        return NULL;
    }
    s->cap_runs = cap;
    return runs;
}

/* owner.<name>, or NULL where a lookup before it failed (its error still set: no call runs over it) */
static PyObject *get(PyObject *owner, const char *name) {
    return owner && !PyErr_Occurred() ? PyObject_GetAttrString(owner, name) : NULL;
}

/* _number(v) as the twin's loops use it: 1 and *out a number, 0 for None, -1 an error raised */
static int number_of(PyObject *v, double *out) {
    if (PyFloat_CheckExact(v)) {
        *out = PyFloat_AsDouble(v);
        return 1;
    }
    if (v == Py_None) return 0;  /* as_float(None) */
    if (PyLong_CheckExact(v)) {  /* float(v); past a double's range, None */
        double d = PyLong_AsDouble(v);
        if (d == -1.0 && PyErr_Occurred()) {
            if (!PyErr_ExceptionMatches(PyExc_OverflowError)) return -1;
            PyErr_Clear();
            return 0;
        }
        *out = d;
        return 1;
    }
    PyObject *r = PyObject_CallFunctionObjArgs(j_number, v, NULL);
    if (!r) return -1;
    if (r == Py_None) {
        Py_DECREF(r);
        return 0;
    }
    double d = PyFloat_AsDouble(r);
    Py_DECREF(r);
    if (d == -1.0 && PyErr_Occurred()) return -1;
    *out = d;
    return 1;
}

/* `_number(v) or 0.0` (-0.0 is falsy too), where v is not a float: 0 or -1 */
static int number_or_zero(PyObject *v, double *out) {
    int k = number_of(v, out);
    if (k < 0) return -1;
    if (k == 0 || *out == 0.0) *out = 0.0;
    return 0;
}

/* `v if type(v) is int else as_int(v)`: a new reference */
static PyObject *int_or_as_int(PyObject *v) {
    if (PyLong_CheckExact(v) || v == Py_None) return new_ref(v);  /* as_int(None) is None */
    return PyObject_CallFunctionObjArgs(j_as_int, v, NULL);
}

/* a correlation as RuntimeIndex and the tables keep it: NO_CORRELATION (-2**63) for None or past int64 */
static long long stored_correlation(PyObject *v) {
    if (!PyLong_CheckExact(v)) return INT64_MIN;
    int overflow = 0;
    long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
    if (overflow || (x == -1 && PyErr_Occurred())) {
        PyErr_Clear();
        return INT64_MIN;
    }
    return x;
}

/* text cut to MAX_NAME where it is a str longer (cut_name); a new reference */
static PyObject *cut(PyObject *v) {
    if (PyUnicode_CheckExact(v) && PyUnicode_GetLength(v) > j_max_name) return PyUnicode_Substring(v, 0, j_max_name);
    return new_ref(v);
}

/* Collector._name: as text, cut, interned in the collector's dict */
static PyObject *intern_name(JState *s, PyObject *v) {
    PyObject *text = PyUnicode_CheckExact(v) ? new_ref(v) : PyObject_Str(v);
    if (text && PyUnicode_GetLength(text) > j_max_name) {
        PyObject *whole = text;
        text = PyUnicode_Substring(whole, 0, j_max_name);
        Py_DECREF(whole);
    }
    if (!text) return NULL;
    PyObject *found = PyDict_GetItemWithError(s->names, text);
    if (found) {
        Py_DECREF(text);
        return new_ref(found);
    }
    if (PyErr_Occurred() || PyDict_SetItem(s->names, text, text) < 0) {
        Py_DECREF(text);
        return NULL;
    }
    return text;
}

/* dict[key] as a C long, or -1 and *missing where it is not there; -2 an error */
static long dict_long(PyObject *dict, PyObject *key, int *missing) {
    PyObject *found = PyDict_GetItemWithError(dict, key);
    *missing = 0;
    if (!found) {
        if (PyErr_Occurred()) return -2;
        *missing = 1;
        return -1;
    }
    long v = PyLong_AsLong(found);
    return (v == -1 && PyErr_Occurred()) ? -2 : v;
}

/* RuntimeIndex's id of a key in (ids, keys): found, or the next one, registered */
static long id_of(PyObject *ids, PyObject *keys, PyObject *key, PyObject *listed) {
    int missing;
    long id = dict_long(ids, key, &missing);
    if (!missing) return id;
    if (id == -2) return -1;
    id = (long)PyList_Size(keys);
    PyObject *number = PyLong_FromLong(id);
    int failed = !number || PyDict_SetItem(ids, key, number) < 0 || PyList_Append(keys, listed) < 0;
    Py_XDECREF(number);
    return failed ? -1 : id;
}

/* Where the decoder's structs (events.Event, EventArgs: msgspec Structs, each field a slot) hold each field, found
 * at json_bind by building one of each with a distinct object in every field and finding each object's word in it
 * once (and only once): read there for an object of exactly that type, by name for anything else. A generic
 * attribute lookup was 40% of this loop's instructions. */
static PyTypeObject *field_owner[A_COUNT];
static Py_ssize_t field_offset[A_COUNT];

/* where an object of field_owner[k]'s type holds field k (field_offset[k] is not 0) */
static PyObject **slot_of(PyObject *owner, int k) { return (PyObject **)((char *)owner + field_offset[k]); }

static PyObject *ev_attr(PyObject *ev, int which) {
    if (field_offset[which] && Py_TYPE(ev) == field_owner[which]) {
        PyObject *value = *(PyObject **)((char *)ev + field_offset[which]);
        if (value) return new_ref(value);
    }
    return PyObject_GetAttr(ev, attr[which]);
}

/* the slots of `type`'s fields among attr[first..last]: 0 where bound, -1 with an error raised */
static int find_fields(PyObject *type, int first, int last) {
    PyObject *size = PyObject_GetAttrString(type, "__basicsize__");
    Py_ssize_t basic = size ? PyLong_AsSsize_t(size) : -1;
    Py_XDECREF(size);
    if (basic < 0) return -1;
    PyObject *kwargs = PyDict_New(), *empty = PyTuple_New(0), *marks[A_COUNT] = {NULL}, *sample = NULL;
    int status = -1;
    if (!kwargs || !empty) goto done;
    for (int k = first; k <= last; k++)
        if (!(marks[k] = PyObject_CallObject((PyObject *)&PyBaseObject_Type, NULL)) ||
            PyDict_SetItem(kwargs, attr[k], marks[k]) < 0)
            goto done;
    if (!(sample = PyObject_Call(type, empty, kwargs))) goto done;
    for (int k = first; k <= last; k++) {
        Py_ssize_t found = 0;
        for (Py_ssize_t at = (Py_ssize_t)sizeof(PyObject); at + (Py_ssize_t)sizeof(PyObject *) <= basic;
             at += (Py_ssize_t)sizeof(PyObject *))
            if (*(PyObject **)((char *)sample + at) == marks[k]) found = found ? -1 : at;
        PyObject *read = found > 0 ? PyObject_GetAttr(sample, attr[k]) : NULL;  /* and by name: the same object */
        if (found > 0 && !read) goto done;
        field_offset[k] = read == marks[k] ? found : 0;
        field_owner[k] = (PyTypeObject *)type;
        Py_XDECREF(read);
    }
    status = 0;
done:
    for (int k = first; k <= last; k++) Py_XDECREF(marks[k]);
    Py_XDECREF(kwargs); Py_XDECREF(empty); Py_XDECREF(sample);
    return status;
}

/* whether two bytes objects hold the same bytes */
static int same_bytes(PyObject *a, PyObject *b) {
    if (a == b) return 1;
    Py_ssize_t n = PyBytes_Size(a);
    if (n < 0 || n != PyBytes_Size(b)) {
        PyErr_Clear();
        return 0;
    }
    const char *p = PyBytes_AsString(a), *q = PyBytes_AsString(b);
    if (!p || !q) {
        PyErr_Clear();
        return 0;
    }
    return memcmp(p, q, (size_t)n) == 0;
}

/* the op_refs key's slot in the state's cache (made on first use; NULL without memory, or for a collector whose
 * _op_ref is not Collector's, which might rewrite op_refs: looked up as before) */
static OpSlot *op_slot(JState *s, PyObject *name, PyObject *dims, PyObject *types) {
    if (!s->op_ok) return NULL;
    if (!s->op_cache && !(s->op_cache = PyMem_Calloc(OP_SLOTS, sizeof *s->op_cache))) return NULL;
    size_t h = (size_t)((uintptr_t)name >> 4) ^ ((size_t)PyBytes_Size(dims) * 40503u) ^ (size_t)PyBytes_Size(types);
    PyErr_Clear();  /* a size's error: the hash is only a slot */
    return &s->op_cache[h & (OP_SLOTS - 1)];
}

/* the ref of an op key (name, dims, types, stack): the cache's, where the last key in its slot had the same name
 * and stack objects and the same bytes (op_refs maps it to the same ref: it only grows); else op_refs', kept in the
 * slot; else the twin's _op_ref, which registers it. -1 with an error raised */
static long op_key_ref(JState *s, PyObject *ev, PyObject *name, PyObject *dims, PyObject *types, PyObject *stack) {
    OpSlot *slot = op_slot(s, name, dims, types);
    if (slot && slot->name == name && slot->stack == stack && same_bytes(slot->dims, dims) &&
        same_bytes(slot->types, types))
        return slot->ref;
    PyObject *key = PyTuple_Pack(4, name, dims, types, stack);
    if (!key) return -1;
    int missing;
    long ref = dict_long(s->op_refs, key, &missing);
    Py_DECREF(key);
    if (!missing) {
        if (ref == -2) return -1;
        if (slot) {
            PyObject *old[4] = {slot->name, slot->dims, slot->types, slot->stack};
            slot->name = new_ref(name), slot->dims = new_ref(dims), slot->types = new_ref(types);
            slot->stack = new_ref(stack), slot->ref = ref;
            for (int k = 0; k < 4; k++) Py_XDECREF(old[k]);
        }
        return ref;
    }
    s->exposed = 1;
    PyObject *r = PyObject_CallFunctionObjArgs(s->op_ref, ev, NULL);
    if (!r) return -1;
    ref = PyLong_AsLong(r);
    Py_DECREF(r);
    return (ref == -1 && PyErr_Occurred()) ? -1 : ref;
}

/* Collector._op_ref's key (op_key_ref looks it up). -1 with an error raised */
static long op_ref(JState *s, PyObject *ev) {
    PyObject *raw_name = ev_attr(ev, A_NAME), *args = raw_name ? ev_attr(ev, A_ARGS) : NULL;
    PyObject *name = args ? cut(raw_name) : NULL, *dims = NULL, *types = NULL, *stack = NULL;
    if (name && args == Py_None) {
        dims = new_ref(j_empty), types = new_ref(j_empty), stack = new_ref(Py_None);
    } else if (name) {
        PyObject *dims_raw = ev_attr(args, A_INPUT_DIMS);
        dims = dims_raw ? PyObject_Bytes(dims_raw) : NULL;
        if (dims && PyBytes_Size(dims) == 0) {
            Py_DECREF(dims);
            PyObject *old = ev_attr(args, A_INPUT_DIMS_OLD);
            dims = old ? PyObject_Bytes(old) : NULL;
            Py_XDECREF(old);
        }
        PyObject *type_raw = dims ? ev_attr(args, A_INPUT_TYPE) : NULL;
        types = type_raw ? PyObject_Bytes(type_raw) : NULL;
        PyObject *given = types ? ev_attr(args, A_CALL_STACK) : NULL;
        stack = given ? new_ref(PyUnicode_CheckExact(given) ? given : Py_None) : NULL;
        Py_XDECREF(dims_raw); Py_XDECREF(type_raw); Py_XDECREF(given);
    }
    Py_XDECREF(raw_name); Py_XDECREF(args);
    long ref = stack ? op_key_ref(s, ev, name, dims, types, stack) : -1;
    Py_XDECREF(name); Py_XDECREF(dims); Py_XDECREF(types); Py_XDECREF(stack);
    return ref;
}

/* whether two exact ints are one value: compared as int64s where they fit, without a call (1, 0, or -1 raised) */
static int same_int(PyObject *a, PyObject *b) {
    if (a == b) return 1;
    int over_a = 0, over_b = 0;
    long long x = PyLong_AsLongLongAndOverflow(a, &over_a), y = PyLong_AsLongLongAndOverflow(b, &over_b);
    if (!over_a && !over_b) return x == y;
    PyErr_Clear();
    return PyObject_RichCompareBool(a, b, Py_EQ);
}

/* a == b for a thread's pid or tid: an identical object, or two ints of one value, without a call */
static int same_key(PyObject *a, PyObject *b) {
    if (a == b) return 1;
    if (PyLong_CheckExact(a) && PyLong_CheckExact(b)) return same_int(a, b);
    return PyObject_RichCompareBool(a, b, Py_EQ);
}

/* the run of (pid, tid)'s thread of the lane in this call: found, or its _ThreadIntervals looked up (made where
 * new) */
static Py_ssize_t lane_run_of(JState *s, Lane *lane, PyObject *pid, PyObject *tid) {
    if (lane->run >= 0) {
        int same = same_key(tid, lane->tid);
        if (same > 0) same = same_key(pid, lane->pid);
        if (same < 0) return -1;
        if (same) return lane->run;
    }
    PyObject *key = PyTuple_Pack(2, pid, tid);
    if (!key) return -1;
    int missing;
    long at = dict_long(lane->run_of, key, &missing);
    if (!missing) {
        Py_DECREF(key);
        if (at == -2) return -1;
        keep(&lane->pid, pid), keep(&lane->tid, tid), lane->run = at;
        return at;
    }
    PyObject *thread = PyDict_GetItemWithError(lane->threads, key);
    if (thread) {
        Py_INCREF(thread);
    } else if (!PyErr_Occurred() && (thread = PyObject_CallObject(j_thread_class, NULL))) {
        if (PyDict_SetItem(lane->threads, key, thread) < 0) Py_CLEAR(thread);
    }
    PyObject *starts = thread ? PyObject_GetAttr(thread, attr[A_STARTS]) : NULL;
    Py_ssize_t size = starts ? PyObject_Size(starts) : -1;
    double last = 0.0;
    if (size > 0) {
        PyObject *item = PySequence_GetItem(starts, size - 1);
        last = item ? PyFloat_AsDouble(item) : -1.0;
        Py_XDECREF(item);
        if (last == -1.0 && PyErr_Occurred()) size = -1;
    }
    Py_XDECREF(starts);
    OpRun *grown = s->nruns == s->cap_runs && size >= 0 ? grow_runs(s) : s->runs;
    if (size < 0 || !grown) {
        Py_XDECREF(thread);
        Py_DECREF(key);
        return -1;
    }
    s->runs = grown;
    OpRun *run = &s->runs[s->nruns];
    memset(run, 0, sizeof *run);
    run->thread = thread, run->last = last, run->has_last = size > 0;
    PyObject *index = PyLong_FromSsize_t(s->nruns);
    int failed = !index || PyDict_SetItem(lane->run_of, key, index) < 0;
    Py_XDECREF(index);
    Py_DECREF(key);
    s->nruns++;  /* kept even where the dict failed: released with the rest */
    if (failed) return -1;
    keep(&lane->pid, pid), keep(&lane->tid, tid), lane->run = s->nruns - 1;
    return lane->run;
}

/* ts and dur as the twin's op and runtime branches read them: 0 and the event skipped where ts is no number */
static int times_of(PyObject *ev, double *ts, double *dur) {
    PyObject *t = ev_attr(ev, A_TS), *d = t ? ev_attr(ev, A_DUR) : NULL;
    int k = -1;
    if (d) {
        k = number_of(t, ts);
        if (k == 1 && !PyFloat_CheckExact(d)) {
            if (number_or_zero(d, dur) < 0) k = -1;
        } else if (k == 1) {
            *dur = PyFloat_AsDouble(d);
        }
    }
    Py_XDECREF(t);
    Py_XDECREF(d);
    return k;
}

/* IntervalIndex.add(pid, tid, start, end, ref) for the lane, gathered in its thread's run (refs an array("i")): 0 or
 * -1 */
static int gather(JState *s, Lane *lane, PyObject *ev, double start, double end, long ref) {
    if (ref > INT_MAX || ref < INT_MIN) {
        PyErr_SetString(PyExc_OverflowError, "signed integer is greater than maximum");
        return -1;
    }
    PyObject *pid = ev_attr(ev, A_PID), *tid = pid ? ev_attr(ev, A_TID) : NULL;
    Py_ssize_t at = tid ? lane_run_of(s, lane, pid, tid) : -1;
    Py_XDECREF(pid);
    Py_XDECREF(tid);
    if (at < 0) return -1;
    OpRun *run = &s->runs[at];
    if (run->has_last && start < run->last) run->unsorted = 1;
    run->last = start, run->has_last = 1;
    if (buf_double(&run->starts, start) < 0 || buf_double(&run->ends, end) < 0 || buf_int(&run->refs, (int)ref) < 0)
        return -1;
    return 0;
}

/* an op: IntervalIndex.add(pid, tid, ts, ts + dur, _op_ref(ev)), gathered */
static int handle_op(JState *s, PyObject *ev) {
    double ts = 0.0, dur = 0.0;
    int k = times_of(ev, &ts, &dur);
    if (k <= 0) return k;
    long ref = op_ref(s, ev);
    if (ref == -1 && PyErr_Occurred()) return -1;
    return gather(s, &s->ops, ev, ts, ts + dur, ref);
}

/* a Python frame: the twin's Collector._python, IntervalIndex.add(pid, tid, start, start + (_number(dur) or 0.0),
 * _frame_ref(name)), gathered; a name not seen before goes through the twin's _frame_ref, which registers it */
static int handle_python(JState *s, PyObject *ev) {
    double start = 0.0, dur = 0.0;
    PyObject *t = ev_attr(ev, A_TS);
    int k = t ? number_of(t, &start) : -1;
    Py_XDECREF(t);
    if (k <= 0) return k;
    PyObject *d = ev_attr(ev, A_DUR);
    k = d ? number_or_zero(d, &dur) : -1;
    Py_XDECREF(d);
    if (k < 0) return -1;
    PyObject *raw_name = ev_attr(ev, A_NAME), *name = raw_name ? cut(raw_name) : NULL;
    int missing = 0;
    long ref = name ? dict_long(s->frame_refs, name, &missing) : -2;
    Py_XDECREF(name);
    if (missing) {
        PyObject *r = PyObject_CallFunctionObjArgs(s->frame_ref, raw_name, NULL);
        ref = r ? PyLong_AsLong(r) : -2;
        if (ref == -1 && PyErr_Occurred()) ref = -2;
        Py_XDECREF(r);
    }
    Py_XDECREF(raw_name);
    if (ref == -2) return -1;
    return gather(s, &s->frames, ev, start, start + dur, ref);
}

/* a runtime call: RuntimeIndex.add(corr, pid, tid, ts, name, dur=dur), gathered */
static int handle_runtime(JState *s, PyObject *ev) {
    double ts = 0.0, dur = 0.0;
    int k = times_of(ev, &ts, &dur);
    if (k <= 0) return k;
    PyObject *args = ev_attr(ev, A_ARGS), *corr = NULL;
    if (args) corr = args == Py_None ? new_ref(Py_None) : ev_attr(args, A_CORRELATION);
    PyObject *as_int_corr = corr ? int_or_as_int(corr) : NULL;
    long long stored = as_int_corr ? stored_correlation(as_int_corr) : 0;
    Py_XDECREF(args); Py_XDECREF(corr); Py_XDECREF(as_int_corr);
    if (!as_int_corr) return -1;
    PyObject *pid = ev_attr(ev, A_PID), *tid = pid ? ev_attr(ev, A_TID) : NULL;
    int failed = !tid;
    if (!failed && s->rt_thread >= 0) {
        int same = same_key(tid, s->rt_tid);
        if (same > 0) same = same_key(pid, s->rt_pid);
        failed = same < 0;
        if (!same) s->rt_thread = -1;
    }
    if (!failed && s->rt_thread < 0) {
        PyObject *key = PyTuple_Pack(2, pid, tid);
        long id = key ? id_of(s->thread_ids, s->thread_keys, key, key) : -1;
        Py_XDECREF(key);
        failed = id < 0;
        if (!failed) s->rt_thread = (int)id, keep(&s->rt_pid, pid), keep(&s->rt_tid, tid);
    }
    Py_XDECREF(pid);
    Py_XDECREF(tid);
    if (failed) return -1;
    PyObject *raw = ev_attr(ev, A_NAME), *name = raw ? cut(raw) : NULL;
    PyObject *listed = !name ? NULL : PyUnicode_CheckExact(name) ? new_ref(name) : PyObject_Str(name);
    long name_id = listed ? id_of(s->name_ids, s->name_list, name, listed) : -1;
    Py_XDECREF(raw); Py_XDECREF(name); Py_XDECREF(listed);
    if (name_id < 0) return -1;
    double end = dur > 0 ? ts + dur : ts;
    if (end > s->last_end) s->last_end = end;
    if (buf_int64(&s->rt_corr, stored) < 0 || buf_int(&s->rt_threads, s->rt_thread) < 0 ||
        buf_double(&s->rt_starts, ts) < 0 || buf_int(&s->rt_names, (int)name_id) < 0)
        return -1;
    return 0;
}

/* Collector._value: the memoised ReportedValue of an int, float or str; the twin's for the rest */
static PyObject *reported_of(JState *s, PyObject *v) {
    if (v == Py_None) return new_ref(j_missing);  /* reported(None), equal to the twin's */
    if (PyLong_CheckExact(v) || PyFloat_CheckExact(v) || PyUnicode_CheckExact(v)) {
        PyObject *found = PyDict_GetItemWithError(s->reported, v);
        if (found) return new_ref(found);
        if (PyErr_Occurred()) return NULL;
    }
    return PyObject_CallFunctionObjArgs(s->value, v, NULL);
}

/* Collector._dims: a list of three ints as an interned tuple; the twin's for any other list of three */
static PyObject *dims_of(JState *s, PyObject *v) {
    if (!PyList_CheckExact(v) || PyList_Size(v) != 3) return new_ref(Py_None);
    PyObject *x = PyList_GetItem(v, 0), *y = PyList_GetItem(v, 1), *z = PyList_GetItem(v, 2);
    if (!x || !y || !z) return NULL;
    if (!PyLong_CheckExact(x) || !PyLong_CheckExact(y) || !PyLong_CheckExact(z))
        return PyObject_CallFunctionObjArgs(s->dims_fn, v, NULL);
    PyObject *dims = PyTuple_Pack(3, x, y, z);
    if (!dims) return NULL;
    PyObject *found = PyDict_GetItemWithError(s->dims, dims);
    if (found) {
        Py_DECREF(dims);
        return new_ref(found);
    }
    if (PyErr_Occurred() || PyDict_SetItem(s->dims, dims, dims) < 0) {
        Py_DECREF(dims);
        return NULL;
    }
    return dims;
}

/* a device: an int inside int64 as it is, anything else as_int's */
static PyObject *device_of(PyObject *v) {
    if (PyLong_CheckExact(v)) {
        int overflow = 0;
        long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
        if (!overflow && x != LLONG_MIN) return new_ref(v);
        PyErr_Clear();
        return new_ref(Py_None);  /* as_int's answer past int64 */
    }
    return int_or_as_int(v);
}

/* a stream id kept as a key: a scalar as it is, anything else its text's first 64 characters */
static PyObject *stream_of(PyObject *v) {
    if (v == Py_None || PyLong_CheckExact(v) || PyUnicode_CheckExact(v) || PyFloat_CheckExact(v) || PyBool_Check(v))
        return new_ref(v);
    PyObject *text = PyObject_Str(v);
    if (!text) return NULL;
    PyObject *kept = PyUnicode_Substring(text, 0, 64);
    Py_DECREF(text);
    return kept;
}

static int is_number_spelling(PyObject *r) {
    PyObject *spelling = PyObject_GetAttr(r, attr[A_SPELLING]);
    int same = spelling ? PyObject_RichCompareBool(spelling, attr[A_NUMBER], Py_EQ) : -1;
    Py_XDECREF(spelling);
    return same;
}

enum { K_ARGS, K_OCC, K_DEVICE, K_CORR, K_REGS, K_SMEM, K_TS, K_DUR, K_BPS, K_WPS, K_OCCV, K_STREAM, K_CORRI,
       K_NAME, K_PID, K_TID, K_DEV, K_GRID, K_BLOCK, K_REGI, K_SMEMI, K_FIXED, K_PROF, K_TSF, K_DURF, K_SHAPE,
       K_RAW, K_COUNT };

/* a kernel's reported metrics (Collector._value of each) and its stream, as _kernel reads them first: o[K_BPS],
 * o[K_WPS], o[K_OCCV], o[K_STREAM], and which occupancy it reports; 0 or -1 */
static int kernel_metrics(JState *s, PyObject *args, PyObject **o, PyObject **occupancy_key) {
    *occupancy_key = Py_None;
    if (!(o[K_OCC] = ev_attr(args, A_OCCUPANCY))) return -1;
    if (o[K_OCC] != Py_None) {
        *occupancy_key = j_occupancy_key;
    } else {
        PyObject *theoretical = ev_attr(args, A_THEORETICAL);
        if (!theoretical) return -1;
        if (theoretical != Py_None) *occupancy_key = j_theoretical_key;
        J_SETREF(o[K_OCC], theoretical);
    }
    if (!(o[K_RAW] = ev_attr(args, A_BLOCKS_PER_SM)) || !(o[K_BPS] = reported_of(s, o[K_RAW]))) return -1;
    J_SETREF(o[K_RAW], ev_attr(args, A_WARPS_PER_SM));
    if (!o[K_RAW] || !(o[K_WPS] = reported_of(s, o[K_RAW])) || !(o[K_OCCV] = reported_of(s, o[K_OCC]))) return -1;
    J_SETREF(o[K_RAW], ev_attr(args, A_ORIGINAL_STREAM));  /* Cuspy's lanes: the real stream */
    if (!o[K_RAW]) return -1;
    if (o[K_RAW] == Py_None) J_SETREF(o[K_RAW], ev_attr(args, A_STREAM));
    if (!o[K_RAW] || !(o[K_STREAM] = stream_of(o[K_RAW]))) return -1;
    return 0;
}

/* a kernel: Collector._kernel, KernelTable.add's arguments in the twin's order */
static long kernel_gather(JState *s, double ts, double dur, PyObject **o, PyObject *shape, long known);

static const int raw_field[R_COUNT] = {A_NAME, A_PID, A_TID, A_OCCUPANCY, A_THEORETICAL, A_BLOCKS_PER_SM,
                                       A_WARPS_PER_SM, A_ORIGINAL_STREAM, A_STREAM, A_DEVICE, A_REGISTERS,
                                       A_SHARED_MEMORY, A_GRID, A_BLOCK, A_FIXED, A_PROFILER_OCCUPANCY};

/* whether a kept raw value and a kernel's make the same shape: the same immutable object, or the same type and value
 * (a float's bits: -0.0 is not 0.0); a grid or block kept as the tuple of its ints then, against the kernel's list
 * (compared by its items' values, never by the list: a list can change in place) */
static int same_raw(PyObject *kept, PyObject *v) {
    if (PyTuple_CheckExact(kept)) {
        if (!PyList_CheckExact(v) || PyList_Size(v) != 3) return 0;
        for (Py_ssize_t j = 0; j < 3; j++) {
            PyObject *a = PyTuple_GetItem(kept, j), *b = PyList_GetItem(v, j);
            if (!a || !b || !PyLong_CheckExact(b) || same_int(a, b) != 1) {
                PyErr_Clear();
                return 0;
            }
        }
        return 1;
    }
    if (kept == v) return 1;
    if (Py_TYPE(kept) != Py_TYPE(v)) return 0;
    if (PyLong_CheckExact(kept)) {
        int same = same_int(kept, v);
        if (same < 0) PyErr_Clear();
        return same == 1;
    }
    if (PyFloat_CheckExact(kept)) {
        double x = PyFloat_AsDouble(kept), y = PyFloat_AsDouble(v);
        return memcmp(&x, &y, sizeof x) == 0;
    }
    if (PyUnicode_CheckExact(kept)) {
        int cmp = PyUnicode_Compare(kept, v);
        if (cmp == -1 && PyErr_Occurred()) PyErr_Clear();
        return cmp == 0;
    }
    return 0;
}

/* whether a raw value is one a slot keeps (None, an exact int, a non-NaN float, an exact str; for a grid or a
 * block, a list of three ints too: anything else makes its shape every time), and its hash by its value into *h
 * (each block makes its own objects: a str's and an int's own hash, a float's bits, a list's three ints') */
static int raw_hashed(PyObject *v, int r, uint64_t *h) {
    if (v == Py_None) {
        *h = 1;
        return 1;
    }
    if (PyFloat_CheckExact(v)) {
        double d = PyFloat_AsDouble(v);
        memcpy(h, &d, sizeof d);
        return !isnan(d);
    }
    Py_ssize_t n = (r == R_GRID || r == R_BLOCK) && PyList_CheckExact(v) ? PyList_Size(v) : 0;
    if (!PyLong_CheckExact(v) && !PyUnicode_CheckExact(v) && n != 3) return 0;
    uint64_t acc = 0;
    for (Py_ssize_t j = 0; j < (n ? n : 1); j++) {
        PyObject *item = n ? PyList_GetItem(v, j) : v;
        if (!item || (n && !PyLong_CheckExact(item))) return 0;
        Py_hash_t x = PyObject_Hash(item);  /* an int's is its value's, a str's kept in it */
        if (x == -1) {
            PyErr_Clear();
            return 0;
        }
        acc = acc * 31 + (uint64_t)x;
    }
    *h = acc;
    return 1;
}

/* the kernel slots made to serve this state's collector, where they may (0), emptied first where they served
 * another or one since gone; -1 where they cannot (not weak-referenceable) */
static int kernel_slots_serve(JState *s) {
    if (s->kernel_gen == kernel_slots_gen) return 0;
    PyObject *served = kernel_slots_for ? PyObject_CallNoArgs(kernel_slots_for) : NULL;  /* the referent, or None */
    if (kernel_slots_for && !served) PyErr_Clear();
    int same = served == s->collector;
    Py_XDECREF(served);
    if (!same) {
        PyObject *ref = PyWeakref_NewRef(s->collector, NULL);  /* first: making it may run code that fills slots */
        if (!ref) {
            PyErr_Clear();
            return -1;
        }
        kernel_slots_clear();
        kernel_slots_for = ref;  /* the slots empty, no code run since */
    }
    s->kernel_gen = kernel_slots_gen;
    return 0;
}

/* a kernel's raw values (new references into raw, read from the scanner's Event and EventArgs: NULL for any other
 * event, or a value a slot does not keep, raw then left empty) and its set of slots */
static KernelSlot *kernel_slot(JState *s, PyObject *ev, PyObject **raw) {
    if (!s->kernel_ok || kernel_slots_busy || !s->shape_ids || Py_TYPE(ev) != (PyTypeObject *)j_event_type ||
        !field_offset[A_ARGS])
        return NULL;
    PyObject *args = *slot_of(ev, A_ARGS);
    if (!args || Py_TYPE(args) != (PyTypeObject *)j_args_type) return NULL;
    uint64_t h = 0;
    for (int r = 0; r < R_COUNT; r++) {
        int k = raw_field[r];
        PyObject *owner = k <= A_ARGS ? ev : args;
        uint64_t one;
        if (!field_offset[k] || Py_TYPE(owner) != field_owner[k] || !(raw[r] = *slot_of(owner, k)) ||
            !raw_hashed(raw[r], r, &one)) {
            for (int q = 0; q <= r; q++) raw[q] = NULL;
            return NULL;
        }
        h = (h ^ one) * UINT64_C(0x100000001B3);
    }
    for (int r = 0; r < R_COUNT; r++) Py_INCREF(raw[r]);  /* held: the code the kernel's handling runs may drop them */
    if (kernel_slots_serve(s) < 0) return NULL;
    h ^= h >> 29;
    return &kernel_slots[2 * ((h * UINT64_C(0xFF51AFD7ED558CCD)) >> (64 - KERNEL_BITS))];
}

/* whether the event's fields still hold the raw values read at its start (code run since could have written them),
 * its grid and block lists still the values the shape was made of (`dims`: the tuples dims_of gave) */
static int kernel_unchanged(PyObject *ev, PyObject *const *raw, PyObject *const *dims) {
    PyObject *args = *slot_of(ev, A_ARGS);
    if (!args || Py_TYPE(args) != (PyTypeObject *)j_args_type) return 0;
    for (int r = 0; r < R_COUNT; r++) {
        int k = raw_field[r];
        if (*slot_of(k <= A_ARGS ? ev : args, k) != raw[r]) return 0;
    }
    return PyTuple_CheckExact(dims[0]) && PyTuple_CheckExact(dims[1]) && same_raw(dims[0], raw[R_GRID]) &&
           same_raw(dims[1], raw[R_BLOCK]);
}

/* the slot of the set whose raw values are these, and whose shape is still the table's at its id, or NULL */
static const KernelSlot *kernel_hit(const JState *s, const KernelSlot *set, PyObject *const *raw) {
    for (int way = 0; way < 2; way++) {
        const KernelSlot *slot = &set[way];
        int same = slot->shape != NULL && slot->id < PyList_Size(s->shapes) &&
                   PyList_GetItem(s->shapes, slot->id) == slot->shape;
        for (int r = 0; same && r < R_COUNT; r++) same = same_raw(slot->raw[r], raw[r]);
        if (same) return slot;
        PyErr_Clear();
    }
    return NULL;
}

/* a shape (the table's tuple at id) into its set's first slot, keyed on the raw values and, for the grid and the
 * block, the tuples the shape was made of (`dims`); the one there moved to the second (the second's, the older,
 * let go) */
static void kernel_keep(KernelSlot *set, PyObject *const *raw, PyObject *const *dims, PyObject *shape, long id,
                        int numbers) {
    PyObject *kept[R_COUNT];
    for (int r = 0; r < R_COUNT; r++) kept[r] = new_ref(r == R_GRID ? dims[0] : r == R_BLOCK ? dims[1] : raw[r]);
    KernelSlot gone = set[1];
    set[1] = set[0];
    for (int r = 0; r < R_COUNT; r++) set[0].raw[r] = kept[r];
    set[0].shape = new_ref(shape), set[0].id = id, set[0].numbers = numbers;
    for (int r = 0; r < R_COUNT; r++) Py_XDECREF(gone.raw[r]);  /* after the sets are whole: a free may run code */
    Py_XDECREF(gone.shape);
}

/* ts, dur and the correlation of a kernel, as _kernel reads them: o[K_TS], o[K_DUR], o[K_TSF], o[K_DURF],
 * o[K_CORR], o[K_CORRI]; 0 or -1 */
static int kernel_times(PyObject *ev, PyObject *args, PyObject **o, double *ts, double *dur) {
    if (!(o[K_CORR] = ev_attr(args, A_CORRELATION)) || !(o[K_TS] = ev_attr(ev, A_TS)) ||
        !(o[K_DUR] = ev_attr(ev, A_DUR)))
        return -1;
    if (PyFloat_CheckExact(o[K_TS])) *ts = PyFloat_AsDouble(o[K_TS]);
    else if (number_or_zero(o[K_TS], ts) < 0) return -1;
    if (PyFloat_CheckExact(o[K_DUR])) *dur = PyFloat_AsDouble(o[K_DUR]);
    else if (number_or_zero(o[K_DUR], dur) < 0) return -1;
    if (!(o[K_TSF] = PyFloat_FromDouble(*ts)) || !(o[K_DURF] = PyFloat_FromDouble(*dur))) return -1;
    return (o[K_CORRI] = int_or_as_int(o[K_CORR])) ? 0 : -1;
}

/* the twin's count of the metrics not written as plain numbers, for a kernel whose are not */
static int kernel_non_finite(JState *s, PyObject *bps, PyObject *wps, PyObject *occv) {
    PyObject *r = PyObject_CallFunctionObjArgs(s->non_finite, bps, wps, occv, NULL);
    Py_XDECREF(r);
    return r ? 0 : -1;
}

/* a kernel whose shape a slot has: its times and correlation gathered with that shape (held here: the code a
 * gather may call could empty the slot) */
static int kernel_of_slot(JState *s, PyObject *ev, const KernelSlot *slot) {
    PyObject *o[K_COUNT] = {NULL};
    PyObject *args = *slot_of(ev, A_ARGS), *shape = o[K_SHAPE] = new_ref(slot->shape);
    long id = slot->id;
    int numbers = slot->numbers, status = -1;
    double ts, dur;
    if (kernel_times(ev, args, o, &ts, &dur) < 0 || kernel_gather(s, ts, dur, o, shape, id) == -2) goto done;
    if (!numbers && kernel_non_finite(s, PyTuple_GetItem(shape, 9), PyTuple_GetItem(shape, 10),
                                      PyTuple_GetItem(shape, 11)) < 0)
        goto done;
    status = 0;
done:
    for (int k = 0; k < K_COUNT; k++) Py_XDECREF(o[k]);
    return status;
}

static int kernel_made(JState *s, PyObject *ev, KernelSlot *slot, PyObject *const *raw);

static int handle_kernel(JState *s, PyObject *ev) {
    PyObject *raw[R_COUNT] = {NULL};
    KernelSlot *set = kernel_slot(s, ev, raw);
    const KernelSlot *hit = set ? kernel_hit(s, set, raw) : NULL;
    int status = hit ? kernel_of_slot(s, ev, hit) : kernel_made(s, ev, set, raw);
    for (int r = 0; r < R_COUNT; r++) Py_XDECREF(raw[r]);
    return status;
}

/* a kernel's shape made from its fields (and kept in a slot of `set`, where there is one and the fields did not
 * change meanwhile) */
static int kernel_made(JState *s, PyObject *ev, KernelSlot *slot, PyObject *const *raw) {
    PyObject *o[K_COUNT] = {NULL};
    PyObject *occupancy_key = Py_None;
    int status = -1;
    PyObject *args = o[K_ARGS] = ev_attr(ev, A_ARGS);
    if (!args) goto done;
    int truth = PyObject_IsTrue(args);  /* the twin's `ev.args or _NO_ARGS` */
    if (truth < 0) goto done;
    if (!truth) {
        J_SETREF(o[K_ARGS], new_ref(j_no_args));
        args = o[K_ARGS];
    }
    if (kernel_metrics(s, args, o, &occupancy_key) < 0) goto done;
    if (!(o[K_DEVICE] = ev_attr(args, A_DEVICE)) || !(o[K_REGS] = ev_attr(args, A_REGISTERS)) ||
        !(o[K_SMEM] = ev_attr(args, A_SHARED_MEMORY)))
        goto done;
    double ts, dur;
    if (kernel_times(ev, args, o, &ts, &dur) < 0) goto done;
    J_SETREF(o[K_RAW], ev_attr(ev, A_NAME));
    if (!o[K_RAW] || !(o[K_NAME] = intern_name(s, o[K_RAW]))) goto done;
    if (!(o[K_PID] = ev_attr(ev, A_PID)) || !(o[K_TID] = ev_attr(ev, A_TID))) goto done;
    if (!(o[K_DEV] = device_of(o[K_DEVICE]))) goto done;
    J_SETREF(o[K_RAW], ev_attr(args, A_GRID));
    if (!o[K_RAW] || !(o[K_GRID] = dims_of(s, o[K_RAW]))) goto done;
    J_SETREF(o[K_RAW], ev_attr(args, A_BLOCK));
    if (!o[K_RAW] || !(o[K_BLOCK] = dims_of(s, o[K_RAW]))) goto done;
    if (!(o[K_REGI] = int_or_as_int(o[K_REGS])) || !(o[K_SMEMI] = int_or_as_int(o[K_SMEM]))) goto done;
    if (!(o[K_FIXED] = ev_attr(args, A_FIXED))) goto done;
    if (!PyUnicode_Check(o[K_FIXED])) J_SETREF(o[K_FIXED], new_ref(Py_None));
    J_SETREF(o[K_RAW], ev_attr(args, A_PROFILER_OCCUPANCY));
    if (!o[K_RAW]) goto done;
    o[K_PROF] = PyDict_CheckExact(o[K_RAW]) ? PyObject_CallFunctionObjArgs(s->occupancy, o[K_RAW], NULL)
                                            : new_ref(Py_None);
    if (!o[K_PROF]) goto done;
    o[K_SHAPE] = PyTuple_Pack(15, o[K_NAME], o[K_PID], o[K_TID], o[K_DEV], o[K_STREAM], o[K_GRID], o[K_BLOCK],
                              o[K_REGI], o[K_SMEMI], o[K_BPS], o[K_WPS], o[K_OCCV], occupancy_key, o[K_FIXED],
                              o[K_PROF]);
    if (!o[K_SHAPE]) goto done;
    long id = kernel_gather(s, ts, dur, o, o[K_SHAPE], -1);
    if (id == -2) goto done;
    int numbers = 1;
    PyObject *values[3] = {o[K_BPS], o[K_WPS], o[K_OCCV]};
    for (int k = 0; k < 3 && numbers == 1; k++) numbers = is_number_spelling(values[k]);
    if (numbers < 0) goto done;
    /* a metric not written as a plain number: the twin counts the non-finite ones */
    if (!numbers && kernel_non_finite(s, o[K_BPS], o[K_WPS], o[K_OCCV]) < 0) goto done;
    PyObject *dims[2] = {o[K_GRID], o[K_BLOCK]};
    if (slot && id >= 0 && s->kernel_gen == kernel_slots_gen && !kernel_slots_busy &&
        kernel_unchanged(ev, raw, dims) && id < PyList_Size(s->shapes))
        kernel_keep(slot, raw, dims, PyList_GetItem(s->shapes, id), id, numbers);
    status = 0;
done:
    for (int k = 0; k < K_COUNT; k++) Py_XDECREF(o[k]);
    return status;
}

/* owner's four arrays (by name) handed what was gathered for them, in order; 0 or -1 */
static int flush_columns(PyObject *owner, const char *const names[4], Buf *const bufs[4]) {
    int failed = 0;
    for (int j = 0; j < 4; j++) {
        PyObject *array = bufs[j]->len ? PyObject_GetAttrString(owner, names[j]) : NULL;
        failed |= bufs[j]->len && (!array || buf_flush(bufs[j], array) < 0);
        Py_XDECREF(array);
    }
    return failed ? -1 : 0;
}

/* the kernel table's four arrays handed what was gathered; 0 or -1 */
static int kernel_flush(JState *s) {
    const char *const names[4] = {"_ts", "_dur", "_corr", "_shape"};
    Buf *const bufs[4] = {&s->k_ts, &s->k_dur, &s->k_corr, &s->k_shape};
    return flush_columns(s->kernel_table, names, bufs);
}

/* KernelTable.add(ts, dur, correlation, shape), gathered: start, duration and the correlation appended first (the
 * twin's order: an unhashable shape raises after them), then the shape's id (`known`, where a slot had it; else
 * looked up), registered where new. A table that takes launches as columns, or a correlation that is no plain int,
 * goes to add itself, after what was gathered. The shape's id; -1 where add took it; -2 with an error raised */
static long kernel_gather(JState *s, double ts, double dur, PyObject **o, PyObject *shape, long known) {
    PyObject *corr = o[K_CORRI];
    if (!s->shape_ids || (corr != Py_None && !PyLong_CheckExact(corr))) {
        if (s->shape_ids && kernel_flush(s) < 0) return -2;
        PyObject *r = PyObject_CallFunctionObjArgs(s->kernel_add, o[K_TSF], o[K_DURF], corr, shape, NULL);
        Py_XDECREF(r);
        return r ? -1 : -2;
    }
    long long stored = stored_correlation(corr);  /* -2**63 < corr < 2**63, else NO_CORRELATION (-2**63) */
    if (buf_double(&s->k_ts, ts) < 0 || buf_double(&s->k_dur, dur) < 0 || buf_int64(&s->k_corr, stored) < 0) return -2;
    long id = known;
    if (id < 0) {
        int missing;
        id = dict_long(s->shape_ids, shape, &missing);
        if (id == -2) return -2;
        if (missing) {
            Py_ssize_t n = PyList_Size(s->shapes);
            PyObject *index = n < 0 ? NULL : PyLong_FromSsize_t(n);
            int failed = !index || PyDict_SetItem(s->shape_ids, shape, index) < 0 ||
                         PyList_Append(s->shapes, shape) < 0;
            Py_XDECREF(index);
            if (failed) return -2;
            id = (long)n;
        }
    }
    if (id > INT_MAX || id < 0) {
        PyErr_SetString(PyExc_OverflowError, "signed integer is greater than maximum");
        return -2;
    }
    return buf_int(&s->k_shape, (int)id) < 0 ? -2 : id;
}

/* whether a collector's bound hook is Collector's own function (an instance's attribute of that name is not) */
static int own_hook(PyObject *bound, const char *name) {
    if (!bound) return 0;
    PyObject *func = PyObject_GetAttrString(bound, "__func__");
    PyObject *own = func ? PyObject_GetAttrString(j_collector_type, name) : NULL;
    int same = func && own && func == own;
    Py_XDECREF(func);
    Py_XDECREF(own);
    PyErr_Clear();
    return same;
}

/* the collector's tables and helpers, looked up once a call; 0, or -1 with the error raised */
static int state_open(JState *s, PyObject *collector) {
    memset(s, 0, sizeof *s);
    s->collector = collector;
    s->kernel_ok = j_collector_type && Py_TYPE(collector) == (PyTypeObject *)j_collector_type;
    s->ops.run = s->frames.run = -1, s->rt_thread = -1;
    s->contents = hold(s, get(collector, "c"));
    PyObject *ops = hold(s, get(s->contents, "ops")), *kernels = hold(s, get(s->contents, "kernels"));
    PyObject *python = hold(s, get(s->contents, "python"));
    s->ops.threads = hold(s, get(ops, "_threads"));
    s->frames.threads = hold(s, get(python, "_threads"));
    s->runtime = hold(s, get(s->contents, "runtime"));
    s->thread_ids = hold(s, get(s->runtime, "_thread_ids"));
    s->thread_keys = hold(s, get(s->runtime, "_thread_keys"));
    s->name_ids = hold(s, get(s->runtime, "_name_ids"));
    s->name_list = hold(s, get(s->runtime, "_name_list"));
    PyObject *last_end = hold(s, get(s->runtime, "last_end"));
    s->kernel_add = hold(s, get(kernels, "add"));
    s->kernel_table = kernels;
    PyObject *launch = hold(s, get(kernels, "_launch"));
    if (launch == Py_None) {  /* launches as combinations (every reader but nsys's): gathered here */
        s->shape_ids = hold(s, get(kernels, "_shape_ids"));
        s->shapes = hold(s, get(kernels, "_shapes"));
    }
    s->op_refs = hold(s, get(collector, "_op_refs"));
    s->op_ref = hold(s, get(collector, "_op_ref"));
    s->names = hold(s, get(collector, "_names"));
    s->reported = hold(s, get(collector, "_reported"));
    s->value = hold(s, get(collector, "_value"));
    s->dims = hold(s, get(collector, "_dim_tuples"));
    s->dims_fn = hold(s, get(collector, "_dims"));
    s->occupancy = hold(s, get(collector, "_profiler_occupancy"));
    s->non_finite = hold(s, get(collector, "_count_non_finite"));
    s->frame_refs = hold(s, get(collector, "_frame_refs"));
    s->frame_ref = hold(s, get(collector, "_frame_ref"));
    s->gpu_op = hold(s, get(collector, "_gpu_op"));
    s->complete = hold(s, get(collector, "_complete"));
    PyObject *timeline = hold(s, get(s->contents, "timeline"));
    s->categories = hold(s, get(timeline, "categories"));
    if (PyErr_Occurred()) return -1;  /* the first lookup that failed raised */
    /* the kernel slots skip _value, _dims and _profiler_occupancy on a hit: only where they are Collector's own */
    s->kernel_ok = s->kernel_ok && own_hook(s->value, "_value") && own_hook(s->dims_fn, "_dims") &&
                   own_hook(s->occupancy, "_profiler_occupancy");
    s->op_ok = j_collector_type && Py_TYPE(collector) == (PyTypeObject *)j_collector_type &&
               own_hook(s->op_ref, "_op_ref");
    s->ops.run_of = hold(s, PyDict_New());
    s->frames.run_of = hold(s, PyDict_New());
    if (!s->ops.run_of || !s->frames.run_of) return -1;
    PyObject *dicts[] = {s->ops.threads, s->frames.threads, s->thread_ids, s->name_ids, s->op_refs, s->frame_refs,
                         s->names, s->reported, s->dims, s->categories};
    for (size_t k = 0; k < sizeof dicts / sizeof dicts[0]; k++)
        if (!PyDict_Check(dicts[k])) {
            PyErr_SetString(PyExc_TypeError, "collect_events: a collector's table is not the twin's");
            return -1;
        }
    if ((s->shape_ids && (!PyDict_CheckExact(s->shape_ids) || !PyList_CheckExact(s->shapes))) ||
        !PyList_Check(s->thread_keys) || !PyList_Check(s->name_list)) {
        PyErr_SetString(PyExc_TypeError, "collect_events: a collector's table is not the twin's");
        return -1;
    }
    s->last_end = s->last_end_before = PyFloat_AsDouble(last_end);
    return (s->last_end == -1.0 && PyErr_Occurred()) ? -1 : 0;
}

/* the gathered appends handed to the arrays, in order; the counters counted; 0 or -1 */
static int state_flush(JState *s) {
    int failed = s->shape_ids && kernel_flush(s) < 0;
    for (Py_ssize_t k = 0; k < s->nruns; k++) {
        OpRun *run = &s->runs[k];
        Buf *bufs[3] = {&run->starts, &run->ends, &run->refs};
        int names[3] = {A_STARTS, A_ENDS, A_REFS};
        for (int j = 0; j < 3; j++) {
            PyObject *array = PyObject_GetAttr(run->thread, attr[names[j]]);
            failed |= !array || buf_flush(bufs[j], array) < 0;
            Py_XDECREF(array);
        }
        if (run->unsorted) failed |= PyObject_SetAttr(run->thread, attr[A_SORTED], Py_False) < 0;
    }
    const char *const columns[4] = {"correlations", "threads", "starts", "names"};
    Buf *const bufs[4] = {&s->rt_corr, &s->rt_threads, &s->rt_starts, &s->rt_names};
    failed |= flush_columns(s->runtime, columns, bufs) < 0;
    if (s->last_end != s->last_end_before) {  /* RuntimeIndex.add sets it where a call ends later */
        PyObject *last_end = PyFloat_FromDouble(s->last_end);
        failed |= !last_end || PyObject_SetAttr(s->runtime, attr[A_LAST_END], last_end) < 0;
        Py_XDECREF(last_end);
    }
    if (s->counters) {
        PyObject *before = PyObject_GetAttr(s->contents, attr[A_COUNTER_EVENTS]);
        PyObject *more = before ? PyLong_FromLong(s->counters) : NULL;
        PyObject *after = more ? PyNumber_Add(before, more) : NULL;
        failed |= !after || PyObject_SetAttr(s->contents, attr[A_COUNTER_EVENTS], after) < 0;
        Py_XDECREF(before); Py_XDECREF(more); Py_XDECREF(after);
    }
    return failed ? -1 : 0;
}

static void state_close(JState *s) {
    for (Py_ssize_t k = 0; k < s->nruns; k++) {
        Py_XDECREF(s->runs[k].thread);
        PyMem_Free(s->runs[k].starts.p), PyMem_Free(s->runs[k].ends.p), PyMem_Free(s->runs[k].refs.p);
    }
    PyMem_Free(s->runs);
    PyMem_Free(s->rt_corr.p), PyMem_Free(s->rt_threads.p), PyMem_Free(s->rt_starts.p), PyMem_Free(s->rt_names.p);
    PyMem_Free(s->k_ts.p), PyMem_Free(s->k_dur.p), PyMem_Free(s->k_corr.p), PyMem_Free(s->k_shape.p);
    Py_XDECREF(s->ops.pid), Py_XDECREF(s->ops.tid), Py_XDECREF(s->frames.pid), Py_XDECREF(s->frames.tid);
    Py_XDECREF(s->rt_pid), Py_XDECREF(s->rt_tid);
    seen_free(&s->kinds);
    for (int k = 0; s->op_cache && k < OP_SLOTS; k++) {
        OpSlot *slot = &s->op_cache[k];
        Py_XDECREF(slot->name), Py_XDECREF(slot->dims), Py_XDECREF(slot->types), Py_XDECREF(slot->stack);
    }
    PyMem_Free(s->op_cache);
    for (int k = 0; k < s->nheld; k++) Py_DECREF(s->held[k]);
}

/* what an open state holds, for the cyclic GC (a Slices' sink keeps one open between calls) */
static int state_traverse(JState *s, visitproc visit, void *arg) {
    for (Py_ssize_t k = 0; k < s->nruns; k++) Py_VISIT(s->runs[k].thread);
    Py_VISIT(s->ops.pid); Py_VISIT(s->ops.tid); Py_VISIT(s->frames.pid); Py_VISIT(s->frames.tid);
    Py_VISIT(s->rt_pid); Py_VISIT(s->rt_tid);
    for (int k = 0; k < SEEN; k++) Py_VISIT(s->kinds.cat[k]);
    for (int k = 0; s->op_cache && k < OP_SLOTS; k++) {
        Py_VISIT(s->op_cache[k].name); Py_VISIT(s->op_cache[k].stack);
    }
    for (int k = 0; k < s->nheld; k++) Py_VISIT(s->held[k]);
    return 0;
}

/* call fn(ev) for its effect (Python code has seen ev: s->exposed): 0 or -1 */
static int call_for_effect(JState *s, PyObject *fn, PyObject *ev) {
    s->exposed = 1;
    PyObject *r = PyObject_CallFunctionObjArgs(fn, ev, NULL);
    Py_XDECREF(r);
    return r ? 0 : -1;
}

/* a category's kind (kind_of's: 1 op .. 5 gpu op; 0 any other), or -1 with the error raised (an unhashable one: the
 * TypeError `in` raises) */
static long kind_of_cat(PyObject *cat) {
    PyObject *found = PyDict_GetItemWithError(kind_of, cat);
    return found ? PyLong_AsLong(found) : PyErr_Occurred() ? -1 : 0;
}

static int dispatch_kind(JState *s, PyObject *ev, long kind);

/* one event, dispatched by its category as the twin's loop does */
static int dispatch(JState *s, PyObject *ev) {
    PyObject *cat = ev_attr(ev, A_CAT);
    if (!cat) return -1;
    long kind;
    if (!seen_find(&s->kinds, cat, &kind) && (kind = kind_of_cat(cat)) >= 0) seen_add(&s->kinds, cat, kind);
    Py_DECREF(cat);
    return kind < 0 ? -1 : dispatch_kind(s, ev, kind);
}

/* one event of a category of that kind (kind_of_cat's) */
static int dispatch_kind(JState *s, PyObject *ev, long kind) {
    int status = -1;
    if (kind == 1) {
        status = handle_op(s, ev);
    } else if (kind == 2) {
        status = handle_runtime(s, ev);
    } else if (kind == 3) {
        status = handle_kernel(s, ev);
    } else if (kind == 4) {
        status = handle_python(s, ev);
    } else if (kind == 5) {
        status = call_for_effect(s, s->gpu_op, ev);
    } else {
        PyObject *dur = ev_attr(ev, A_DUR);
        if (dur && dur != Py_None) {
            status = call_for_effect(s, s->complete, ev);
        } else if (dur) {
            PyObject *pid = ev_attr(ev, A_PID);
            if (pid) {
                status = 0;
                if (PyUnicode_CheckExact(pid)) {
                    Py_ssize_t ends = PyUnicode_Tailmatch(pid, attr[A_COUNTERS], 0, PY_SSIZE_T_MAX, 1);
                    if (ends < 0) status = -1;
                    else s->counters += ends;
                }
                Py_DECREF(pid);
            }
        }
        Py_XDECREF(dur);
    }
    return status;
}

/* counts[k] added to categories[order[k]] in order (Counter's update, as _count_elements does it); 0 or -1 */
static int add_counts(PyObject *categories, PyObject *order, const Py_ssize_t *counts) {
    for (Py_ssize_t k = 0; k < PyList_Size(order); k++) {
        PyObject *cat = PyList_GetItem(order, k), *old = cat ? PyDict_GetItemWithError(categories, cat) : NULL;
        if (!cat || (!old && PyErr_Occurred())) return -1;
        PyObject *n = PyLong_FromSsize_t(counts[k]), *sum = n && old ? PyNumber_Add(old, n) : NULL;
        int failed = !n || (old && !sum) || PyDict_SetItem(categories, cat, old ? sum : n) < 0;
        Py_XDECREF(n);
        Py_XDECREF(sum);
        if (failed) return -1;
    }
    return 0;
}

/* a block's category counts (counts[k] of order[k]) added to the Counter and None's popped, as the twin's update and
 * pop; `failed`: an error is raised, and the counts before it land all the same (as _count_elements'); 0 or -1 */
static int apply_counts(JState *s, PyObject *order, const Py_ssize_t *counts, int failed) {
    PyObject *type = NULL, *value = NULL, *trace = NULL;
    if (failed) PyErr_Fetch(&type, &value, &trace);
    int applied = order && add_counts(s->categories, order, counts) == 0;
    if (failed) {
        if (!applied) PyErr_Clear();
        PyErr_Restore(type, value, trace);
    } else if (applied && PyDict_GetItemWithError(s->categories, Py_None) && PyDict_DelItem(s->categories, Py_None) < 0) {
        applied = 0;
    } else if (PyErr_Occurred()) {
        applied = 0;
    }
    return failed || !applied ? -1 : 0;
}

/* the twin's `categories.update(map(_CAT_OF, events)); categories.pop(None, None)`: counted in one pass before any
 * event is kept, so an unhashable category stops the block where it does in the twin, with the counts before it
 * (None's among them) in the Counter; 0 or -1 */
static int count_categories(JState *s, PyObject *events) {
    Tally t;
    int failed = tally_open(&t) < 0;
    for (Py_ssize_t i = 0; !failed && i < PyList_Size(events); i++) {
        PyObject *ev = PyList_GetItem(events, i), *cat = ev ? ev_attr(ev, A_CAT) : NULL;
        failed = !cat || tally_count(&t, cat) < 0;
        Py_XDECREF(cat);
    }
    int status = t.order ? apply_counts(s, t.order, t.counts, failed) : -1;
    tally_close(&t);
    return status;
}

static PyObject *pure_collect = NULL;

/* collect_events(collector, events): collector.pure_collect_events, compiled */
static PyObject *core_collect_events(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (!pure_collect) return damaged("warpwizard's compiled core was not bound (wizard.trace.read.collector binds it)");
    if (nargs != 2 || !PyList_Check(args[1])) return call_pure(pure_collect, args, nargs);
    JState s;
    if (state_open(&s, args[0]) < 0) {
        state_close(&s);
        return NULL;
    }
    PyObject *events = args[1];
    if (count_categories(&s, events) < 0) {
        state_close(&s);
        return NULL;
    }
    int failed = 0;
    for (Py_ssize_t i = 0; !failed && i < PyList_Size(events); i++) {
        PyObject *ev = PyList_GetItem(events, i);
        Py_XINCREF(ev);
        failed = !ev || dispatch(&s, ev) < 0;
        Py_XDECREF(ev);
    }
    PyObject *type = NULL, *value = NULL, *trace = NULL;
    if (failed) PyErr_Fetch(&type, &value, &trace);  /* what was gathered before the error still lands, as in the twin */
    int flushed = state_flush(&s) == 0;
    state_close(&s);
    if (failed) {
        if (!flushed) PyErr_Clear();
        PyErr_Restore(type, value, trace);
        return NULL;
    }
    if (!flushed) return NULL;
    Py_RETURN_NONE;
}

/* ==== Kineto JSON events scanned from their bytes (scan_events) ====
 *
 * scan_events(collector, buf, start, end): a block of whole events (buf[start:end], the bytes between two of the
 * reader's cuts, ``{...},{...}``, read in place) read here without msgspec's Event structs: the first pass checks the
 * whole block and notes where each field the collector reads lies (no Python object made, nothing changed); the
 * second makes those fields' values and hands each event to dispatch_kind() above (its category's kind looked up
 * once a block), in one Event and one EventArgs reused from event to event (a fresh one where something kept a
 * reference to it). It declines (False, nothing changed) wherever msgspec might refuse the block or read a value
 * otherwise: an escape or a control character in a string, bytes that are not UTF-8, a leading zero, -0, an integer
 * of 19 digits or more, a number past a double's range, a bare inf or nan, a key given twice, a value of another
 * type than events.Event declares, an args value nested deeper than a flat list or object, JSON nested deeper than
 * SCAN_DEPTH. The reader then decodes the block as before (decode_block):
 * a declined block's result is the twin's by construction, a taken one's is held to it by
 * tests/trace/test_scan_events.py. Every pass is linear in the block's bytes, hostile blocks included (the
 * categories past a block's first few are looked up by CPython's seeded str hash, not a hash of ours). */

enum { V_ABSENT, V_NULL, V_TRUE, V_FALSE, V_INT, V_FLOAT, V_STR, V_LIST, V_OBJECT, V_RAW };
#define SCAN_FIELDS (A_ORIGINAL_STREAM + 1)  /* Event's A_CAT..A_ARGS, then EventArgs' A_CORRELATION.. */
#define SCAN_DEPTH 64                        /* a skipped value nested deeper: declined (Kineto's nest 3) */
#define SCAN_NUMBER 40                       /* a number longer: declined */
#define STR_SLOTS 2048                       /* the second pass's strings, by their bytes (a block repeats names) */
#define STR_CACHED 1024                      /* longer strings are made each time */

typedef struct {
    unsigned char kind, wide;  /* wide: a string with bytes past ASCII (checked to be UTF-8) */
    uint32_t start, len;       /* the value's bytes; a string's between its quotes (a block is under 4 GiB) */
    union {
        double number;   /* V_FLOAT */
        long long whole; /* V_INT */
    } v;
} Span;

/* one event's fields: those present (a bit each, by A_ index), and where the first of their spans is in the block's
 * spans (the rest follow it, in the fields' order: an event holds a few of the 25) */
typedef struct {
    uint32_t present, first;
} Scanned;

/* a block's events and their spans */
typedef struct {
    Scanned *events;
    Span *spans;
    Py_ssize_t count, cap, nspans, cap_spans;
} Block;

#define HAS(e, k) (((e)->present >> (k)) & 1u)

typedef struct {
    const unsigned char *b;
    Py_ssize_t i, n;
    int nogil;      /* the first pass without the GIL (ScanAhead's thread): nothing of Python's is called */
    int needs_gil;  /* set where such a pass declined for a number only PyOS_string_to_double reads */
} Scan;

static char *scan_keys[SCAN_FIELDS];  /* each field's JSON name (json_bind: events.Event's and EventArgs') */
static Py_ssize_t scan_key_len[SCAN_FIELDS];
static uint64_t scan_key_head[SCAN_FIELDS];  /* its first eight bytes (zeros past its end), compared first */
static uint64_t scan_key_tail[SCAN_FIELDS];  /* a name of 9 to 16 bytes: its last eight, compared second */
#define KEY_LENGTHS 64
static uint32_t keys_of_length[KEY_LENGTHS], long_keys;  /* the fields (a bit each) whose name has that length */

/* the index of the lowest bit set (bits is not 0) */
static inline int lowest_bit(uint32_t bits) {
#if defined(__GNUC__) || defined(__clang__)
    return __builtin_ctz(bits);
#else
    int k = 0;
    for (; !(bits & 1u); bits >>= 1) k++;
    return k;
#endif
}

/* the first eight bytes of p[0..len), zeros past len; `room`: the bytes readable from p (one load where 8 are: a
 * copy of fewer into a word stalled the loop on the store) */
static inline uint64_t head_word(const unsigned char *p, Py_ssize_t len, Py_ssize_t room) {
    uint64_t w = 0;
#if PY_LITTLE_ENDIAN
    if (room >= 8) {
        memcpy(&w, p, 8);
        return len >= 8 ? w : w & ((UINT64_C(1) << (8 * len)) - 1);  /* the first bytes are the low ones */
    }
#else
    (void)room;
#endif
    for (Py_ssize_t k = 0; k < len && k < 8; k++) w |= (uint64_t)p[k] << (8 * k);
    return w;
}

/* The loops below need no bounds test: a bytes object's contents end with a NUL (buf[len] is 0), which none steps
 * over (scan_events takes bytes only). They may read on past the block's end (c->n) within the buffer: a string that
 * runs on past it is no whole event, and scan_block declines the block. */
static unsigned char string_stop[256];  /* 1: a byte a plain string's run stops at ('"', '\\', below 0x20, past 0x7f) */
static unsigned char json_space[256];   /* 1: JSON's whitespace (space, tab, newline, carriage return) */

static void scan_tables(void) {
    for (int ch = 0; ch < 256; ch++) {
        string_stop[ch] = ch == '"' || ch == '\\' || ch < 0x20 || ch >= 0x80;
        json_space[ch] = ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r';
    }
}

static inline void scan_ws(Scan *c) {
    const unsigned char *b = c->b;
    Py_ssize_t i = c->i;
    while (json_space[b[i]]) i++;
    c->i = i;
}

/* whether c->b[c->i] is `ch`, stepping over it where it is */
static inline int scan_take(Scan *c, unsigned char ch) {
    if (c->b[c->i] == ch) {
        c->i++;
        return 1;
    }
    return 0;
}

/* whether b[0..n) is UTF-8 as Python's strict decoder takes it: no overlong form, no surrogate, at most U+10FFFF */
static int utf8_valid(const unsigned char *b, Py_ssize_t n) {
    Py_ssize_t i = 0;
    while (i < n) {
        unsigned char c = b[i];
        if (c < 0x80) {
            i++;
            continue;
        }
        int more;
        unsigned char lo = 0x80, hi = 0xBF;
        if (c >= 0xC2 && c <= 0xDF) more = 1;
        else if (c == 0xE0) more = 2, lo = 0xA0;
        else if ((c >= 0xE1 && c <= 0xEC) || c == 0xEE || c == 0xEF) more = 2;
        else if (c == 0xED) more = 2, hi = 0x9F;
        else if (c == 0xF0) more = 3, lo = 0x90;
        else if (c >= 0xF1 && c <= 0xF3) more = 3;
        else if (c == 0xF4) more = 3, hi = 0x8F;
        else return 0;
        if (n - i <= more || b[i + 1] < lo || b[i + 1] > hi) return 0;
        for (int k = 2; k <= more; k++)
            if (b[i + k] < 0x80 || b[i + k] > 0xBF) return 0;
        i += more + 1;
    }
    return 1;
}

/* a string (c->b[c->i] is its quote) with no escape or control character: its contents' span; 0 to decline */
static inline int scan_string(Scan *c, Span *s) {
    const unsigned char *b = c->b;
    Py_ssize_t i = c->i + 1, start = i;
    int wide = 0;
    for (;;) {
        while (!string_stop[b[i]]) i++;  /* at the latest at the buffer's closing NUL */
        unsigned char ch = b[i];
        if (ch == '"') break;
        if (ch < 0x80) return 0;  /* a backslash, a control character, or the end of the block */
        wide = 1;
        i++;
    }
    if (wide && !utf8_valid(b + start, i - start)) return 0;
    s->kind = V_STR, s->wide = (unsigned char)wide, s->start = (uint32_t)start, s->len = (uint32_t)(i - start);
    c->i = i + 1;
    return 1;
}

static inline int is_digit(const Scan *c, Py_ssize_t i) { return c->b[i] >= '0' && c->b[i] <= '9'; }

/* A JSON number's text read as the nearest double without the GIL, where the C library has a strtod taking a locale
 * (glibc's and macOS's: correctly rounded, as PyOS_string_to_double is, so the same double), in the "C" locale made
 * once when the module loads: 1, else 0 (the block is then scanned again with the GIL). The scanner has checked the
 * text is a JSON number, and checks that the read ends where it does. */
#if (defined(__GLIBC__) || defined(__APPLE__)) && !defined(_WIN32)
#include <locale.h>
#if defined(__APPLE__)
#include <xlocale.h>
#endif
static locale_t s_c_numbers = (locale_t)0;
static void nogil_strtod_init(void) {
    if (!s_c_numbers) s_c_numbers = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);
}
static int nogil_strtod(const char *text, char **end, double *d) {
    if (!s_c_numbers) return 0;
    *d = strtod_l(text, end, s_c_numbers);
    return 1;
}
static int nogil_strtod_ready(void) { return s_c_numbers != (locale_t)0; }
#else
static int nogil_strtod_ready(void) { return 0; }  /* Kineto's 17-digit metrics in most blocks: no thread then */
static void nogil_strtod_init(void) {}
static int nogil_strtod(const char *text, char **end, double *d) {
    (void)text, (void)end, (void)d;
    return 0;
}
#endif

/* 10**k for k <= 22: each a double exactly */
static const double scan_tens[23] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
                                     1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

/* whether m / 10**k (k the fraction's digits, at most `digits`) is correctly rounded in one division: m, the number's
 * digits read as an integer, is a double exactly (at most 2**53; at most 19 digits, so it did not wrap), and so is
 * 10**k (k <= 22). Clinger's fast path, as fast_float takes it: a timestamp in µs with three decimals (16 digits,
 * PyTorch 2's) fits it, where the 15-digit bound sent each to PyOS_string_to_double. */
static inline int clinger_exact(unsigned long long m, Py_ssize_t digits) {
    return digits <= 19 && m <= (UINT64_C(1) << 53);
}

/* a JSON number: V_INT (at most 18 digits, no fraction or exponent) or V_FLOAT (parsed as Python parses it, finite
 * and zero or normal); 0 to decline */
static inline int scan_number(Scan *c, Span *s) {
    const unsigned char *b = c->b;
    Py_ssize_t i = c->i, start = i;
    int negative = b[i] == '-';
    i += negative;
    Py_ssize_t digits = i;
    unsigned long long m = 0;  /* the digits' value, where there are at most 18 (read in the one pass) */
    if (b[i] == '0') {
        i++;
        if (is_digit(c, i)) return 0;  /* a leading zero: not JSON */
    } else if (is_digit(c, i)) {
        for (; is_digit(c, i); i++) m = m * 10 + (unsigned)(b[i] - '0');
    } else {
        return 0;
    }
    Py_ssize_t whole_digits = i - digits, fraction_digits = 0;
    int exponent = 0;
    if (b[i] == '.') {
        Py_ssize_t first = ++i;
        if (!is_digit(c, i)) return 0;
        for (; is_digit(c, i); i++) m = m * 10 + (unsigned)(b[i] - '0');
        fraction_digits = i - first;
    }
    if (b[i] == 'e' || b[i] == 'E') {
        i++;
        if (b[i] == '+' || b[i] == '-') i++;
        if (!is_digit(c, i)) return 0;
        while (is_digit(c, i)) i++;
        exponent = 1;
    }
    if (i >= c->n || i - start > SCAN_NUMBER) return 0;  /* an event's number is followed by more of it */
    s->start = (uint32_t)start, s->len = (uint32_t)(i - start);
    if (!fraction_digits && !exponent) {
        if (whole_digits > 18 || (negative && b[digits] == '0')) return 0;  /* 19 digits or more; -0 */
        s->kind = V_INT, s->v.whole = negative ? -(long long)m : (long long)m;
        c->i = i;
        return 1;
    }
    if (!exponent && clinger_exact(m, whole_digits + fraction_digits)) {
        double d = (double)m / scan_tens[fraction_digits];
        s->kind = V_FLOAT, s->v.number = negative ? -d : d;
        c->i = i;
        return 1;
    }
    char *end = NULL;
    double d;
    if (c->nogil) {  /* Python's strtod keeps a free list of its own, the GIL's: the C library's, or the GIL's later */
        if (!nogil_strtod((const char *)b + start, &end, &d)) {
            c->needs_gil = 1;
            return 0;
        }
    } else {
        d = PyOS_string_to_double((const char *)b + start, &end, NULL);
        if (d == -1.0 && PyErr_Occurred()) {
            PyErr_Clear();
            return 0;
        }
    }
    if (end != (const char *)b + i || !isfinite(d) || (d != 0.0 && fabs(d) < DBL_MIN)) return 0;
    s->kind = V_FLOAT, s->v.number = d;
    c->i = i;
    return 1;
}

static int scan_literal(Scan *c, Span *s) {
    static const struct {
        const char *text;
        Py_ssize_t len;
        unsigned char kind;
    } words[3] = {{"null", 4, V_NULL}, {"true", 4, V_TRUE}, {"false", 5, V_FALSE}};
    for (int k = 0; k < 3; k++)
        if (c->n - c->i >= words[k].len && memcmp(c->b + c->i, words[k].text, (size_t)words[k].len) == 0) {
            s->kind = words[k].kind, s->start = (uint32_t)c->i, s->len = (uint32_t)words[k].len;
            c->i += words[k].len;
            return 1;
        }
    return 0;
}

/* whether p[0..8) are eight ASCII digits, and *out their value: the digits' multiply-add chain (a multiply's latency
 * a digit, 16 of them in a timestamp in µs) as three independent steps over one word (simdjson's
 * parse_eight_digits_unrolled). Little-endian machines; elsewhere 0, and the digits are read one by one. */
static inline int eight_digits(const unsigned char *p, uint64_t *out) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    uint64_t w;
    memcpy(&w, p, 8);
    /* each byte 0x30-0x39: its high nibble 3, and still 3 with 6 added (no byte carries: each is at most 0x3F) */
    if ((w & 0xF0F0F0F0F0F0F0F0u) != 0x3030303030303030u ||
        ((w + 0x0606060606060606u) & 0xF0F0F0F0F0F0F0F0u) != 0x3030303030303030u)
        return 0;
    w -= 0x3030303030303030u;
    w = w * 10 + (w >> 8);  /* bytes 0, 2, 4, 6: two digits each */
    *out = ((w & 0x000000FF000000FFu) * (100 + (UINT64_C(1000000) << 32)) +
            ((w >> 16) & 0x000000FF000000FFu) * (1 + (UINT64_C(10000) << 32))) >> 32;
    return 1;
#else
    (void)p, (void)out;
    return 0;
#endif
}

/* A plain integer (1 to 18 digits, the first not 0, followed by neither "e" nor "E"), or such digits, a point and
 * digits where clinger_exact holds, read in line: most of an event's numbers (a pid, a timestamp, an id, a duration),
 * each a call of scan_number before (115 instructions a number); anything else is left to scan_number, from its
 * start (0: not one). */
static inline __attribute__((always_inline)) int scan_plain_number(Scan *c, Span *s) {
    const unsigned char *b = c->b;
    Py_ssize_t i = c->i, start = i;
    unsigned long long m = 0;
    uint64_t eight;
    if (b[i] < '1' || b[i] > '9') return 0;
    if (i + 16 <= c->n && eight_digits(b + i, &eight)) {  /* a timestamp's 16 digits: two steps, not a chain of 16 */
        m = eight, i += 8;
        if (eight_digits(b + i, &eight)) m = m * 100000000u + eight, i += 8;
    }
    for (; b[i] >= '0' && b[i] <= '9'; i++) m = m * 10 + (unsigned)(b[i] - '0');
    Py_ssize_t whole = i - start;
    if (b[i] == '.') {  /* a fraction: read on, not again from the start by scan_number */
        Py_ssize_t first = ++i;
        for (; b[i] >= '0' && b[i] <= '9'; i++) m = m * 10 + (unsigned)(b[i] - '0');
        Py_ssize_t fraction = i - first;
        if (!fraction || !clinger_exact(m, whole + fraction) || b[i] == 'e' || b[i] == 'E' || i >= c->n) return 0;
        s->kind = V_FLOAT, s->start = (uint32_t)start, s->len = (uint32_t)(i - start);
        s->v.number = (double)m / scan_tens[fraction];
        c->i = i;
        return 1;
    }
    if (whole > 18 || b[i] == 'e' || b[i] == 'E' || i >= c->n) return 0;
    s->kind = V_INT, s->start = (uint32_t)start, s->len = (uint32_t)whole, s->v.whole = (long long)m;
    c->i = i;
    return 1;
}

static inline int scan_scalar(Scan *c, Span *s) {
    unsigned char ch = c->b[c->i];
    if (ch == '"') return scan_string(c, s);
    if (ch == '-' || (ch >= '0' && ch <= '9')) return scan_plain_number(c, s) || scan_number(c, s);
    return scan_literal(c, s);
}

/* any JSON value, checked; arrays and objects nested at most `limit` deep (counted from `depth`); 0 to decline */
static int scan_value(Scan *c, int depth, int limit) {
    if (c->i >= c->n) return 0;
    unsigned char open = c->b[c->i];
    Span s;
    if (open != '{' && open != '[') return scan_scalar(c, &s);
    if (depth >= limit) return 0;
    unsigned char close = open == '{' ? '}' : ']';
    c->i++;
    scan_ws(c);
    if (scan_take(c, close)) return 1;
    for (;;) {
        if (open == '{') {
            if (c->i >= c->n || c->b[c->i] != '"' || !scan_string(c, &s)) return 0;
            scan_ws(c);
            if (!scan_take(c, ':')) return 0;
            scan_ws(c);
        }
        if (!scan_value(c, depth + 1, limit)) return 0;
        scan_ws(c);
        if (scan_take(c, ',')) {
            scan_ws(c);
            continue;
        }
        return scan_take(c, close);
    }
}

/* whether p[8..len) is field k's name there (len > 8, its first eight bytes the same): one word where the name is
 * at most 16 bytes (its last eight, overlapping the first), the most of an event's names past eight ("correlation",
 * "External id"); a memcmp (a call of libc's, 2.6% of a read's CPU when every such name took one) past that */
static inline int key_tail_same(int k, const unsigned char *p, Py_ssize_t len) {
    if (len > 16) return memcmp(scan_keys[k] + 8, p + 8, (size_t)len - 8) == 0;
    uint64_t w;
    memcpy(&w, p + len - 8, 8);
    return w == scan_key_tail[k];
}

/* which of fields first..last a key names, or -1 */
static int scan_key(const Scan *c, const Span *key, int first, int last) {
    const unsigned char *p = c->b + key->start;
    Py_ssize_t len = key->len;
    uint32_t candidates = (len < KEY_LENGTHS ? keys_of_length[len] : long_keys) & ((UINT32_C(2) << last) - (UINT32_C(1) << first));
    if (!candidates) return -1;  /* most keys no field has: one lookup */
    uint64_t head = head_word(p, len, c->n - key->start);
    for (; candidates; candidates &= candidates - 1) {
        int k = lowest_bit(candidates);
        if (scan_key_len[k] == len && scan_key_head[k] == head && (len <= 8 || key_tail_same(k, p, len)))
            return k;
    }
    return -1;
}

/* a field's value, of the type events.Event and EventArgs declare for it: 0 to decline */
static int scan_field(Scan *c, int k, Span *s) {
    Py_ssize_t start = c->i;
    if (k == A_INPUT_DIMS || k == A_INPUT_DIMS_OLD || k == A_INPUT_TYPE) {  /* msgspec.Raw: the value's bytes */
        if (!scan_value(c, 0, SCAN_DEPTH)) return 0;
        s->kind = V_RAW, s->start = (uint32_t)start, s->len = (uint32_t)(c->i - start);
        return 1;
    }
    if (k > A_ARGS) {  /* Any: a scalar, or a flat list or object of them */
        if (c->i < c->n && (c->b[c->i] == '[' || c->b[c->i] == '{')) {
            unsigned char open = c->b[c->i];
            if (!scan_value(c, 0, 1)) return 0;
            s->kind = open == '[' ? V_LIST : V_OBJECT, s->start = (uint32_t)start, s->len = (uint32_t)(c->i - start);
            return 1;
        }
        return scan_scalar(c, s);
    }
    if (!scan_scalar(c, s)) return 0;
    unsigned char kind = s->kind;
    if (kind == V_NULL) return 1;
    switch (k) {
    case A_CAT: return kind == V_STR;                                      /* str | None */
    case A_NAME: return kind == V_STR || kind == V_INT || kind == V_FLOAT;  /* str | int | float | None */
    case A_PID: case A_TID: return kind == V_STR || kind == V_INT;          /* int | str | None */
    case A_TS: case A_DUR: return kind == V_STR || kind == V_INT || kind == V_FLOAT;  /* float | str | None */
    default: return 0;
    }
}

/* an object's members into f, each noted in *present (fields first..last; any other key's value checked and
 * skipped): 0 to decline */
static int scan_members(Scan *c, uint32_t *present, Span *f, int first, int last) {
    if (!scan_take(c, '{')) return 0;
    scan_ws(c);
    if (scan_take(c, '}')) return 1;
    for (;;) {
        Span key;
        if (c->i >= c->n || c->b[c->i] != '"' || !scan_string(c, &key)) return 0;
        scan_ws(c);
        if (!scan_take(c, ':')) return 0;
        scan_ws(c);
        int k = scan_key(c, &key, first, last);
        if (k < 0) {
            if (!scan_value(c, 0, SCAN_DEPTH)) return 0;
        } else {
            if ((*present >> k) & 1u) return 0;  /* a key given twice */
            if (k == A_ARGS && c->i < c->n && c->b[c->i] == '{') {
                if (!scan_members(c, present, f, A_CORRELATION, A_ORIGINAL_STREAM)) return 0;
                f[k] = (Span){.kind = V_OBJECT};  /* its members are the fields after A_ARGS */
            } else if (k == A_ARGS) {
                if (!scan_scalar(c, &f[k]) || f[k].kind != V_NULL) return 0;
            } else if (!scan_field(c, k, &f[k])) {
                return 0;
            }
            *present |= 1u << k;
        }
        scan_ws(c);
        if (scan_take(c, ',')) {
            scan_ws(c);
            continue;
        }
        return scan_take(c, '}');
    }
}

/* an event's spans appended to the block's, in the fields' order; 0 to decline (no memory) */
static int block_add(Block *bk, uint32_t present, const Span *f) {
    if (bk->count == bk->cap) {
        Py_ssize_t cap = bk->cap ? bk->cap * 2 : 256;
        Scanned *grown = realloc(bk->events, (size_t)cap * sizeof *grown);
        if (!grown) return 0;
        bk->events = grown, bk->cap = cap;
    }
    Py_ssize_t need = bk->nspans + SCAN_FIELDS;
    if (need > bk->cap_spans) {
        Py_ssize_t cap = bk->cap_spans ? bk->cap_spans * 2 : 2048;
        while (cap < need) cap *= 2;
        Span *grown = realloc(bk->spans, (size_t)cap * sizeof *grown);
        if (!grown) return 0;
        bk->spans = grown, bk->cap_spans = cap;
    }
    bk->events[bk->count++] = (Scanned){present, (uint32_t)bk->nspans};
    for (uint32_t bits = present; bits; bits &= bits - 1) bk->spans[bk->nspans++] = f[lowest_bit(bits)];
    return 1;
}

/* The last blocks' arrays, kept for the next: each block grew its own from 256 events by doubling, copying them
 * (3% of a JSON read's instructions) into pages first touched each time. Taken by a call while it runs (a call
 * made under it, by a handler, makes its own); up to SPARES of them (a ScanAhead's two blocks and the one being
 * collected), each only up to SPARE_BYTES, and freed by scan_release when a read's blocks are done (they would
 * count in the passes' peaks). Only with the GIL held: a ScanAhead's thread is handed its block. */
#define SPARE_BYTES (32 << 20)
#define SPARES 3
static Block s_spare[SPARES];
static int s_spares = 0;

static Block block_take(void) {
    if (!s_spares) return (Block){NULL, NULL, 0, 0, 0, 0};
    Block bk = s_spare[--s_spares];
    bk.count = bk.nspans = 0;
    return bk;
}

/* the bytes a block's arrays hold */
static size_t block_bytes(const Block *bk) {
    return (size_t)bk->cap * sizeof *bk->events + (size_t)bk->cap_spans * sizeof *bk->spans;
}

/* scan_release(): the arrays kept from the last blocks freed (the bytes they held: the allocator is the C library's,
 * which tracemalloc does not see), and the kernels' shapes kept for the next block */
static PyObject *core_scan_release(PyObject *self, PyObject *unused) {
    (void)self, (void)unused;
    size_t freed = 0;
    while (s_spares) {
        Block spare = block_take();
        freed += block_bytes(&spare);
        free(spare.events);
        free(spare.spans);
    }
    kernel_slots_clear();
    return PyLong_FromSize_t(freed);
}

static void block_free(Block *bk) {
    size_t held = block_bytes(bk);
    if (s_spares < SPARES && (bk->events || bk->spans) && held <= SPARE_BYTES) {
        s_spare[s_spares++] = *bk;
    } else {
        free(bk->events);
        free(bk->spans);
    }
    *bk = (Block){NULL, NULL, 0, 0, 0, 0};
}

/* the first pass: every event's fields into the block, or 0 to decline */
static int scan_block(Scan *c, Block *bk, int *has_last, double *last) {
    scan_ws(c);
    for (;;) {
        Span f[SCAN_FIELDS];  /* only the present ones are read */
        uint32_t present = 0;
        if (c->i >= c->n || c->b[c->i] != '{' || !scan_members(c, &present, f, A_CAT, A_ARGS)) return 0;
        if (bk->nspans + SCAN_FIELDS >= (Py_ssize_t)UINT32_MAX || !block_add(bk, present, f)) return 0;
        if (((present >> A_TS) & 1u) && (f[A_TS].kind == V_INT || f[A_TS].kind == V_FLOAT)) {
            *has_last = 1;
            *last = f[A_TS].kind == V_INT ? (double)f[A_TS].v.whole : f[A_TS].v.number;
        }
        if (c->i >= c->n) return c->i == c->n;  /* past the block's end (a string ran on): declined */
        scan_ws(c);
        if (c->i >= c->n) return c->i == c->n;
        if (!scan_take(c, ',')) return 0;
        scan_ws(c);
    }
}

static PyObject *span_str(StrSlot *cache, const unsigned char *p, Py_ssize_t len, int wide) {
    if (wide || len > STR_CACHED) return PyUnicode_DecodeUTF8((const char *)p, len, NULL);
    uint64_t h = bytes_hash(p, len);
    StrSlot *slot = &cache[h & (STR_SLOTS - 1)];
    if (slot->text && slot->hash == h) {
        Py_ssize_t size = 0;
        const char *held = PyUnicode_AsUTF8AndSize(slot->text, &size);
        if (!held) return NULL;
        if (size == len && memcmp(held, p, (size_t)len) == 0) return new_ref(slot->text);
    }
    PyObject *text = PyUnicode_DecodeUTF8((const char *)p, len, NULL);
    if (!text) return NULL;
    J_SETREF(slot->text, new_ref(text));
    slot->hash = h;
    return text;
}

static PyObject *span_value(const Scan *c, StrSlot *cache, const Span *s, int as_float);

/* a flat list or object (checked by the first pass): its scalars made again from their bytes */
static PyObject *span_container(const Scan *c, StrSlot *cache, const Span *s) {
    Scan in = {c->b, (Py_ssize_t)s->start + 1, (Py_ssize_t)s->start + s->len, 0, 0};
    int object = s->kind == V_OBJECT;
    PyObject *out = object ? PyDict_New() : PyList_New(0);
    if (!out) return NULL;
    scan_ws(&in);
    while (out && in.i < in.n && in.b[in.i] != (object ? '}' : ']')) {
        Span key, item;
        PyObject *k = NULL;
        if (object) {
            if (!scan_string(&in, &key) || !(k = span_value(c, cache, &key, 0))) goto failed;
            scan_ws(&in), scan_take(&in, ':'), scan_ws(&in);
        }
        PyObject *v = scan_scalar(&in, &item) ? span_value(c, cache, &item, 0) : NULL;
        int bad = !v || (object ? PyDict_SetItem(out, k, v) : PyList_Append(out, v)) < 0;
        Py_XDECREF(k);
        Py_XDECREF(v);
        if (bad) goto failed;
        scan_ws(&in), scan_take(&in, ','), scan_ws(&in);
    }
    return out;
failed:
    if (!PyErr_Occurred()) PyErr_SetString(PyExc_SystemError, "scan_events: a checked value did not scan again");
    Py_DECREF(out);
    return NULL;
}

/* a field's value as msgspec decodes it into Event (as_float: a float field, whose integers become floats) */
static PyObject *span_value(const Scan *c, StrSlot *cache, const Span *s, int as_float) {
    switch (s->kind) {
    case V_NULL: return new_ref(Py_None);
    case V_TRUE: return new_ref(Py_True);
    case V_FALSE: return new_ref(Py_False);
    case V_INT: return as_float ? PyFloat_FromDouble((double)s->v.whole) : PyLong_FromLongLong(s->v.whole);
    case V_FLOAT: return PyFloat_FromDouble(s->v.number);
    case V_STR: return span_str(cache, c->b + s->start, s->len, s->wide);
    case V_LIST: case V_OBJECT: return span_container(c, cache, s);
    case V_RAW: return PyBytes_FromStringAndSize((const char *)c->b + s->start, s->len);
    default: return NULL;
    }
}


/* a fresh Event or EventArgs, and its fields' defaults (new references) */
static PyObject *scan_blank(PyObject *type, int first, int last, PyObject **defaults) {
    PyObject *made = PyObject_CallObject(type, NULL);
    if (made && Py_TYPE(made) != (PyTypeObject *)type) Py_CLEAR(made);
    for (int k = first; made && k <= last; k++) {
        PyObject *value = *slot_of(made, k);
        if (!value) Py_CLEAR(made);
        else if (defaults) J_SETREF(defaults[k], new_ref(value));
    }
    if (!made && !PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "scan_events: Event is not the struct bound");
    return made;
}

/* a fresh EventArgs whose msgspec.Raw fields hold b"" (the collector reads them as bytes: len and bytes() of an
 * empty Raw went through its __bytes__, three calls an op), and the defaults (new references) where asked */
static PyObject *scan_args_blank(PyObject **defaults) {
    PyObject *made = scan_blank(j_args_type, A_CORRELATION, A_ORIGINAL_STREAM, defaults);
    const int raws[3] = {A_INPUT_DIMS, A_INPUT_DIMS_OLD, A_INPUT_TYPE};
    for (int k = 0; made && k < 3; k++) {
        J_SETREF(*slot_of(made, raws[k]), new_ref(j_empty));
        if (defaults) J_SETREF(defaults[raws[k]], new_ref(j_empty));
    }
    return made;
}

/* whether json_bind found every field's slot in Event and EventArgs, and named their keys */
static int scan_ready(void) {
    for (int k = A_CAT; k <= A_ORIGINAL_STREAM; k++)
        if (!field_offset[k] || !scan_keys[k] ||
            field_owner[k] != (PyTypeObject *)(k <= A_ARGS ? j_event_type : j_args_type))
            return 0;
    return 1;
}

/* contents.events += count, and contents.last_ts, as Collector.add sets them before it collects; 0 or -1 */
static int scan_count(PyObject *collector, Py_ssize_t count, int has_last, double last) {
    PyObject *contents = PyObject_GetAttrString(collector, "c");
    PyObject *before = contents ? PyObject_GetAttrString(contents, "events") : NULL;
    PyObject *more = before ? PyLong_FromSsize_t(count) : NULL, *after = more ? PyNumber_Add(before, more) : NULL;
    int failed = !after || PyObject_SetAttrString(contents, "events", after) < 0;
    if (!failed && has_last) {
        PyObject *ts = PyFloat_FromDouble(last);
        failed = !ts || PyObject_SetAttrString(contents, "last_ts", ts) < 0;
        Py_XDECREF(ts);
    }
    Py_XDECREF(contents); Py_XDECREF(before); Py_XDECREF(more); Py_XDECREF(after);
    return failed ? -1 : 0;
}

/* The block's distinct categories while they are counted: each one's span (NULL: None, absent or null), how many
 * events had it and its kind. The first CATS_COMPARED are found again by their bytes (a real block holds a few);
 * past them, by their str in a dict (CPython's seeded hash: a table of ours on a hash of the bytes was driven into
 * quadratic time by crafted names, and comparing with every one of them by a block of distinct ones, 80,000 in 20 s) */
#define CATS_COMPARED 16

typedef struct {
    const Span **spelled;
    Py_ssize_t *counts;
    unsigned char *kinds;
    PyObject *index_of;  /* {category: its index} for those past the first CATS_COMPARED */
    Py_ssize_t distinct, cap;
} Cats;

static void cats_free(Cats *k) {
    PyMem_Free(k->spelled), PyMem_Free(k->counts), PyMem_Free(k->kinds);
    Py_XDECREF(k->index_of);
}

/* room for one more distinct category; 0, or -1 with MemoryError */
static int cats_room(Cats *k) {
    if (k->distinct < k->cap) return 0;
    Py_ssize_t cap = k->cap ? k->cap * 2 : 16;
    const Span **spelled = PyMem_Realloc(k->spelled, (size_t)cap * sizeof *spelled);
    if (spelled) k->spelled = spelled;
    Py_ssize_t *counts = spelled ? PyMem_Realloc(k->counts, (size_t)cap * sizeof *counts) : NULL;
    if (counts) k->counts = counts;
    unsigned char *kinds = counts ? PyMem_Realloc(k->kinds, (size_t)cap) : NULL;
    if (kinds) k->kinds = kinds;
    if (!kinds) {
        PyErr_NoMemory();
        return -1;
    }
    k->cap = cap;
    return 0;
}

static int same_span(const Scan *c, const Span *a, const Span *b) {
    return a == b || (a && b && a->len == b->len && memcmp(c->b + a->start, c->b + b->start, a->len) == 0);
}

/* the index of an event's category among the distinct ones; -1 where new (*made: its object, for cats_add), or -2
 * with the error raised */
static Py_ssize_t cats_find(Cats *k, const Scan *c, StrSlot *cache, const Span *cat, Py_ssize_t last,
                            PyObject **made) {
    if (last >= 0 && same_span(c, k->spelled[last], cat)) return last;  /* the same as the event before: most */
    for (Py_ssize_t at = 0; at < k->distinct && at < CATS_COMPARED; at++)
        if (same_span(c, k->spelled[at], cat)) return at;
    if (!(*made = cat ? span_value(c, cache, cat, 0) : new_ref(Py_None))) return -2;
    if (k->distinct <= CATS_COMPARED) return -1;
    PyObject *found = PyDict_GetItemWithError(k->index_of, *made);
    if (!found) return PyErr_Occurred() ? -2 : -1;
    Py_ssize_t at = PyLong_AsSsize_t(found);
    return at < 0 ? -2 : at;  /* an index of ours: never negative but with an error raised */
}

/* a new distinct category (made: its object): appended to order, counted from 0; its index, or -1 with an error */
static Py_ssize_t cats_add(Cats *k, PyObject *order, const Span *cat, PyObject *made) {
    long kind = kind_of_cat(made);
    if (kind < 0 || cats_room(k) < 0 || PyList_Append(order, made) < 0) return -1;
    Py_ssize_t at = k->distinct++;
    k->spelled[at] = cat, k->counts[at] = 0, k->kinds[at] = (unsigned char)kind;
    if (at >= CATS_COMPARED) {
        PyObject *index = (k->index_of || (k->index_of = PyDict_New())) ? PyLong_FromSsize_t(at) : NULL;
        int failed = !index || PyDict_SetItem(k->index_of, made, index) < 0;
        Py_XDECREF(index);
        if (failed) return -1;
    }
    return at;
}

/* The block's categories, counted before any event is dispatched (as count_categories does for decoded events):
 * the distinct ones each made once; cats[i]: event i's (a borrowed reference into *held, the distinct ones in
 * order, which the caller releases after the dispatch). 0, or -1 with the error raised (nothing counted then). */
static int scan_categories(JState *s, const Scan *c, StrSlot *cache, const Block *bk, PyObject **cats,
                           unsigned char *kinds, PyObject **held) {
    PyObject *order = *held = PyList_New(0);
    Cats k = {0};
    Py_ssize_t last = -1;
    int failed = !order;
    for (Py_ssize_t i = 0; !failed && i < bk->count; i++) {
        const Scanned *e = bk->events + i;
        const Span *cat = HAS(e, A_CAT) && bk->spans[e->first].kind == V_STR ? &bk->spans[e->first] : NULL;
        PyObject *made = NULL;
        Py_ssize_t at = cats_find(&k, c, cache, cat, last, &made);
        if (at == -1) at = cats_add(&k, order, cat, made);
        Py_XDECREF(made);
        if ((failed = at < 0)) break;
        k.counts[at]++;
        cats[i] = PyList_GetItem(order, at);
        kinds[i] = k.kinds[at];
        last = at;
    }
    int status = failed ? -1 : apply_counts(s, order, k.counts, 0);
    cats_free(&k);
    return status;
}

/* each field's last integer and the object made of it (an int, or a float for ts and dur): a thread's pid and tid,
 * a kernel's device and stream, come again event after event, and each was an object made and freed (3% of a
 * JSON read) */
typedef struct {
    long long whole;
    PyObject *made;
} LastInt;

static PyObject *last_int(LastInt *last, long long whole, int as_float) {
    if (last->made && last->whole == whole) return new_ref(last->made);
    PyObject *made = as_float ? PyFloat_FromDouble((double)whole) : PyLong_FromLongLong(whole);
    if (made) {
        J_SETREF(last->made, new_ref(made));
        last->whole = whole;
    }
    return made;
}

/* one scanned event's fields into ev (and args, where it has them; its category made for the count), then
 * dispatched; 0 or -1 */
static int scan_dispatch(JState *s, const Scan *c, StrSlot *cache, LastInt *ints, const Block *bk, const Scanned *e,
                         PyObject *cat, long kind, PyObject *ev, PyObject *args) {
    const Span *f = bk->spans + e->first;  /* the event's spans, in the fields' order */
    J_SETREF(*slot_of(ev, A_CAT), new_ref(cat));
    for (uint32_t bits = e->present; bits; bits &= bits - 1, f++) {
        int k = lowest_bit(bits);
        if (k == A_CAT) continue;  /* made for the count */
        if (k == A_ARGS) {
            if (f->kind == V_OBJECT) J_SETREF(*slot_of(ev, A_ARGS), new_ref(args));
            continue;
        }
        PyObject *value = f->kind == V_INT ? last_int(&ints[k], f->v.whole, k == A_TS || k == A_DUR)
                                           : span_value(c, cache, f, k == A_TS || k == A_DUR);
        if (!value) return -1;
        J_SETREF(*slot_of(k <= A_ARGS ? ev : args, k), value);
    }
    return dispatch_kind(s, ev, kind);
}

/* the fields of `owner` among `bits` (a bit each, by A_ index) back to their defaults, whatever the event had or a
 * handler wrote */
static void scan_clear(PyObject *owner, uint32_t bits, PyObject **defaults) {
    for (; bits; bits &= bits - 1) {
        int k = lowest_bit(bits);
        PyObject **slot = slot_of(owner, k);
        if (*slot != defaults[k]) J_SETREF(*slot, new_ref(defaults[k]));
    }
}

#define EV_FIELDS ((UINT32_C(2) << A_ARGS) - (UINT32_C(1) << A_CAT))                   /* Event's, as bits */
#define ARGS_FIELDS ((UINT32_C(2) << A_ORIGINAL_STREAM) - (UINT32_C(1) << A_CORRELATION))  /* EventArgs' */
#define ALL_FIELDS (EV_FIELDS | ARGS_FIELDS)

/* After an event: ev and args cleared for the next one, the fields among `touched` (those the scanner wrote; every
 * one, ALL_FIELDS, where Python code saw the event, which could have written any: 5% of a JSON read went to
 * clearing 25 fields where an event has a few); where something kept a reference to one (a handler's list,
 * a raised error's traceback, which holds the handler's frame), that one is left as the handler saw it and a fresh
 * one takes its place, except while an error is being raised (`failed`: the caller stops). 0, or -1 with an error */
static int scan_settle(PyObject **ev, PyObject **args, PyObject **defaults, int failed, uint32_t touched) {
    int args_in_ev = *slot_of(*ev, A_ARGS) == *args;
    int ev_kept = Py_REFCNT(*ev) > 1;
    int args_kept = (ev_kept && args_in_ev) || Py_REFCNT(*args) > 1 + args_in_ev;
    if (!ev_kept) scan_clear(*ev, touched & EV_FIELDS, defaults);
    if (!args_kept) scan_clear(*args, touched & ARGS_FIELDS, defaults);
    if (failed) return 0;
    if (ev_kept) J_SETREF(*ev, scan_blank(j_event_type, A_CAT, A_ARGS, NULL));
    if (*ev && args_kept) J_SETREF(*args, scan_args_blank(NULL));
    return *ev && *args ? 0 : -1;
}

/* ==== The .pftrace events handed to the collector as they are made (Slices.sink) ====
 *
 * A Slices with a sink hands each event to the collector's dispatch at once (dispatch_kind, as scan_events does), in
 * one Event and one EventArgs reused as the scanner reuses them (scan_settle: a fresh one where a handler kept a
 * reference), instead of making an Event and an EventArgs a slice for the batch, to be read back and freed: 9% of a
 * .pftrace read's instructions. Collector.add's bookkeeping is the run's: the categories counted in the order they
 * first came (apply_counts), the events and the last start counted (scan_count), all at the flush, which take() makes
 * (the reader's flush: when due, and at the end), so the collector's tables are where a batch would have left them.
 * The events reach the dispatch in the order they would have reached it in a batch, beside the same exact times. */
#define SINK_KEYS 32
typedef struct {
    JState js;
    PyObject *ev, *args;          /* the Event and EventArgs reused */
    PyObject *defaults[SCAN_FIELDS];
    Tally tally;                  /* the categories counted */
    Py_ssize_t events;
    int has_last;
    double last;  /* the last event's start, a float (Collector.add's last_ts) */
    PyObject *keys[SINK_KEYS];  /* the args keys seen, and their fields (sink_field) */
    int fields[SINK_KEYS], nkeys;
    int busy;  /* an event is being handed over: a handler's take() or sink() is refused, not freeing the run */
    unsigned long binds;  /* j_binds when the run began: its structs' slots are those json_bind found then */
} Sink;

static PyObject *args_index = NULL;  /* {EventArgs field name: its A_ index}, made once json_bind found the slots */

/* whether the collector's dispatch and the structs' slots are bound (json_bind), for the structs Slices makes, as
 * the sink needs them */
static int sink_ready(void) {
    if (!pure_collect || !scan_ready() || s_event != j_event_type || s_args != j_args_type) return 0;
    if (!args_index) {
        PyObject *index = PyDict_New();
        for (int k = A_CORRELATION; index && k <= A_ORIGINAL_STREAM; k++) {
            PyObject *at = PyLong_FromLong(k);
            if (!at || PyDict_SetItem(index, attr[k], at) < 0) Py_CLEAR(index);
            Py_XDECREF(at);
        }
        if (!index) {
            PyErr_Clear();
            return 0;
        }
        args_index = index;
    }
    return 1;
}

/* whether the collector has the tables and methods the dispatch reads (state_open's look-ups): 0, or -1 raised */
static int sink_check(PyObject *collector) {
    JState js;
    int opened = state_open(&js, collector);
    state_close(&js);
    return opened;
}

static Py_ssize_t sink_count(const Slices *self) {
    return self->run ? ((const Sink *)self->run)->events : 0;
}

static void sink_free(Sink *k) {
    state_close(&k->js);
    Py_XDECREF(k->ev); Py_XDECREF(k->args);
    for (int j = 0; j < SCAN_FIELDS; j++) Py_XDECREF(k->defaults[j]);
    for (int j = 0; j < k->nkeys; j++) Py_DECREF(k->keys[j]);
    tally_close(&k->tally);
    PyMem_Free(k);
}

/* the run dropped unflushed (the Slices freed: the read stopped) */
static void sink_drop(Slices *self) {
    if (self->run) sink_free(self->run);
    self->run = NULL;
}

/* what an open run holds, for the cyclic GC (the collector's bound methods, the reused structs, the keys) */
static int sink_traverse(Slices *self, visitproc visit, void *arg) {
    Sink *k = self->run;
    if (!k) return 0;
    Py_VISIT(k->ev); Py_VISIT(k->args);
    for (int j = 0; j < SCAN_FIELDS; j++) Py_VISIT(k->defaults[j]);
    for (int j = 0; j < k->nkeys; j++) Py_VISIT(k->keys[j]);
    int visited = tally_traverse(&k->tally, visit, arg);
    return visited ? visited : state_traverse(&k->js, visit, arg);
}

/* a run begun: the collector's tables looked up, the Event and EventArgs to reuse made; NULL with the error raised */
static Sink *sink_open(Slices *self) {
    Sink *k = PyMem_Calloc(1, sizeof *k);
    if (!k) return (Sink *)PyErr_NoMemory();
    int opened = state_open(&k->js, self->sink) == 0;
    k->binds = j_binds;
    if (opened) {
        k->ev = scan_blank(j_event_type, A_CAT, A_ARGS, k->defaults);
        k->args = k->ev ? scan_args_blank(k->defaults) : NULL;
    }
    if (!k->args || tally_open(&k->tally) < 0) {
        sink_free(k);
        return NULL;
    }
    return k;
}


/* an args key's field (its A_ index), or -1 where it names none: found by identity among the keys seen (the
 * reader's keys are a few str objects), else in args_index and remembered; -2 with the error raised */
static int sink_field(Sink *k, PyObject *key) {
    for (int j = 0; j < k->nkeys; j++)
        if (k->keys[j] == key) return k->fields[j];
    if (!PyUnicode_CheckExact(key)) return -1;
    PyObject *at = PyDict_GetItemWithError(args_index, key);
    if (!at) return PyErr_Occurred() ? -2 : -1;
    int field = (int)PyLong_AsLong(at);
    if (k->nkeys < SINK_KEYS) k->keys[k->nkeys] = new_ref(key), k->fields[k->nkeys++] = field;
    return field;
}

/* the EventArgs of an event whose args (a dict by field name) are not empty: the reused one, each value in its
 * field's slot, where every key names a field; else EventArgs(**args), as the batch makes it (a new reference) */
static PyObject *sink_args(Sink *k, PyObject *args, uint32_t *touched) {
    Py_ssize_t pos = 0, count = 0;
    PyObject *key, *value, *values[A_ORIGINAL_STREAM - A_CORRELATION + 1];
    int fields[A_ORIGINAL_STREAM - A_CORRELATION + 1];
    while (PyDict_Next(args, &pos, &key, &value)) {
        int field = count < A_ORIGINAL_STREAM - A_CORRELATION + 1 ? sink_field(k, key) : -1;
        if (field == -2) return NULL;
        if (field < 0) return PyObject_Call(s_args, s_empty, args);  /* not a field: msgspec says so */
        values[count] = value, fields[count++] = field;
    }
    for (Py_ssize_t j = 0; j < count; j++) Py_INCREF(values[j]);  /* no Python code ran since the dict was read */
    for (Py_ssize_t j = 0; j < count; j++) {  /* a value dropped here may run Python code: the new ones are held */
        PyObject **slot = slot_of(k->args, fields[j]);
        *touched |= UINT32_C(1) << fields[j];
        J_SETREF(*slot, values[j]);
    }
    return new_ref(k->args);
}

/* the start as Collector.add reads the last event's (type(ts) is float or int, and a float of it), remembered */
static void sink_last(Sink *k, PyObject *start) {
    if (PyFloat_CheckExact(start)) {
        k->last = PyFloat_AsDouble(start), k->has_last = 1;
    } else if (PyLong_CheckExact(start)) {
        double d = PyLong_AsDouble(start);  /* past a double's range: _number's None, not remembered */
        if (d == -1.0 && PyErr_Occurred()) PyErr_Clear();
        else k->last = d, k->has_last = 1;
    }
}

/* an event (f: cat, name, pid, tid, ts, dur, args as a dict; its start and duration in µs) handed to the collector:
 * 1, or 0 where the batch takes it (the batch already holds events, which go first; or the structs were bound
 * again since the run began), or -1 with the error raised. A failed event's structs are not used again: whoever
 * holds them (a handler, a traceback) keeps them as they were. */
static int sink_event(Slices *self, PyObject *const *f, PyObject *start, PyObject *length) {
    Sink *k = self->run;
    if (PyList_Size(self->batch) || (k ? k->binds != j_binds || s_event != j_event_type || s_args != j_args_type
                                       : !sink_ready()))
        return 0;
    if (!k && !(k = self->run = sink_open(self))) return -1;
    if (k->busy) {
        PyErr_SetString(PyExc_RuntimeError, "Slices: an event made while a handler ran for another");
        return -1;
    }
    if (!k->ev && !(k->ev = scan_blank(j_event_type, A_CAT, A_ARGS, NULL))) return -1;
    if (!k->args && !(k->args = scan_args_blank(NULL))) return -1;
    k->busy = 1;
    PyObject *cat = f[0], *ev = k->ev;
    uint32_t touched = EV_FIELDS;  /* what scan_settle clears: the Event's fields, the args' written */
    PyObject *kept = PyDict_Size(f[6]) ? sink_args(k, f[6], &touched) : new_ref(s_no_args);
    int failed = !kept;
    if (kept) {
        PyObject *values[7] = {cat, f[1], f[2], f[3], start, length, kept};
        for (int j = A_CAT; j <= A_ARGS; j++) Py_INCREF(values[j - A_CAT]);
        for (int j = A_CAT; j <= A_ARGS; j++) {
            PyObject **slot = slot_of(ev, j);
            J_SETREF(*slot, values[j - A_CAT]);
        }
        Py_DECREF(kept);
    }
    long kind = 0;
    failed = failed || tally_count(&k->tally, cat) < 0;
    if (!failed && !seen_find(&k->js.kinds, cat, &kind)) {
        failed = (kind = kind_of_cat(cat)) < 0;
        if (!failed) seen_add(&k->js.kinds, cat, kind);
    }
    if (!failed) {
        k->events++;
        sink_last(k, start);
        k->js.exposed = 0;
        failed = dispatch_kind(&k->js, ev, kind) < 0;
    }
    if (failed) {
        Py_CLEAR(k->ev);
        Py_CLEAR(k->args);
    } else {
        failed = scan_settle(&k->ev, &k->args, k->defaults, 0, k->js.exposed ? ALL_FIELDS : touched) < 0;
    }
    k->busy = 0;
    return failed ? -1 : 1;
}

/* what was handed over since the last flush into the collector's tables and counts (as a batch's add leaves them);
 * the run ended. 0, or -1 with the error raised */
static int sink_flush(Slices *self) {
    Sink *k = self->run;
    if (!k) return 0;
    if (k->busy) {
        PyErr_SetString(PyExc_RuntimeError, "Slices: take() or sink() while a handler ran for an event");
        return -1;
    }
    self->run = NULL;
    int failed = state_flush(&k->js) < 0;
    failed = apply_counts(&k->js, k->tally.order, k->tally.counts, failed) < 0 || failed;
    if (!failed && k->events) failed = scan_count(self->sink, k->events, k->has_last, k->last) < 0;
    sink_free(k);
    return failed ? -1 : 0;
}

/* ==== The first pass ahead (ScanAhead) ====
 *
 * The first pass makes no Python object (above), so it can run beside the interpreter: a ScanAhead's thread scans
 * the reader's next block while this thread runs the second pass of the one before, on a second core (the first pass
 * is 40-55% of a block's instructions). start(buf, start, end) hands it a block (it holds two: the one being taken
 * and the next); scan_events(..., ahead) of such a block (the same bytes object, start and end) takes what it found,
 * waiting for it with the GIL released, and scans a block itself otherwise, as before. The thread runs the first
 * pass's own code on the same bytes, so a block is taken or declined as if scanned here. A number that
 * PyOS_string_to_double reads here (an exponent, 17 significant digits) is read there by the C library's strtod_l
 * in a "C" locale (nogil_strtod: correctly rounded, so the same double; PyOS_string_to_double's free list is the
 * GIL's); where strtod_l could not be had, such a block is scanned again here, and start() takes nothing (Kineto's
 * 17-digit metrics are in most blocks). The thread holds no reference and calls nothing of Python's: it reads the
 * bytes the ScanAhead holds, and the key tables under s_key_tables, which json_bind takes to write them. It is started
 * by the first start() and joined by close() or the object's end; in a forked child (whose copy of the object has
 * no thread) start() takes nothing. Where there are no POSIX threads, start() takes nothing. */
#if defined(__unix__) || defined(__APPLE__)
#include <pthread.h>
#include <signal.h>
#include <unistd.h>
#define SCAN_AHEAD 1
static pthread_rwlock_t s_key_tables = PTHREAD_RWLOCK_INITIALIZER;  /* read by the thread's pass, json_bind writes */

static unsigned long s_forks = 0;  /* forks this process is the child of, where pthread_atfork could say */

/* A forked child has no thread holding the lock, whatever its copy says (a fork while a thread read the tables, or
 * while json_bind waited for the GIL holding it): made anew there; and the ScanAheads it copied know they are
 * copies (ahead_ours), even where the child's pid is the one a dead ancestor had. */
static void key_tables_after_fork(void) {
    pthread_rwlock_t fresh = PTHREAD_RWLOCK_INITIALIZER;
    memcpy(&s_key_tables, &fresh, sizeof fresh);
    s_forks++;
}
#else
#define SCAN_AHEAD 0
#endif

enum { AHEAD_IDLE, AHEAD_QUEUED, AHEAD_RUNNING, AHEAD_DONE, AHEAD_STOP };
enum { AHEAD_NONE, AHEAD_TAKEN, AHEAD_DECLINED };  /* what scan_events found in a ScanAhead for its block */
#define AHEAD_JOBS 2
#define AHEAD_NAME "warpwizard-scan"  /* the thread's name */

/* a block handed over: the GIL's side (buf, the range, held, order), the thread's inputs, and its results */
typedef struct {
    PyObject *buf;          /* the block's bytes (a reference: this thread's side) */
    Py_ssize_t start, end;  /* the block within them */
    unsigned long binds;    /* j_binds when handed over: a json_bind since, and it is scanned again */
    unsigned long order;    /* when it was handed over: the thread takes the oldest first */
    int held;               /* handed over and not yet taken or dropped (this thread's side) */
    const unsigned char *data;
    Py_ssize_t n;
    Block bk;               /* the thread's from QUEUED to DONE, this thread's otherwise */
    int state, ok, has_last, needs_gil;  /* under the lock */
    double last;
} AheadJob;

typedef struct {
    PyObject_HEAD
    AheadJob jobs[AHEAD_JOBS];
    unsigned long handed;  /* blocks handed over */
    int busy;              /* a call waits for the thread, the GIL released: another call (another thread's) refused */
    Py_ssize_t taken, again;  /* blocks whose first pass scan_events took, and scanned again there */
    int stop;              /* under the lock: the thread ends */
#if SCAN_AHEAD
    pthread_mutex_t lock;
    pthread_cond_t wake, done;
    pthread_t thread;
    pid_t owner;          /* the process the thread runs in; 0: none started */
    unsigned long forks;  /* s_forks when it started */
    int ready;    /* the lock and conditions made */
#endif
} Ahead;

static PyTypeObject *ahead_type = NULL;

#if SCAN_AHEAD
/* the oldest block queued, or NULL (the lock held) */
static AheadJob *ahead_next_job(Ahead *a) {
    AheadJob *next = NULL;
    for (int k = 0; k < AHEAD_JOBS; k++)
        if (a->jobs[k].state == AHEAD_QUEUED && (!next || a->jobs[k].order < next->order)) next = &a->jobs[k];
    return next;
}

static void *ahead_main(void *arg) {
    Ahead *a = arg;
#if defined(__APPLE__)
    pthread_setname_np(AHEAD_NAME);  /* macOS names only the calling thread (Linux's is named by ahead_start) */
#endif
    pthread_mutex_lock(&a->lock);
    for (;;) {
        AheadJob *job;
        while (!a->stop && !(job = ahead_next_job(a))) pthread_cond_wait(&a->wake, &a->lock);
        if (a->stop) break;
        job->state = AHEAD_RUNNING;
        Scan c = {job->data, 0, job->n, 1, 0};
        Block bk = job->bk;
        pthread_mutex_unlock(&a->lock);
        int has_last = 0;
        double last = 0.0;
        pthread_rwlock_rdlock(&s_key_tables);
        int ok = scan_block(&c, &bk, &has_last, &last);
        pthread_rwlock_unlock(&s_key_tables);
        pthread_mutex_lock(&a->lock);
        job->bk = bk, job->ok = ok, job->has_last = has_last, job->last = last, job->needs_gil = c.needs_gil;
        job->state = AHEAD_DONE;
        pthread_cond_broadcast(&a->done);
    }
    pthread_mutex_unlock(&a->lock);
    return NULL;
}

/* whether this process runs the object's thread (a fork's child has a copy of the object, not of the thread) */
static int ahead_ours(const Ahead *a) { return a->owner != 0 && a->forks == s_forks && a->owner == getpid(); }
#endif

/* a block handed over, scanned: waited for with the GIL released (1), or 0 where the thread is not this process's
 * (a fork's child: the parent's thread was writing the copy of the block it has, which is then forgotten) */
static int ahead_wait(Ahead *a, AheadJob *job) {
#if SCAN_AHEAD
    if (ahead_ours(a)) {
        a->busy = 1;
        Py_BEGIN_ALLOW_THREADS
        pthread_mutex_lock(&a->lock);
        while (job->state != AHEAD_DONE) pthread_cond_wait(&a->done, &a->lock);
        job->state = AHEAD_IDLE;
        pthread_mutex_unlock(&a->lock);
        Py_END_ALLOW_THREADS
        a->busy = 0;
        return 1;
    }
#else
    (void)a;
#endif
    job->bk = (Block){NULL, NULL, 0, 0, 0, 0};
    job->state = AHEAD_IDLE;
    return 0;
}

/* a block handed over dropped, once scanned (this thread: the GIL held) */
static void ahead_drop(Ahead *a, AheadJob *job) {
    if (!job->held) return;
    job->held = 0;
    ahead_wait(a, job);
    block_free(&job->bk);
    Py_CLEAR(job->buf);
}

/* the thread stopped and joined, the blocks dropped */
static void ahead_stop(Ahead *a) {
    for (int k = 0; k < AHEAD_JOBS; k++) ahead_drop(a, &a->jobs[k]);
#if SCAN_AHEAD
    if (ahead_ours(a)) {
        pthread_mutex_lock(&a->lock);
        a->stop = 1;
        pthread_cond_signal(&a->wake);
        pthread_mutex_unlock(&a->lock);
        a->busy = 1;
        Py_BEGIN_ALLOW_THREADS
        pthread_join(a->thread, NULL);
        Py_END_ALLOW_THREADS
        a->busy = 0;
        a->stop = 0, a->owner = 0;
    }
#endif
}

static PyObject *ahead_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    if (PyTuple_Size(args) || (kwargs && PyDict_Size(kwargs))) {
        PyErr_SetString(PyExc_TypeError, "ScanAhead() takes no arguments");
        return NULL;
    }
    allocfunc alloc = (allocfunc)PyType_GetSlot(type, Py_tp_alloc);
    Ahead *a = (Ahead *)alloc(type, 0);  /* zeroed: nothing held, no thread */
#if SCAN_AHEAD
    if (a && !pthread_mutex_init(&a->lock, NULL)) {
        if (!pthread_cond_init(&a->wake, NULL)) {
            if (!pthread_cond_init(&a->done, NULL)) a->ready = 1;
            else pthread_cond_destroy(&a->wake);
        }
        if (!a->ready) pthread_mutex_destroy(&a->lock);
    }
#endif
    return (PyObject *)a;  /* without its lock (not ready), start() takes nothing */
}

static void ahead_dealloc(Ahead *a) {
    ahead_stop(a);
#if SCAN_AHEAD
    if (a->ready && !a->owner) {  /* not a fork's copy, whose lock is as the parent's thread left it */
        pthread_mutex_destroy(&a->lock);
        pthread_cond_destroy(&a->wake);
        pthread_cond_destroy(&a->done);
    }
#endif
    instance_free((PyObject *)a);
}

/* whether a call may use the ScanAhead: not while another waits for its thread (0, RuntimeError raised) */
static int ahead_free(const Ahead *a) {
#if SCAN_AHEAD
    if (!a->busy || (a->owner && !ahead_ours(a))) return 1;  /* a fork's copy: the call that waited is not in it */
#else
    if (!a->busy) return 1;
#endif
    PyErr_SetString(PyExc_RuntimeError, "ScanAhead: used by another thread while it waits for its block");
    return 0;
}

/* start(buf, start, end): buf[start:end] handed to the thread (the older of two held before is dropped); False where
 * it takes nothing (no threads here, anything but bytes, a block of 4 GiB, the core not bound, no thread could
 * start): scan_events then scans that block itself, as ever */
static PyObject *ahead_start(Ahead *a, PyObject *const *args, Py_ssize_t nargs) {
    if (!ahead_free(a)) return NULL;
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "start takes (buf, start, end)");
        return NULL;
    }
    Py_ssize_t start = PyLong_AsSsize_t(args[1]);
    if (start == -1 && PyErr_Occurred()) return NULL;
    Py_ssize_t end = PyLong_AsSsize_t(args[2]);
    if (end == -1 && PyErr_Occurred()) return NULL;
    if (!PyBytes_Check(args[0])) Py_RETURN_FALSE;
    if (start < 0 || start > end || end > PyBytes_Size(args[0])) {
        PyErr_SetString(PyExc_ValueError, "start: the block is not within the buffer (0 <= start <= end <= len)");
        return NULL;
    }
#if SCAN_AHEAD
    if (!scan_ready() || end - start >= (Py_ssize_t)UINT32_MAX || !a->ready || !nogil_strtod_ready())
        Py_RETURN_FALSE;
    if (a->owner && !ahead_ours(a)) Py_RETURN_FALSE;  /* a fork's copy: its lock as the parent's thread left it */
    AheadJob *job = NULL;
    for (int k = 0; k < AHEAD_JOBS; k++)
        if (!job || !a->jobs[k].held || (job->held && a->jobs[k].order < job->order)) job = &a->jobs[k];
    ahead_drop(a, job);  /* a free one, else the oldest */
    if (!a->owner) {  /* every signal blocked in the thread (it inherits this mask): the kernel gives them to the
                        * main thread, whose blocking read a Ctrl-C must end (wizard/threads.py, for Python's threads);
                        * but a fault's own (a blocked SIGSEGV kills the process with no handler run: faulthandler
                        * and ASan would say nothing) */
        sigset_t every, before;
        sigfillset(&every);
        static const int faults[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGSYS, SIGABRT};
        for (size_t k = 0; k < sizeof faults / sizeof *faults; k++) sigdelset(&every, faults[k]);
        pthread_sigmask(SIG_SETMASK, &every, &before);  /* set, not added to: the caller's may block a fault's */
        a->owner = getpid(), a->forks = s_forks;
        int failed = pthread_create(&a->thread, NULL, ahead_main, a);
        pthread_sigmask(SIG_SETMASK, &before, NULL);
        if (failed) {
            a->owner = 0;
            Py_RETURN_FALSE;
        }
#if defined(__linux__)
        pthread_setname_np(a->thread, AHEAD_NAME);  /* what top, py-spy and /proc show, before start() returns */
#endif
    }
    job->buf = new_ref(args[0]);
    job->start = start, job->end = end, job->binds = j_binds, job->order = ++a->handed, job->held = 1;
    job->bk = block_take();
    pthread_mutex_lock(&a->lock);
    job->data = (const unsigned char *)PyBytes_AsString(args[0]) + start, job->n = end - start;
    job->state = AHEAD_QUEUED;
    pthread_cond_signal(&a->wake);
    pthread_mutex_unlock(&a->lock);
    Py_RETURN_TRUE;
#else
    (void)a;
    Py_RETURN_FALSE;
#endif
}

/* the block scan_events was given, where it is one handed over: AHEAD_TAKEN (its block and last ts), AHEAD_DECLINED
 * (the thread declined it: this thread would too), or AHEAD_NONE (none such, or one to scan again here); a block
 * handed over before it is dropped (the reader went another way) */
static int ahead_take(Ahead *a, PyObject *buf, Py_ssize_t start, Py_ssize_t end, Block *bk, int *has_last,
                      double *last) {
    AheadJob *job = NULL;
    for (int k = 0; k < AHEAD_JOBS; k++)
        if (a->jobs[k].held && a->jobs[k].buf == buf && a->jobs[k].start == start && a->jobs[k].end == end)
            job = &a->jobs[k];
    if (!job) return AHEAD_NONE;
    for (int k = 0; k < AHEAD_JOBS; k++)
        if (a->jobs[k].held && a->jobs[k].order < job->order) ahead_drop(a, &a->jobs[k]);
    job->held = 0;
    int scanned = ahead_wait(a, job);
    Py_CLEAR(job->buf);
    Block got = job->bk;
    job->bk = (Block){NULL, NULL, 0, 0, 0, 0};
    if (!scanned || job->binds != j_binds || job->needs_gil) {  /* scanned again here */
        block_free(&got);
        a->again++;
        return AHEAD_NONE;
    }
    a->taken++;
    if (!job->ok || got.count == 0) {
        block_free(&got);
        return AHEAD_DECLINED;
    }
    *bk = got, *has_last = job->has_last, *last = job->last;
    return AHEAD_TAKEN;
}

static PyObject *ahead_close(Ahead *a, PyObject *unused) {
    (void)unused;
    if (!ahead_free(a)) return NULL;
    ahead_stop(a);
    Py_RETURN_NONE;
}

static PyObject *ahead_get_threaded(Ahead *a, void *closure) {
    (void)closure;
#if SCAN_AHEAD
    return PyBool_FromLong(ahead_ours(a));
#else
    (void)a;
    Py_RETURN_FALSE;
#endif
}

_Static_assert(AHEAD_JOBS == 2, "pending lists the two jobs, oldest first");

static PyObject *ahead_get_pending(Ahead *a, void *closure) {
    (void)closure;
    AheadJob *first = &a->jobs[0], *second = &a->jobs[1];
    if (second->held && (!first->held || second->order < first->order)) first = &a->jobs[1], second = &a->jobs[0];
    PyObject *held = PyList_New(0);
    for (AheadJob *job = first; held && job; job = job == first ? second : NULL) {
        if (!job->held) continue;
        PyObject *one = Py_BuildValue("(Onn)", job->buf, job->start, job->end);
        if (!one || PyList_Append(held, one) < 0) Py_CLEAR(held);
        Py_XDECREF(one);
    }
    return held;
}

static PyMethodDef ahead_methods[] = {
    {"start", (PyCFunction)(void (*)(void))ahead_start, METH_FASTCALL,
     "start(buf, start, end): the block's first pass begun on the thread; False where it takes nothing"},
    {"close", (PyCFunction)ahead_close, METH_NOARGS, "the thread stopped, the blocks it held dropped"},
    {NULL, NULL, 0, NULL},
};

static PyObject *ahead_get_taken(Ahead *a, void *closure) {
    (void)closure;
    return Py_BuildValue("(nn)", a->taken, a->again);
}

static PyGetSetDef ahead_getset[] = {
    {"threaded", (getter)ahead_get_threaded, NULL, "whether this process runs its thread", NULL},
    {"taken", (getter)ahead_get_taken, NULL,
     "(blocks whose first pass scan_events took from the thread, blocks it scanned again itself)", NULL},
    {"pending", (getter)ahead_get_pending, NULL, "[(buf, start, end)] of the blocks held, oldest first", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot ahead_slots[] = {
    {Py_tp_new, ahead_new}, {Py_tp_dealloc, ahead_dealloc}, {Py_tp_methods, ahead_methods},
    {Py_tp_getset, ahead_getset},
    {Py_tp_doc, "the first pass of the reader's next blocks, on a thread of its own (scan_events takes it)"}, {0, NULL},
};

static PyType_Spec ahead_spec = {"wizard._core.ScanAhead", sizeof(Ahead), 0, Py_TPFLAGS_DEFAULT, ahead_slots};

/* scan_events(collector, buf, start, end[, ahead]): True where buf[start:end] was collected, False where declined
 * (nothing changed; anything but bytes is declined); `ahead`, a ScanAhead (or None): its first pass taken where it
 * was handed this block */
static PyObject *core_scan_events(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    Ahead *ahead = nargs == 5 && args[4] != Py_None ? (Ahead *)args[4] : NULL;
    if ((nargs != 4 && nargs != 5) || (ahead && (!ahead_type || !PyObject_TypeCheck(args[4], ahead_type)))) {
        PyErr_SetString(PyExc_TypeError, "scan_events takes (collector, buf, start, end[, ahead: ScanAhead])");
        return NULL;
    }
    if (ahead && !ahead_free(ahead)) return NULL;
    if (!PyBytes_Check(args[1])) Py_RETURN_FALSE;  /* bytes only (their NUL ends every loop): declined */
    char *data = NULL;
    Py_ssize_t size = 0, start = PyLong_AsSsize_t(args[2]);
    if (start == -1 && PyErr_Occurred()) return NULL;
    Py_ssize_t end = PyLong_AsSsize_t(args[3]);
    if (end == -1 && PyErr_Occurred()) return NULL;
    if (PyBytes_AsStringAndSize(args[1], &data, &size) < 0) return NULL;
    if (start < 0 || start > end || end > size) {
        PyErr_SetString(PyExc_ValueError, "scan_events: the block is not within the buffer (0 <= start <= end <= len)");
        return NULL;
    }
    /* the loops may read on past `end` (never past the NUL at buf[len]): what runs past it is declined */
    if (!scan_ready() || end - start >= (Py_ssize_t)UINT32_MAX) Py_RETURN_FALSE;
    Scan c = {(const unsigned char *)data + start, 0, end - start, 0, 0};
    Block bk = {NULL, NULL, 0, 0, 0, 0};
    int has_last = 0;
    double last = 0.0;
    int found = ahead ? ahead_take(ahead, args[1], start, end, &bk, &has_last, &last) : AHEAD_NONE;
    if (found == AHEAD_DECLINED) Py_RETURN_FALSE;
    if (found == AHEAD_NONE) {
        bk = block_take();
        if (!scan_block(&c, &bk, &has_last, &last) || bk.count == 0) {
            block_free(&bk);
            if (PyErr_Occurred()) return NULL;
            Py_RETURN_FALSE;
        }
    }
    Py_ssize_t count = bk.count;
    StrSlot *cache = PyMem_Calloc(STR_SLOTS, sizeof *cache);
    PyObject **cats = PyMem_Calloc((size_t)count, sizeof *cats);
    unsigned char *kinds = PyMem_Calloc((size_t)count, 1);
    PyObject *defaults[SCAN_FIELDS] = {NULL}, *ev = NULL, *ev_args = NULL, *held_cats = NULL;
    LastInt ints[SCAN_FIELDS] = {{0, NULL}};
    JState s;
    int opened = 0, failed = !cache || !cats || !kinds || scan_count(args[0], count, has_last, last) < 0;
    if ((!cache || !cats || !kinds) && !PyErr_Occurred()) PyErr_NoMemory();
    if (!failed) {
        ev = scan_blank(j_event_type, A_CAT, A_ARGS, defaults);
        ev_args = ev ? scan_args_blank(defaults) : NULL;
        failed = !ev_args;
    }
    if (!failed && state_open(&s, args[0]) < 0) {
        state_close(&s);
        failed = 1;
    } else if (!failed) {
        opened = 1;
        failed = scan_categories(&s, &c, cache, &bk, cats, kinds, &held_cats) < 0;
    }
    for (Py_ssize_t i = 0; !failed && i < count; i++) {
        s.exposed = 0;
        failed = scan_dispatch(&s, &c, cache, ints, &bk, bk.events + i, cats[i], kinds[i], ev, ev_args) < 0;
        uint32_t touched = s.exposed ? ALL_FIELDS : bk.events[i].present | (UINT32_C(1) << A_CAT);
        failed = scan_settle(&ev, &ev_args, defaults, failed, touched) < 0 || failed;
    }
    PyObject *type = NULL, *value = NULL, *trace = NULL;
    if (failed) PyErr_Fetch(&type, &value, &trace);  /* what was gathered before the error still lands */
    int flushed = opened && state_flush(&s) == 0;
    if (opened) state_close(&s);
    if (failed) {
        if (opened && !flushed) PyErr_Clear();
        PyErr_Restore(type, value, trace);
    }
    for (int k = 0; k < SCAN_FIELDS; k++) Py_XDECREF(defaults[k]), Py_XDECREF(ints[k].made);
    for (Py_ssize_t k = 0; cache && k < STR_SLOTS; k++) Py_XDECREF(cache[k].text);
    PyMem_Free(cats);
    PyMem_Free(kinds);
    Py_XDECREF(held_cats);
    PyMem_Free(cache);
    block_free(&bk);
    Py_XDECREF(ev);
    Py_XDECREF(ev_args);
    if (failed || !flushed) return NULL;
    Py_RETURN_TRUE;
}

/* the JSON names of fields first..last, from ((attribute, JSON name), ...) in the struct's order, each attribute
 * checked to be the one the core reads there: 0, or -1 with TypeError (the scanner then declines every block) */
static int scan_bind_keys(PyObject *pairs, int first, int last) {
    scan_tables();
    uint32_t range = (UINT32_C(2) << last) - (UINT32_C(1) << first);
    for (int length = 0; length < KEY_LENGTHS; length++) keys_of_length[length] &= ~range;
    long_keys &= ~range;
    for (int k = first; k <= last; k++) {
        PyMem_Free(scan_keys[k]);
        scan_keys[k] = NULL;
    }
    if (!PyTuple_Check(pairs) || PyTuple_Size(pairs) != last - first + 1) {
        PyErr_SetString(PyExc_TypeError, "json_bind: a struct's keys are one (attribute, JSON name) pair a field");
        return -1;
    }
    for (int k = first; k <= last; k++) {
        PyObject *pair = PyTuple_GetItem(pairs, k - first);
        PyObject *name = pair && PyTuple_Check(pair) && PyTuple_Size(pair) == 2 ? PyTuple_GetItem(pair, 0) : NULL;
        PyObject *key = name ? PyTuple_GetItem(pair, 1) : NULL;
        Py_ssize_t size = 0;
        const char *text = key && PyUnicode_Check(key) ? PyUnicode_AsUTF8AndSize(key, &size) : NULL;
        int same = text && PyUnicode_Check(name) ? PyUnicode_CompareWithASCIIString(name, attr_names[k]) == 0 : 0;
        if (!text || !same) {
            if (!PyErr_Occurred())
                PyErr_Format(PyExc_TypeError, "json_bind: field %d is not %s, or its JSON name is not a str", k,
                             attr_names[k]);
            return -1;
        }
        if (!(scan_keys[k] = PyMem_Malloc((size_t)size + 1))) {
            PyErr_NoMemory();
            return -1;
        }
        memcpy(scan_keys[k], text, (size_t)size + 1);
        scan_key_len[k] = size;
        *(size < KEY_LENGTHS ? &keys_of_length[size] : &long_keys) |= UINT32_C(1) << k;
        scan_key_head[k] = head_word((const unsigned char *)text, size, 0);
        scan_key_tail[k] = 0;
        if (size > 8 && size <= 16) memcpy(&scan_key_tail[k], text + size - 8, 8);
    }
    return 0;
}

/* json_bind(op, runtime, kernel, python and gpu-op categories, MAX_NAME, _number, as_int, _ThreadIntervals,
 * _NO_ARGS, OCCUPANCY_KEY, THEORETICAL_KEY, reported(None), pure_collect_events, Event, EventArgs, Event's keys,
 * EventArgs' keys): collector.py's constants and twins, the decoder's structs (their slots found here) and their
 * fields' (attribute, JSON name) pairs for the scanner */
static PyObject *core_json_bind(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    j_binds++;  /* a Slices' open sink run reuses structs of the binding before: its next event goes to the batch */
    if (nargs != 19 || !PyType_Check(args[18])) {
        PyErr_SetString(PyExc_TypeError, "json_bind takes the collector's 14 constants and twins, Event, EventArgs, "
                                         "their keys and Collector");
        return NULL;
    }
    for (int k = 0; k < 5; k++)
        if (!PyAnySet_Check(args[k])) {
            PyErr_SetString(PyExc_TypeError, "json_bind: categories are sets");
            return NULL;
        }
    Py_ssize_t limit = PyLong_AsSsize_t(args[5]);
    if (limit == -1 && PyErr_Occurred()) return NULL;
    for (int k = 0; k < A_COUNT; k++)
        if (!attr[k] && !(attr[k] = PyUnicode_InternFromString(attr_names[k]))) return NULL;
    if (!j_empty && !(j_empty = PyBytes_FromStringAndSize("", 0))) return NULL;
    PyObject **slots[] = {&op_cats, &runtime_cats, &kernel_cats, &python_cats, &gpu_op_cats, NULL, &j_number,
                          &j_as_int, &j_thread_class, &j_no_args, &j_occupancy_key, &j_theoretical_key, &j_missing,
                          &pure_collect};
    for (int k = 0; k < 14; k++) {
        if (!slots[k]) continue;
        PyObject *old = *slots[k];
        *slots[k] = new_ref(args[k]);
        Py_XDECREF(old);
    }
    j_max_name = limit;
    PyObject *kinds = PyDict_New();
    for (int k = 4; kinds && k >= 0; k--) {  /* the last set first: a category in two is the first one's */
        PyObject *number = PyLong_FromLong(k + 1), *iterator = number ? PyObject_GetIter(args[k]) : NULL, *cat;
        while (iterator && (cat = PyIter_Next(iterator))) {
            if (PyDict_SetItem(kinds, cat, number) < 0) Py_CLEAR(kinds);
            Py_DECREF(cat);
            if (!kinds) break;
        }
        if (!number || !iterator || PyErr_Occurred()) Py_CLEAR(kinds);
        Py_XDECREF(number);
        Py_XDECREF(iterator);
    }
    if (!kinds) return NULL;
    J_SETREF(kind_of, kinds);
    for (int k = 0; k < A_COUNT; k++) field_offset[k] = 0;  /* by name until found again */
    for (int k = 14; k < 16; k++) {
        PyObject **slot = k == 14 ? &j_event_type : &j_args_type, *old = *slot;
        *slot = new_ref(args[k]);
        Py_XDECREF(old);
    }
    J_SETREF(j_collector_type, new_ref(args[18]));
    kernel_slots_clear();  /* shapes made under the binding before */
    int failed = find_fields(j_event_type, A_CAT, A_ARGS) < 0 || find_fields(j_args_type, A_CORRELATION, A_ORIGINAL_STREAM) < 0;
    if (!failed) {
#if SCAN_AHEAD
        Py_BEGIN_ALLOW_THREADS
        pthread_rwlock_wrlock(&s_key_tables);  /* a ScanAhead's thread reads them while it scans */
        Py_END_ALLOW_THREADS
#endif
        failed = scan_bind_keys(args[16], A_CAT, A_ARGS) < 0 || scan_bind_keys(args[17], A_CORRELATION, A_ORIGINAL_STREAM) < 0;
#if SCAN_AHEAD
        pthread_rwlock_unlock(&s_key_tables);
#endif
    }
    if (failed) {
        for (int k = 0; k < A_COUNT; k++) field_offset[k] = 0;
        return NULL;
    }
    Py_RETURN_NONE;
}

/* ==== Nsight rows (nsyscore) ==== */

/* How many of a word's eight bytes equal the byte repeated in ``pattern`` (ones * c): such a byte is zero after the
 * xor, and the exact zero-byte test sets its high bit, with no carry between bytes. */
static inline Py_ssize_t equal_bytes(uint64_t w, uint64_t pattern) {
    const uint64_t low7 = 0x7f7f7f7f7f7f7f7fu, ones = 0x0101010101010101u;
    w ^= pattern;
    uint64_t zero = ~(((w & low7) + low7) | w | low7);  /* 0x80 in each byte that was the pattern's, else 0 */
    return (Py_ssize_t)(((zero >> 7) * ones) >> 56);    /* the bytes' sum: at most 8 */
}

/* The bytes of [p, end) equal to ``c``: eight at a time, the last few one by one. */
static inline Py_ssize_t byte_count(const char *p, const char *end, unsigned char c) {
    const uint64_t pattern = 0x0101010101010101u * c;
    Py_ssize_t count = 0;
    for (; end - p >= 8; p += 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        count += equal_bytes(w, pattern);
    }
    for (; p < end; p++) count += (unsigned char)*p == c;
    return count;
}

/* How many commas [p, end) holds. */
static Py_ssize_t commas(const char *p, const char *end) { return byte_count(p, end, ','); }

/* 1, and the magnitude of the digits [from, to) in ``magnitude``, where it is within int64 (up to 2**63 when
 * ``negative``); 0 past it. */
static int int64_digits(const char *from, const char *to, int negative, uint64_t *magnitude) {
    const unsigned last = negative ? 8 : 7;  /* int64's ends: -9223372036854775808, 9223372036854775807 */
    const uint64_t tenth = 922337203685477580u;
    uint64_t m = 0;
    for (const char *p = from; p < to; p++) {
        unsigned d = (unsigned)(*p - '0');
        if (m >= tenth && (m > tenth || d > last)) return 0;  /* past int64 */
        m = m * 10 + d;
    }
    *magnitude = m;
    return 1;
}

/* int64_array(text): a JSON array of integers, as SQLite's json_group_array writes an integer column of a batch of
 * rows (wizard/trace/read/sqlite_columns.py), as the bytes of native int64s; None for any other text: exactly
 * "[" then none or INT ("," INT)* then "]", INT = -?[0-9]+ within int64 (what SQLite writes for a real, text, NULL,
 * a space, a '+' is None: that batch is read row by row). The twin: sqlite_columns.pure_int64_array. The text is
 * read once; the output is sized from its commas (at most a value per two bytes) before it is written. */
static PyObject *core_int64_array(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 1) {
        PyErr_SetString(PyExc_TypeError, "int64_array takes one argument");
        return NULL;
    }
    if (!PyUnicode_Check(args[0])) {
        PyErr_SetString(PyExc_TypeError, "int64_array: the text must be a str");
        return NULL;
    }
    Py_ssize_t n = 0;
    const char *t = PyUnicode_AsUTF8AndSize(args[0], &n);
    if (t == NULL) {
        if (!PyErr_ExceptionMatches(PyExc_UnicodeEncodeError)) return NULL;
        PyErr_Clear();  /* a lone surrogate: not an integer's character either */
        Py_RETURN_NONE;
    }
    if (n < 2 || t[0] != '[' || t[n - 1] != ']') Py_RETURN_NONE;
    const char *p = t + 1, *end = t + n - 1;
    if (p == end) return PyBytes_FromStringAndSize(NULL, 0);
    Py_ssize_t count = 1 + commas(p, end);
    if (count > PY_SSIZE_T_MAX / 8) return PyErr_NoMemory();
    PyObject *out = PyBytes_FromStringAndSize(NULL, count * 8);
    if (out == NULL) return NULL;
    char *raw = PyBytes_AsString(out);
    if (raw == NULL) {
        Py_DECREF(out);
        return NULL;
    }
    /* *end is ']': every loop below stops there at the latest. Up to 18 digits cannot pass int64 and are read
     * without a check; a longer run (leading zeros, int64's ends) is read again, checked digit by digit. */
    for (Py_ssize_t k = 0; k < count; k++) {
        int negative = *p == '-';
        p += negative;
        const char *digits = p;
        uint64_t magnitude = 0;
        unsigned d;
        while ((d = (unsigned)(unsigned char)*p - '0') < 10) {
            magnitude = magnitude * 10 + d;  /* wraps past 20 digits: such a run is read again below */
            p++;
        }
        if (p == digits) goto refuse;
        if (p - digits > 18 && !int64_digits(digits, p, negative, &magnitude)) goto refuse;
        if (k + 1 < count ? *p != ',' : p != end) goto refuse;
        p++;
        int64_t value = negative ? (int64_t)(0 - magnitude) : (int64_t)magnitude;
        memcpy(raw + k * 8, &value, 8);
    }
    return out;
refuse:
    Py_DECREF(out);
    Py_RETURN_NONE;
}

/* ==== JSON block cuts (scan.py) ==== */

/* The quotes and the backslashes of [p, end), in one pass: sixteen bytes a step where SSE2 is (each byte's lane
 * counts its matches, at most 255 steps a chunk, then the lanes are summed), else eight at a time (as byte_count);
 * the last few one by one. Eight bytes a step was 7% of a minified read's CPU (45-63 ms of a 182 MB file). */
static void quotes_and_backslashes(const char *p, const char *end, Py_ssize_t *quotes, Py_ssize_t *backslashes) {
    const uint64_t quote = 0x0101010101010101u * '"', backslash = 0x0101010101010101u * '\\';
    Py_ssize_t q = 0, b = 0;
#if CORE_SSE2
    const __m128i quote16 = _mm_set1_epi8('"'), backslash16 = _mm_set1_epi8('\\'), zero = _mm_setzero_si128();
    while (end - p >= 16) {
        Py_ssize_t steps = (end - p) / 16;
        if (steps > 255) steps = 255;  /* a lane holds at most 255 */
        __m128i qs = zero, bs = zero;
        for (Py_ssize_t k = 0; k < steps; k++, p += 16) {
            __m128i x = _mm_loadu_si128((const __m128i *)(const void *)p);
            qs = _mm_sub_epi8(qs, _mm_cmpeq_epi8(x, quote16));  /* a match is -1: subtracted, one more */
            bs = _mm_sub_epi8(bs, _mm_cmpeq_epi8(x, backslash16));
        }
        __m128i qsum = _mm_sad_epu8(qs, zero), bsum = _mm_sad_epu8(bs, zero);  /* each half's eight lanes summed */
        q += _mm_cvtsi128_si32(qsum) + _mm_cvtsi128_si32(_mm_srli_si128(qsum, 8));
        b += _mm_cvtsi128_si32(bsum) + _mm_cvtsi128_si32(_mm_srli_si128(bsum, 8));
    }
#endif
    for (; end - p >= 8; p += 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        q += equal_bytes(w, quote);
        b += equal_bytes(w, backslash);
    }
    for (; p < end; p++) {
        q += *p == '"';
        b += *p == '\\';
    }
    *quotes = q;
    *backslashes = b;
}

/* (quotes, backslashes) in bytes[start:end], the indices as bytes.count takes them (negative from the end, clipped):
 * where a minified block is cut, its quotes are counted to know whether a candidate lies inside a string, and
 * bytes.count reads a byte at a time, a pass for each (7% of a minified read's CPU). The twin: scan.pure_quote_counts. */
static PyObject *core_quote_counts(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "quote_counts takes three arguments");
        return NULL;
    }
    Py_ssize_t start = PyNumber_AsSsize_t(args[1], NULL), end = PyNumber_AsSsize_t(args[2], NULL);
    if ((start == -1 || end == -1) && PyErr_Occurred()) return NULL;
    char *buf = NULL;
    Py_ssize_t size = 0;
    if (!PyBytes_Check(args[0])) {
        PyErr_SetString(PyExc_TypeError, "quote_counts: the buffer must be bytes");
        return NULL;
    }
    if (PyBytes_AsStringAndSize(args[0], &buf, &size) < 0) return NULL;
    PySlice_AdjustIndices(size, &start, &end, 1);
    Py_ssize_t quotes = 0, backslashes = 0;
    if (end > start) quotes_and_backslashes(buf + start, buf + end, &quotes, &backslashes);
    return Py_BuildValue("nn", quotes, backslashes);
}

/* The summary table's two sweeps over a thread's op spans (key_averages._parents and _innermost, whose Python loops
 * are their twins): spans sorted by (start, -end), a stack of the open ones on a root that is never popped (its end a
 * NaN, which compares false both ways). The stack lives in two bytearrays the caller keeps between calls (int64
 * indices, double ends), so a thread is swept a chunk at a time and nothing of it is copied whole. */

/* the stack's bytearrays, checked and grown to hold `more` pushes: 0, or -1 with the error raised */
static int sweep_stack(PyObject *stack, PyObject *tops, Py_ssize_t more, Py_ssize_t *depth) {
    if (!PyByteArray_Check(stack) || !PyByteArray_Check(tops) || stack == tops) {
        PyErr_SetString(PyExc_TypeError, "a sweep's stack and tops are two bytearrays");
        return -1;
    }
    Py_ssize_t k = PyByteArray_Size(stack) / 8;
    if (k < 1 || PyByteArray_Size(stack) != 8 * k || PyByteArray_Size(tops) != 8 * k) {
        PyErr_SetString(PyExc_ValueError, "a sweep's stack and tops hold the same count of 8-byte items, the root first");
        return -1;
    }
    if (more > PY_SSIZE_T_MAX / 8 - k) return (void)PyErr_NoMemory(), -1;
    if (PyByteArray_Resize(stack, 8 * (k + more)) < 0) return -1;
    if (PyByteArray_Resize(tops, 8 * (k + more)) < 0) {  /* the stack as it was: both the same size again */
        PyObject *type, *value, *trace;
        PyErr_Fetch(&type, &value, &trace);
        (void)PyByteArray_Resize(stack, 8 * k);
        PyErr_Restore(type, value, trace);
        return -1;
    }
    *depth = k;
    return 0;
}

/* the bytearrays cut back to the depth the sweep left */
static int sweep_done(PyObject *stack, PyObject *tops, Py_ssize_t k) {
    return PyByteArray_Resize(stack, 8 * k) < 0 || PyByteArray_Resize(tops, 8 * k) < 0 ? -1 : 0;
}

/* a sweep begun: the stack grown for `more` pushes and bytes for `answers` int64 answers, or NULL with the error
 * raised and the stack as it was */
static PyObject *sweep_begin(PyObject *stack, PyObject *tops, Py_ssize_t more, Py_ssize_t answers, Py_ssize_t *k) {
    if (sweep_stack(stack, tops, more, k) < 0) return NULL;
    PyObject *out = PyBytes_FromStringAndSize(NULL, 8 * answers);
    if (!out) sweep_done(stack, tops, *k);
    return out;
}

/* bytes holding whole 8-byte items: their count, or -1 with the error raised */
static Py_ssize_t items8(PyObject *b, const char *what) {
    if (!PyBytes_Check(b) || PyBytes_Size(b) % 8) {
        PyErr_Format(PyExc_TypeError, "%s: bytes of 8-byte items", what);
        return -1;
    }
    return PyBytes_Size(b) / 8;
}

/* the open spans that neither hold start nor end by end popped (the root never: k stays at least 1) */
static Py_ssize_t sweep_pop(const double *tops, Py_ssize_t k, double start, double end) {
    while (k > 1 && (start >= tops[k - 1] || end > tops[k - 1])) k--;
    return k;
}

/* parents(starts, ends, first, stack, tops): key_averages.pure_parents a chunk of spans at a time (the first one
 * the thread's span `first`): each span's parent, int64 bytes */
static PyObject *core_parents(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 5) {
        PyErr_SetString(PyExc_TypeError, "parents(starts, ends, first, stack, tops)");
        return NULL;
    }
    Py_ssize_t n = items8(args[0], "parents' starts"), k;
    if (n < 0 || items8(args[1], "parents' ends") != n) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "parents: as many ends as starts");
        return NULL;
    }
    long long first = PyLong_AsLongLong(args[2]);
    if (first == -1 && PyErr_Occurred()) return NULL;
    PyObject *out = sweep_begin(args[3], args[4], n, n, &k);
    if (!out) return NULL;
    const double *starts = (const double *)PyBytes_AsString(args[0]), *ends = (const double *)PyBytes_AsString(args[1]);
    long long *parent = (long long *)PyBytes_AsString(out), *stack = (long long *)PyByteArray_AsString(args[3]);
    double *tops = (double *)PyByteArray_AsString(args[4]);
    for (Py_ssize_t i = 0; i < n; i++) {
        k = sweep_pop(tops, k, starts[i], ends[i]);
        parent[i] = stack[k - 1];
        stack[k] = first + i, tops[k] = ends[i], k++;
    }
    if (sweep_done(args[3], args[4], k) < 0) Py_CLEAR(out);
    return out;
}

/* up_the_tree(parents, first, total, true_total): key_averages.pure_up_the_tree's loop for the spans first ..
 * first + len(parents) - 1, last first (the caller hands the chunks from the thread's last): each span's total and
 * true total added to its parent's, in place in the two bytearrays of doubles. A parent past the spans raises
 * IndexError where the twin's would, what was added before it added. */
static PyObject *core_up_the_tree(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 4 || !PyByteArray_Check(args[2]) || !PyByteArray_Check(args[3])) {
        PyErr_SetString(PyExc_TypeError, "up_the_tree(parents, first, total, true_total): the totals bytearrays");
        return NULL;
    }
    Py_ssize_t m = items8(args[0], "up_the_tree's parents"), n = PyByteArray_Size(args[2]) / 8;
    if (m < 0) return NULL;
    Py_ssize_t first = PyLong_AsSsize_t(args[1]);
    if (first == -1 && PyErr_Occurred()) return NULL;
    if (PyByteArray_Size(args[2]) % 8 || PyByteArray_Size(args[3]) != PyByteArray_Size(args[2]) || first < 0 ||
        first + m > n) {
        PyErr_SetString(PyExc_ValueError, "up_the_tree: totals of as many doubles, and the parents' spans in them");
        return NULL;
    }
    const long long *parent = (const long long *)PyBytes_AsString(args[0]);
    double *total = (double *)PyByteArray_AsString(args[2]), *true_total = (double *)PyByteArray_AsString(args[3]);
    for (Py_ssize_t j = m - 1; j >= 0; j--) {
        long long up = parent[j];
        if (up < 0) continue;
        if (up >= n) {
            PyErr_SetString(PyExc_IndexError, "index out of bounds on dimension 1");  /* the twin's memoryview's */
            return NULL;
        }
        total[up] += total[first + j];
        true_total[up] += true_total[first + j];
    }
    Py_RETURN_NONE;
}

/* innermost(starts, ends, base, times, lasts, stack, tops, pushed): key_averages.pure_innermost's loop for times in
 * order (each with `last`, the latest span starting at or before it), the spans from `base` on at hand: (the times
 * answered, the spans pushed after them, each answered time's innermost span as int64 bytes). It stops early where
 * a time needs a span past those at hand: the caller hands the next ones (base = pushed) and the times left. */
static PyObject *core_innermost(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 8) {
        PyErr_SetString(PyExc_TypeError, "innermost(starts, ends, base, times, lasts, stack, tops, pushed)");
        return NULL;
    }
    Py_ssize_t spans = items8(args[0], "innermost's starts"), times = spans < 0 ? -1 : items8(args[3], "innermost's times");
    if (spans < 0 || times < 0 || items8(args[1], "innermost's ends") != spans || items8(args[4], "innermost's lasts") != times) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "innermost: as many ends as starts, lasts as times");
        return NULL;
    }
    long long base = PyLong_AsLongLong(args[2]), pushed = base == -1 && PyErr_Occurred() ? -1 : PyLong_AsLongLong(args[7]);
    if (PyErr_Occurred()) return NULL;
    if (base < 0 || pushed < base) {  /* pushed - base below: never an overflow */
        PyErr_SetString(PyExc_ValueError, "innermost: the spans at hand start at or before the next to push");
        return NULL;
    }
    Py_ssize_t k;
    PyObject *out = sweep_begin(args[5], args[6], spans, times, &k);
    if (!out) return NULL;
    const double *starts = (const double *)PyBytes_AsString(args[0]), *ends = (const double *)PyBytes_AsString(args[1]);
    const double *t = (const double *)PyBytes_AsString(args[3]);
    const long long *lasts = (const long long *)PyBytes_AsString(args[4]);
    long long *found = (long long *)PyBytes_AsString(out), *stack = (long long *)PyByteArray_AsString(args[5]);
    double *tops = (double *)PyByteArray_AsString(args[6]);
    Py_ssize_t j = 0;
    for (; j < times; j++) {
        long long last = lasts[j];
        while (pushed <= last && pushed - base < spans) {
            Py_ssize_t at = (Py_ssize_t)(pushed - base);
            k = sweep_pop(tops, k, starts[at], ends[at]);
            stack[k] = pushed, tops[k] = ends[at], k++;
            pushed++;
        }
        if (pushed <= last) break;  /* spans past those at hand: the caller's next call */
        while (k > 1 && tops[k - 1] <= t[j]) k--;
        found[j] = last >= 0 ? stack[k - 1] : -1;
    }
    if (sweep_done(args[5], args[6], k) < 0) {
        Py_DECREF(out);
        return NULL;
    }
    if (j < times) {  /* the answered ones only */
        PyObject *part = PyBytes_FromStringAndSize((const char *)found, 8 * j);
        Py_DECREF(out);
        out = part;
    }
    PyObject *items[3] = {PyLong_FromSsize_t(j), PyLong_FromLongLong(pushed), out};
    return tuple_of(items, 3);
}

/* ==== serialize.clean ==== */

/* serialize.pure_clean, compiled: every document warpwizard writes is cleaned into plain JSON data (a big trace
 * report's 100,000 values, cleaned three times, were 19 ms of a 101 MB inspection). The exact built-in types here,
 * in the twin's order; anything else is `other`'s (serialize._clean_other), and a float that is not finite is
 * `non_finite`'s (its spelling). Containers are copied as the twin's comprehensions copy them: a dict's key before
 * its value, a list read by index while it lasts, a dict that changes size, or gives more keys than it held, while
 * it is read refused with the words of Python's iteration. Nesting: a level a container, where the twin takes two
 * frames (its function and its comprehension, Python 3.11): past half the recursion limit the twin fails first
 * (a report nests a few levels). */
static PyObject *clean_value(PyObject *v, PyObject *other, PyObject *non_finite);

static PyObject *clean_dict(PyObject *v, PyObject *other, PyObject *non_finite) {
    PyObject *out = PyDict_New();
    Py_ssize_t pos = 0, size = PyDict_Size(v), seen = 0;
    PyObject *key, *value;
    while (out && PyDict_Next(v, &pos, &key, &value)) {
        if (seen++ == size) {  /* more than it held: keys taken out and others put in (Python's dict iterator) */
            PyErr_SetString(PyExc_RuntimeError, "dictionary keys changed during iteration");
            Py_CLEAR(out);
            break;
        }
        Py_INCREF(key);
        Py_INCREF(value);  /* held: the code a key's str or a value's cleaning runs may change the dict */
        PyObject *k = PyUnicode_CheckExact(key) ? new_ref(key) : PyObject_Str(key);
        PyObject *c = k ? clean_value(value, other, non_finite) : NULL;
        if (c && PyDict_Size(v) != size) {
            PyErr_SetString(PyExc_RuntimeError, "dictionary changed size during iteration");
            Py_CLEAR(c);
        }
        if (!c || PyDict_SetItem(out, k, c) < 0) Py_CLEAR(out);
        Py_XDECREF(c);
        Py_XDECREF(k);
        Py_DECREF(value);
        Py_DECREF(key);
    }
    return out;
}

static PyObject *clean_list(PyObject *v, PyObject *other, PyObject *non_finite) {
    int list = PyList_CheckExact(v);
    PyObject *out = PyList_New(0);
    for (Py_ssize_t i = 0; out && i < (list ? PyList_Size(v) : PyTuple_Size(v)); i++) {
        PyObject *item = list ? PyList_GetItem(v, i) : PyTuple_GetItem(v, i);
        if (!item) {
            Py_CLEAR(out);
            break;
        }
        Py_INCREF(item);  /* held: cleaning it may run code that shrinks the list */
        PyObject *c = clean_value(item, other, non_finite);
        Py_DECREF(item);
        if (!c || PyList_Append(out, c) < 0) Py_CLEAR(out);
        Py_XDECREF(c);
    }
    return out;
}

static PyObject *clean_value(PyObject *v, PyObject *other, PyObject *non_finite) {
    if (PyUnicode_CheckExact(v) || PyLong_CheckExact(v) || v == Py_None || PyBool_Check(v)) return new_ref(v);
    if (PyFloat_CheckExact(v))
        return isfinite(PyFloat_AsDouble(v)) ? new_ref(v) : PyObject_CallFunctionObjArgs(non_finite, v, NULL);
    int dict = PyDict_CheckExact(v);
    if (!dict && !PyList_CheckExact(v) && !PyTuple_CheckExact(v)) return PyObject_CallFunctionObjArgs(other, v, NULL);
    if (Py_EnterRecursiveCall(" while cleaning a document")) return NULL;
    PyObject *out = dict ? clean_dict(v, other, non_finite) : clean_list(v, other, non_finite);
    Py_LeaveRecursiveCall();
    return out;
}

/* clean(value, other, non_finite): serialize.pure_clean's plain JSON data */
static PyObject *core_clean(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 3 || !PyCallable_Check(args[1]) || !PyCallable_Check(args[2])) {
        PyErr_SetString(PyExc_TypeError, "clean takes (value, other, non_finite), the last two callables");
        return NULL;
    }
    return clean_value(args[0], args[1], args[2]);
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
    {"split_run", (PyCFunction)(void (*)(void))core_split_run, METH_FASTCALL,
     "perfetto.pure_split_packets, compiled: the packets a Run lying in the buffer"},
    {"track_event", (PyCFunction)(void (*)(void))core_track_event_named, METH_FASTCALL,
     "perfetto.pure_track_event, compiled"},
    {"bind_events", (PyCFunction)(void (*)(void))core_bind_events, METH_FASTCALL,
     "hand over perfetto's event twins, tables and bounds"},
    {"bind_slices", (PyCFunction)(void (*)(void))core_bind_slices, METH_FASTCALL,
     "hand over perfetto's Event types, categories and bounds; the Slices type"},
    {"collect_events", (PyCFunction)(void (*)(void))core_collect_events, METH_FASTCALL,
     "collector.pure_collect_events, compiled"},
    {"scan_events", (PyCFunction)(void (*)(void))core_scan_events, METH_FASTCALL,
     "a block of JSON events collected from its bytes, or declined"},
    {"scan_release", (PyCFunction)core_scan_release, METH_NOARGS,
     "the arrays scan_events keeps from one block for the next, freed: the bytes they held"},
    {"json_bind", (PyCFunction)(void (*)(void))core_json_bind, METH_FASTCALL,
     "hand over the JSON collector's categories, MAX_NAME and twins"},
    {"int64_array", (PyCFunction)(void (*)(void))core_int64_array, METH_FASTCALL,
     "sqlite_columns.pure_int64_array, compiled"},
    {"quote_counts", (PyCFunction)(void (*)(void))core_quote_counts, METH_FASTCALL,
     "scan.pure_quote_counts, compiled"},
    {"parents", (PyCFunction)(void (*)(void))core_parents, METH_FASTCALL, "key_averages.pure_parents, compiled"},
    {"up_the_tree", (PyCFunction)(void (*)(void))core_up_the_tree, METH_FASTCALL,
     "key_averages.pure_up_the_tree, compiled, a chunk of spans at a time"},
    {"innermost", (PyCFunction)(void (*)(void))core_innermost, METH_FASTCALL,
     "key_averages.pure_innermost's sweep, compiled"},
    {"clean", (PyCFunction)(void (*)(void))core_clean, METH_FASTCALL, "serialize.pure_clean, compiled"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "wizard._core", "warpwizard's compiled core (protobuf.py's twins)", -1, methods,
    NULL, NULL, NULL, NULL,
};

/* API: the version of these functions' arguments and meaning that wizard/compiled_core.py binds (raised with it) */
#define CORE_API 12

PyMODINIT_FUNC PyInit__core(void) {
    PyObject *m = PyModule_Create(&module);
    if (m && PyModule_AddIntConstant(m, "API", CORE_API) < 0) Py_CLEAR(m);
    if (m && !memo_type && !(memo_type = (PyTypeObject *)PyType_FromSpec(&memo_spec))) Py_CLEAR(m);
    if (m && PyModule_AddObject(m, "Memo", new_ref((PyObject *)memo_type)) < 0) {
        Py_DECREF(memo_type);
        Py_CLEAR(m);
    }
    nogil_strtod_init();  /* before any ScanAhead's thread reads it */
#if SCAN_AHEAD
    static int forks_known = 0;
    if (m && !forks_known && pthread_atfork(NULL, NULL, key_tables_after_fork) == 0) forks_known = 1;
#endif
    if (m && !ahead_type && !(ahead_type = (PyTypeObject *)PyType_FromSpec(&ahead_spec))) Py_CLEAR(m);
    if (m && PyModule_AddObject(m, "ScanAhead", new_ref((PyObject *)ahead_type)) < 0) {
        Py_DECREF(ahead_type);
        Py_CLEAR(m);
    }
    return m;
}
