/* The native message encoder (issue 26): the twin of the generated Python encoders, walking the
 * decoder's programs (a version's wire fields in order, its absent fields with their defaults,
 * its tagged fields).
 *
 * A message of a few KB is written in one pass into a buffer on the stack; a larger one in two
 * passes: the first sizes it, the second writes into a bytes object of exactly that size, so
 * every value (record batches above all) is copied once. It takes on
 * only what it can write exactly as the Python encoder would: exact ints, floats, str, bytes,
 * bytearray and byte memoryviews, lists and tuples, instances of the program's own classes,
 * absent and tagged fields at (or plainly off) their defaults, no unknown tagged fields. For
 * anything else it gives up (NULL) and the pure encoder runs, which writes the same bytes or
 * raises the error it always raised. */
#include "message.h"

#include <string.h>

typedef struct {
    uint8_t *out;          /* NULL: the sizing pass */
    Py_ssize_t n, cap;     /* bytes written (or counted), and the room there is */
    int full;              /* set when a value did not fit in the room there is */
} Enc;

/* Messages up to this size are written in one pass into a buffer on the stack, then copied into
 * the bytes object: cheaper than sizing them first. Larger ones (record batches above all) are
 * sized, then written straight into a bytes object of that size, so every value is copied once. */
#define ONE_PASS_ROOM 4096

#define SLOT(obj, offset) (*(PyObject **)((char *)(obj) + (offset)))

static PyTypeObject *uuid_type;
static Py_ssize_t uuid_int_offset;

static int put(Enc *e, const void *p, Py_ssize_t len) {
    if (len > e->cap - e->n) {
        e->full = 1;   /* beyond the one-pass buffer, or a value changed between the passes */
        return -1;
    }
    if (e->out != NULL)
        memcpy(e->out + e->n, p, len);
    e->n += len;
    return 0;
}

static inline int put_be(Enc *e, uint64_t v, int size) {
    if (size > e->cap - e->n) {
        e->full = 1;
        return -1;
    }
    if (e->out != NULL) {
        uint8_t *at = e->out + e->n;
        for (int i = size - 1; i >= 0; i--, v >>= 8)
            at[i] = (uint8_t)v;
    }
    e->n += size;
    return 0;
}

static int put_uvarint(Enc *e, uint64_t v) {
    uint8_t b[5];
    int n = 0;
    if (v > 0xFFFFFFFFu)
        return -1;
    while (v >= 0x80) {
        b[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    b[n++] = (uint8_t)v;
    return put(e, b, n);
}

/* An int as struct.pack packs it for the kind, refusing what it would refuse. */
static int put_int(Enc *e, int kind, PyObject *value) {
    static const int64_t low[] = {0, -128, -32768, 0, INT32_MIN, 0, INT64_MIN};
    static const int64_t high[] = {0, 127, 32767, 65535, INT32_MAX, UINT32_MAX, INT64_MAX};
    static const int size[] = {0, 1, 2, 2, 4, 4, 8};
    if (!PyLong_Check(value))
        return -1;
    int overflow;
    long long v = PyLong_AsLongLongAndOverflow(value, &overflow);
    if (overflow || (v == -1 && PyErr_Occurred()) || v < low[kind] || v > high[kind])
        return -1;
    return put_be(e, (uint64_t)v, size[kind]);
}

static int put_fixed(Enc *e, int kind, PyObject *value) {
    if (kind == K_BOOL) {
        int truth = PyObject_IsTrue(value);   /* struct's '?' packs any object's truth */
        uint8_t b = (uint8_t)truth;
        return truth < 0 ? -1 : put(e, &b, 1);
    }
    if (kind == K_FLOAT64) {
        uint8_t b[8];
        if (!PyFloat_CheckExact(value) || PyFloat_Pack8(PyFloat_AS_DOUBLE(value), (char *)b, 0) < 0)
            return -1;
        return put(e, b, 8);
    }
    if (kind == K_UUID) {
        uint8_t b[16];
        PyObject *i = Py_TYPE(value) == uuid_type ? SLOT(value, uuid_int_offset) : NULL;
        if (i == NULL || !PyLong_CheckExact(i) || _PyLong_AsByteArray((PyLongObject *)i, b, 16, 0, 0) < 0)
            return -1;
        return put(e, b, 16);
    }
    return put_int(e, kind, value);
}

/* A length prefix: int16 (strings), int32 (bytes, arrays) or a compact varint of n + 1. */
static int put_length(Enc *e, int compact, int wide, Py_ssize_t n) {
    if (compact)
        return put_uvarint(e, (uint64_t)n + 1);
    if (n > (wide ? INT32_MAX : 0x7FFF))
        return -1;
    return put_be(e, (uint64_t)n, wide ? 4 : 2);
}

static int put_null(Enc *e, int compact, int wide) {
    static const uint8_t ff[4] = {0xFF, 0xFF, 0xFF, 0xFF};
    static const uint8_t zero = 0;
    return compact ? put(e, &zero, 1) : put(e, ff, wide ? 4 : 2);
}

/* A memoryview of bytes (len() counts bytes only when items are bytes), through the buffer
 * protocol: a view released meanwhile fails here instead of being read. */
static int put_view(Enc *e, int compact, PyObject *value) {
    Py_buffer *shape = PyMemoryView_GET_BUFFER(value);
    if (shape->ndim != 1 || shape->itemsize != 1)
        return -1;
    Py_buffer view;
    if (PyObject_GetBuffer(value, &view, PyBUF_SIMPLE) < 0)
        return -1;
    int rc = put_length(e, compact, 1, view.len) < 0 ? -1 : put(e, view.buf, view.len);
    PyBuffer_Release(&view);
    return rc;
}

static int put_span(Enc *e, int kind, int flags, PyObject *value) {
    int compact = flags & F_COMPACT, wide = kind != K_STRING;
    if (value == Py_None)
        return flags & F_NULLABLE ? put_null(e, compact, wide) : -1;
    const char *p;
    Py_ssize_t n;
    if (kind == K_STRING) {
        if (!PyUnicode_CheckExact(value) || (p = PyUnicode_AsUTF8AndSize(value, &n)) == NULL)
            return -1;
    } else if (PyBytes_CheckExact(value)) {
        p = PyBytes_AS_STRING(value), n = PyBytes_GET_SIZE(value);
    } else if (PyByteArray_CheckExact(value)) {
        p = PyByteArray_AS_STRING(value), n = PyByteArray_GET_SIZE(value);
    } else if (PyMemoryView_Check(value)) {
        return put_view(e, compact, value);
    } else {
        return -1;
    }
    if (put_length(e, compact, wide, n) < 0)
        return -1;
    return put(e, p, n);
}

static int put_struct(Enc *e, const Program *p, PyObject *obj);

static int put_array(Enc *e, const FieldOp *op, PyObject *value) {
    int compact = op->flags & F_COMPACT;
    if (value == Py_None)
        return op->flags & F_NULLABLE ? put_null(e, compact, 1) : -1;
    if (!PyList_CheckExact(value) && !PyTuple_CheckExact(value))
        return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(value);
    if (put_length(e, compact, 1, n) < 0)
        return -1;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (i >= PySequence_Fast_GET_SIZE(value))
            return -1;   /* a comparison's __ne__ shortened the list: let the pure encoder say */
        PyObject *item = PySequence_Fast_GET_ITEM(value, i);
        int kind = op->element, rc;
        if (kind <= K_LAST_FIXED)
            rc = put_fixed(e, kind, item);
        else if (kind == K_STRUCT)
            rc = put_struct(e, op->sub, item);
        else
            rc = put_span(e, kind == K_STRING ? K_STRING : K_BYTES, compact, item);
        if (rc < 0)
            return -1;
    }
    return 0;
}

static int put_value(Enc *e, const FieldOp *op, PyObject *value) {
    int kind = op->kind;
    if (kind <= K_LAST_FIXED)
        return put_fixed(e, kind, value);
    if (kind == K_STRING || kind == K_BYTES || kind == K_RECORDS)
        return put_span(e, kind, op->flags, value);
    if (kind == K_ARRAY)
        return put_array(e, op, value);
    if (kind != K_STRUCT)
        return -1;
    if (op->flags & F_NULLABLE) {
        uint8_t marker = value == Py_None ? (op->flags & F_VARINT_MARKER ? 0 : 0xFF) : 1;
        if (put(e, &marker, 1) < 0)
            return -1;
        if (value == Py_None)
            return 0;
    }
    return put_struct(e, op->sub, value);
}

/* Values whose `!=` is C code without side effects: what a generated struct holds at its defaults. */
static int plain_value(PyObject *v) {
    return v == Py_None || PyLong_CheckExact(v) || PyBool_Check(v) || PyUnicode_CheckExact(v)
           || PyFloat_CheckExact(v) || PyBytes_CheckExact(v);
}

/* `a != b` for two exact uuid.UUIDs, as UUID.__eq__ answers it (their int attributes compared),
 * without calling that Python method: 1 or 0, or -2 when either is not an exact UUID holding an
 * int (-1 with an exception cannot happen for two ints). An absent uuid field (ReplicaDirectoryId
 * of DescribeQuorumResponse v0-v1, ...) whose value is an equal UUID but not the shared
 * ZERO_UUID was compared in Python on every encode: a third of the time of such a message. */
static int uuids_differ(PyObject *a, PyObject *b) {
    if (Py_TYPE(a) != uuid_type || Py_TYPE(b) != uuid_type)
        return -2;
    PyObject *ia = SLOT(a, uuid_int_offset), *ib = SLOT(b, uuid_int_offset);
    if (ia == NULL || ib == NULL || !PyLong_CheckExact(ia) || !PyLong_CheckExact(ib))
        return -2;
    return PyObject_RichCompareBool(ia, ib, Py_NE);
}

/* Whether a lazy struct that was read (so made, perhaps changed in place) differs from the
 * default instance, slot by slot in C: Struct.__eq__'s answer (and the generated encoders'
 * field-by-field one) without a Python call on every encode. 1 or 0, or -1 (no exception set)
 * when only Struct.__eq__ can say: another class, a value of another type, a list that is not
 * empty on both sides, a nested lazy struct read on one side only. */
static int lazy_slots_differ(const FieldOp *d, PyObject *value) {
    if (value == Py_None)
        return 1;
    if (d->lazy_slots == NULL || Py_TYPE(value) != Py_TYPE(d->instance))
        return -1;
    PyObject *unknown = SLOT(value, d->lazy_unknown);
    if (unknown == NULL || !(PyTuple_CheckExact(unknown) || PyList_CheckExact(unknown)))
        return -1;
    if (PySequence_Fast_GET_SIZE(unknown) != 0)
        return 1;
    for (Py_ssize_t i = 0; i < d->n_lazy_slots; i++) {
        PyObject *mine = SLOT(value, d->lazy_slots[i]), *dflt = SLOT(d->instance, d->lazy_slots[i]);
        if (mine == dflt)
            continue;   /* the default's own value (a nested lazy struct never read: _MISSING) */
        if (mine == NULL || dflt == NULL)
            return -1;
        if (PyList_CheckExact(mine) && PyList_CheckExact(dflt)) {
            if (PyList_GET_SIZE(mine) != PyList_GET_SIZE(dflt))
                return 1;   /* list == list compares the lengths first */
            if (PyList_GET_SIZE(mine) != 0)
                return -1;
            continue;
        }
        if (!plain_value(mine) || !plain_value(dflt))
            return -1;
        PyObject *ne = PyObject_RichCompare(mine, dflt, Py_NE);
        if (ne == NULL) {
            PyErr_Clear();
            return -1;
        }
        int truth = PyObject_IsTrue(ne);
        Py_DECREF(ne);
        if (truth != 0)
            return truth < 0 ? (PyErr_Clear(), -1) : 1;
    }
    return 0;
}

/* Whether a value differs from its field's default, as the generated default_compare decides:
 * 1 or 0, or -1 when only the pure encoder can say (a list default that holds a tuple, ...). */
static int differs(const FieldOp *d, PyObject *value) {
    if (value == NULL)
        return -1;
    switch (d->dmode) {
    case D_LIST:
        if (value == Py_None)
            return 1;
        return PyList_CheckExact(value) ? PyList_GET_SIZE(value) != 0 : -1;
    case D_LAZY: {    /* never read (_MISSING), or read and perhaps changed in place */
        if (value == d->value)
            return 0;
        int fast = lazy_slots_differ(d, value);
        return fast >= 0 ? fast : PyObject_RichCompareBool(value, d->instance, Py_NE);
    }
    case D_CALL: {
        PyObject *fresh = PyObject_CallNoArgs(d->value);
        int ne = fresh == NULL ? -1 : PyObject_RichCompareBool(value, fresh, Py_NE);
        Py_XDECREF(fresh);
        return ne;
    }
    default:
        if (value == d->value)
            return 0;
        if (d->value == Py_None)
            return 1;
        int uuid_ne = uuids_differ(value, d->value);
        if (uuid_ne != -2)
            return uuid_ne;
        return PyObject_RichCompareBool(value, d->value, Py_NE);
    }
}

static int unknown_tags_empty(const Program *p, PyObject *obj) {
    PyObject *unknown = SLOT(obj, p->unknown_offset);
    return unknown != NULL && (PyTuple_CheckExact(unknown) || PyList_CheckExact(unknown))
           && PySequence_Fast_GET_SIZE(unknown) == 0;
}

/* The tagged-field section: the fields that differ from their defaults, in the program's order. */
static int put_tags(Enc *e, const Program *p, PyObject *obj) {
    int write[64];
    Py_ssize_t count = 0;
    if (p->n_tags > 64 || !unknown_tags_empty(p, obj))
        return -1;
    for (Py_ssize_t i = 0; i < p->n_tags; i++) {
        write[i] = differs(p->tags[i].dflt, SLOT(obj, p->tags[i].op.offset));
        if (write[i] < 0)
            return -1;
        count += write[i];
    }
    if (put_uvarint(e, (uint64_t)count) < 0)
        return -1;
    for (Py_ssize_t i = 0; i < p->n_tags; i++) {
        if (!write[i])
            continue;
        PyObject *value = SLOT(obj, p->tags[i].op.offset);
        Enc sizing = {NULL, 0, PY_SSIZE_T_MAX, 0};
        if (put_value(&sizing, &p->tags[i].op, value) < 0 || put_uvarint(e, (uint64_t)p->tags[i].tag) < 0
            || put_uvarint(e, (uint64_t)sizing.n) < 0 || put_value(e, &p->tags[i].op, value) < 0)
            return -1;
    }
    return 0;
}

static int put_struct(Enc *e, const Program *p, PyObject *obj) {
    if (Py_TYPE(obj) != p->cls)
        return -1;
    for (Py_ssize_t i = 0; i < p->n_fields; i++) {
        const FieldOp *op = &p->fields[i];
        PyObject *value = SLOT(obj, op->offset);
        if (value == NULL)
            return -1;
        if (op->kind != K_DEFAULT) {
            if (put_value(e, op, value) < 0)
                return -1;
        } else if (!(op->flags & (F_TAGGED_DEFAULT | F_IGNORABLE)) && differs(op, value) != 0) {
            return -1;   /* set in a version without the field: the pure encoder raises */
        }
    }
    if (p->flexible)
        return put_tags(e, p, obj);
    return unknown_tags_empty(p, obj) ? 0 : -1;
}

PyObject *kw_encode_program(const Program *p, PyObject *obj) {
    uint8_t room[ONE_PASS_ROOM];
    Enc small = {room, 0, ONE_PASS_ROOM, 0};
    if (put_struct(&small, p, obj) == 0)
        return PyBytes_FromStringAndSize((const char *)room, small.n);
    if (!small.full)
        return NULL;
    Enc sizing = {NULL, 0, PY_SSIZE_T_MAX, 0};
    if (put_struct(&sizing, p, obj) < 0)
        return NULL;
    PyObject *result = PyBytes_FromStringAndSize(NULL, sizing.n);
    if (result == NULL)
        return NULL;
    Enc writing = {(uint8_t *)PyBytes_AS_STRING(result), 0, sizing.n, 0};
    if (put_struct(&writing, p, obj) < 0 || writing.n != sizing.n) {
        Py_DECREF(result);
        return NULL;
    }
    return result;
}

int kw_encode_messages_init(void) {
    PyObject *mod = PyImport_ImportModule("uuid");
    PyObject *cls = mod == NULL ? NULL : PyObject_GetAttrString(mod, "UUID");
    Py_XDECREF(mod);
    if (cls == NULL || !PyType_Check(cls)) {
        Py_XDECREF(cls);
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_TypeError, "uuid.UUID is not a class");
        return -1;
    }
    uuid_type = (PyTypeObject *)cls;
    return kw_slot_offset(uuid_type, "int", &uuid_int_offset);
}
