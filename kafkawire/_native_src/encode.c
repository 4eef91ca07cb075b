#include "records.h"

#include <structmember.h>
#include <string.h>
#include <time.h>

/* RecordWriter, the C base of RecordBatchBuilder (issue 26).
 * RecordBatchBuilder keeps its state in these members (the Python code reads and writes them
 * as attributes) and, with the extension, its append is RecordWriter.append: the arguments
 * the C code takes as they come (bytes or None keys/values/header values, str or bytes header
 * keys in a list or tuple of 2-tuples, ints within int64) are encoded here, with the checks
 * and messages of the pure append; anything else (a memoryview key, a generator of headers,
 * huge ints, a header key UTF-8 cannot encode) is handed, untouched, to the pure append
 * (builder.py registers it with set_pure_append), so both paths agree by construction there. */

typedef struct {
    PyObject_HEAD
    PyObject *records;          /* _records: a bytearray */
    Py_ssize_t count;           /* _count */
    long long last_offset_delta;/* _last_offset_delta */
    PyObject *max_timestamp;    /* _max_record_timestamp: an int */
    PyObject *base_timestamp;   /* base_timestamp: None or an int */
} RecordWriter;

static PyObject *pure_append = NULL;

static int writer_traverse(RecordWriter *self, visitproc visit, void *arg) {
    Py_VISIT(Py_TYPE(self));
    Py_VISIT(self->records);
    Py_VISIT(self->max_timestamp);
    Py_VISIT(self->base_timestamp);
    return 0;
}

static int writer_clear(RecordWriter *self) {
    Py_CLEAR(self->records);
    Py_CLEAR(self->max_timestamp);
    Py_CLEAR(self->base_timestamp);
    return 0;
}

static void writer_dealloc(RecordWriter *self) {
    PyObject_GC_UnTrack(self);
    writer_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int varint_size(uint64_t v) {
    int n = 1;
    while (v > 0x7F) {
        v >>= 7;
        n++;
    }
    return n;
}

static inline char *put_varint(char *out, uint64_t v) {
    while (v > 0x7F) {
        *out++ = (char)((v & 0x7F) | 0x80);
        v >>= 7;
    }
    *out++ = (char)v;
    return out;
}

/* An exact int that fits int64 (else 0: the pure append takes the call). */
static int as_int64(PyObject *o, int64_t *out) {
    if (!PyLong_CheckExact(o))
        return 0;
    int overflow;
    long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (overflow || (v == -1 && PyErr_Occurred())) {
        PyErr_Clear();
        return 0;
    }
    *out = v;
    return 1;
}

#define MAX_FAST_HEADERS 64
typedef struct {
    const char *key;
    Py_ssize_t key_len;
    PyObject *key_bytes;  /* owned when the key needed surrogateescape */
    PyObject *value;      /* borrowed: bytes or None */
} FastHeader;

/* The headers as the fast path takes them, or -1: hand the call to the pure append. */
static Py_ssize_t fast_headers(PyObject *headers, FastHeader *out) {
    if (headers == Py_None || !(PyList_CheckExact(headers) || PyTuple_CheckExact(headers))) {
        if (PyObject_IsTrue(headers) == 0)  /* falsy (None, ()) means none, as `if headers:` */
            return 0;
        PyErr_Clear();
        return -1;
    }
    Py_ssize_t n = PySequence_Fast_GET_SIZE(headers);
    if (n > MAX_FAST_HEADERS)
        return -1;
    PyObject **items = PySequence_Fast_ITEMS(headers);
    for (Py_ssize_t i = 0; i < n; i++) {
        out[i].key_bytes = NULL;
        PyObject *pair = items[i];
        if (!PyTuple_CheckExact(pair) || PyTuple_GET_SIZE(pair) != 2)
            goto slow;
        PyObject *k = PyTuple_GET_ITEM(pair, 0), *v = PyTuple_GET_ITEM(pair, 1);
        if (v != Py_None && !PyBytes_CheckExact(v))
            goto slow;
        out[i].value = v;
        if (PyBytes_CheckExact(k)) {
            out[i].key = PyBytes_AS_STRING(k);
            out[i].key_len = PyBytes_GET_SIZE(k);
        } else if (PyUnicode_CheckExact(k)) {
            out[i].key = PyUnicode_AsUTF8AndSize(k, &out[i].key_len);
            if (out[i].key == NULL) {  /* surrogates: what surrogateescape gives back */
                PyErr_Clear();
                out[i].key_bytes = PyUnicode_AsEncodedString(k, "utf-8", "surrogateescape");
                if (out[i].key_bytes == NULL) {
                    PyErr_Clear();
                    goto slow;
                }
                out[i].key = PyBytes_AS_STRING(out[i].key_bytes);
                out[i].key_len = PyBytes_GET_SIZE(out[i].key_bytes);
            }
        } else {
            goto slow;
        }
        continue;
    slow:
        for (Py_ssize_t j = 0; j < i; j++)
            Py_XDECREF(out[j].key_bytes);
        return -1;
    }
    return n;
}

static Py_ssize_t nullable_size(PyObject *b) {
    if (b == Py_None)
        return 1;
    Py_ssize_t n = PyBytes_GET_SIZE(b);
    return varint_size((uint64_t)n << 1) + n;
}

static char *put_nullable(char *out, PyObject *b) {
    if (b == Py_None) {
        *out++ = 1;  /* zigzag(-1): null */
        return out;
    }
    Py_ssize_t n = PyBytes_GET_SIZE(b);
    out = put_varint(out, (uint64_t)n << 1);
    memcpy(out, PyBytes_AS_STRING(b), n);
    return out + n;
}

static PyObject *forward_to_pure(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
    if (pure_append == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "RecordWriter: no pure append registered");
        return NULL;
    }
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    Py_ssize_t total = nargs + (kwnames ? PyTuple_GET_SIZE(kwnames) : 0);
    PyObject *stack[16];
    if (total + 1 > 16) {
        PyErr_SetString(PyExc_TypeError, "append() takes at most 7 arguments");
        return NULL;
    }
    stack[0] = self;
    memcpy(stack + 1, args, total * sizeof(PyObject *));
    return PyObject_Vectorcall(pure_append, stack, (size_t)(nargs + 1), kwnames);
}

typedef struct {
    PyObject *key, *value, *headers, *timestamp, *offset_delta, *timestamp_delta, *attributes;
} AppendArgs;

/* append's signature: (key, value, headers=(), timestamp=None, *, offset_delta=None,
 * timestamp_delta=None, attributes=0); 0 when the call is not one the fast path parses. */
static int parse_append(PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames, AppendArgs *a) {
    static const char *positional[] = {"key", "value", "headers", "timestamp"};
    PyObject **slots[] = {&a->key, &a->value, &a->headers, &a->timestamp, &a->offset_delta,
                          &a->timestamp_delta, &a->attributes};
    static const char *names[] = {"key", "value", "headers", "timestamp", "offset_delta", "timestamp_delta",
                                  "attributes"};
    memset(a, 0, sizeof(*a));
    if (nargs > 4)
        return 0;
    for (Py_ssize_t i = 0; i < nargs; i++)
        *slots[i] = args[i];
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    for (Py_ssize_t k = 0; k < nkw; k++) {
        PyObject *name = PyTuple_GET_ITEM(kwnames, k);
        int found = 0;
        for (int s = 0; s < 7 && !found; s++) {
            if (PyUnicode_CompareWithASCIIString(name, names[s]) == 0) {
                if (*slots[s] != NULL)
                    return 0;  /* given twice: the pure append says so */
                *slots[s] = args[nargs + k];
                found = 1;
            }
        }
        if (!found)
            return 0;
    }
    (void)positional;
    return a->key != NULL && a->value != NULL;
}

static PyObject *value_error(const char *fmt, ...) {
    va_list va;
    va_start(va, fmt);
    PyObject *msg = PyUnicode_FromFormatV(fmt, va);
    va_end(va);
    if (msg != NULL) {
        PyErr_SetObject(PyExc_ValueError, msg);
        Py_DECREF(msg);
    }
    return NULL;
}

static int64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)(((double)ts.tv_sec + ts.tv_nsec * 1e-9) * 1000.0);  /* int(time.time() * 1000) */
}

static PyObject *writer_append(PyObject *self_obj, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
    RecordWriter *self = (RecordWriter *)self_obj;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    AppendArgs a;
    int64_t offset_delta = 0, timestamp = 0, ts_delta = 0, attributes = 0, base_ts = 0, max_ts = 0;
    FastHeader headers[MAX_FAST_HEADERS];
    Py_ssize_t n_headers = 0;
    int have_base = 0;
    /* 1. Is this a call the fast path takes? (Nothing is changed before the answer.) */
    if (!parse_append(args, nargs, kwnames, &a)
            || (a.key != Py_None && !PyBytes_CheckExact(a.key))
            || (a.value != Py_None && !PyBytes_CheckExact(a.value))
            || (a.offset_delta != NULL && a.offset_delta != Py_None && !as_int64(a.offset_delta, &offset_delta))
            || (a.timestamp != NULL && a.timestamp != Py_None && !as_int64(a.timestamp, &timestamp))
            || (a.timestamp_delta != NULL && a.timestamp_delta != Py_None && !as_int64(a.timestamp_delta, &ts_delta))
            || (a.attributes != NULL && !as_int64(a.attributes, &attributes))
            || self->records == NULL || !PyByteArray_CheckExact(self->records)
            || self->max_timestamp == NULL || !as_int64(self->max_timestamp, &max_ts)
            || (self->base_timestamp != NULL && self->base_timestamp != Py_None
                && !(have_base = as_int64(self->base_timestamp, &base_ts))))
        return forward_to_pure(self_obj, args, nargsf, kwnames);
    if (a.headers != NULL && (n_headers = fast_headers(a.headers, headers)) < 0)
        return forward_to_pure(self_obj, args, nargsf, kwnames);
    PyObject *result = NULL;
    int has_offset_delta = a.offset_delta != NULL && a.offset_delta != Py_None;
    int has_ts = a.timestamp != NULL && a.timestamp != Py_None;
    int has_ts_delta = a.timestamp_delta != NULL && a.timestamp_delta != Py_None;
    /* 2. The pure append's checks, in its order, with its messages. */
    if (!has_offset_delta) {
        offset_delta = self->last_offset_delta + 1;
    } else if (offset_delta <= self->last_offset_delta) {
        value_error("offset delta %lld does not follow %lld", (long long)offset_delta, self->last_offset_delta);
        goto done;
    }
    if (!(offset_delta >= 0 && offset_delta <= 0x7FFFFFFF)) {
        value_error("offset delta %lld out of range", (long long)offset_delta);
        goto done;
    }
    if (!has_ts_delta) {
        if (!has_ts)
            timestamp = now_ms();
        else if (timestamp < 0 && timestamp != -1) {
            value_error("invalid negative timestamp %lld", (long long)timestamp);
            goto done;
        }
        if (!have_base) {
            base_ts = timestamp;
            PyObject *b = PyLong_FromLongLong(base_ts);
            if (b == NULL)
                goto done;
            Py_XSETREF(self->base_timestamp, b);
        }
        if (__builtin_sub_overflow(timestamp, base_ts, &ts_delta)) {  /* beyond int64: pure's business */
            result = forward_to_pure(self_obj, args, nargsf, kwnames);
            goto done;
        }
    } else {
        if (has_ts) {
            value_error("give timestamp or timestamp_delta, not both");
            goto done;
        }
        if (!have_base) {
            value_error("timestamp_delta needs an explicit base_timestamp");
            goto done;
        }
        if (__builtin_add_overflow(base_ts, ts_delta, &timestamp)) {
            result = forward_to_pure(self_obj, args, nargsf, kwnames);
            goto done;
        }
    }
    if (timestamp > max_ts) {
        PyObject *m = PyLong_FromLongLong(timestamp);
        if (m == NULL)
            goto done;
        Py_XSETREF(self->max_timestamp, m);
    }
    /* 3. The record: sizes first, then written straight into the bytearray. */
    uint64_t z_ts = ((uint64_t)ts_delta << 1) ^ (uint64_t)(ts_delta >> 63);
    Py_ssize_t body = 1 + varint_size(z_ts) + varint_size((uint64_t)offset_delta << 1)
                      + nullable_size(a.key) + nullable_size(a.value);
    if (n_headers == 0) {
        body += 1;
    } else {
        body += varint_size((uint64_t)n_headers << 1);
        for (Py_ssize_t h = 0; h < n_headers; h++)
            body += varint_size((uint64_t)headers[h].key_len << 1) + headers[h].key_len
                    + nullable_size(headers[h].value);
    }
    Py_ssize_t old = PyByteArray_GET_SIZE(self->records);
    Py_ssize_t total = varint_size((uint64_t)body << 1) + body;
    if (PyByteArray_Resize(self->records, old + total) < 0)
        goto done;
    char *out = PyByteArray_AS_STRING(self->records) + old;
    out = put_varint(out, (uint64_t)body << 1);
    *out++ = (char)(attributes & 0xFF);
    out = put_varint(out, z_ts);
    out = put_varint(out, (uint64_t)offset_delta << 1);
    out = put_nullable(out, a.key);
    out = put_nullable(out, a.value);
    if (n_headers == 0) {
        *out++ = 0;
    } else {
        out = put_varint(out, (uint64_t)n_headers << 1);
        for (Py_ssize_t h = 0; h < n_headers; h++) {
            out = put_varint(out, (uint64_t)headers[h].key_len << 1);
            memcpy(out, headers[h].key, headers[h].key_len);
            out += headers[h].key_len;
            out = put_nullable(out, headers[h].value);
        }
    }
    self->count += 1;
    self->last_offset_delta = offset_delta;
    result = PyLong_FromLongLong(offset_delta);
done:
    for (Py_ssize_t h = 0; h < n_headers; h++)
        Py_XDECREF(headers[h].key_bytes);
    return result;
}

/* append_values(values, timestamp): many records of a value each (no key, no headers,
 * attributes 0, offset deltas following the last, all at ``timestamp``) in one call: the raft
 * leader's batch of a Propose, ~1000 records, written with one resize instead of an append
 * call per record. It is, by definition, the pure append called once per value
 * (RecordBatchBuilder._append_values_pure, its oracle); any call outside what is checked here
 * (not a list or tuple of bytes/None, a timestamp that is not an int the pure append takes
 * as is, offsets or timestamps past their range) is handed to that method untouched, before
 * anything is changed, so both paths agree there by construction. */
static PyObject *writer_append_values(PyObject *self_obj, PyObject *const *args, Py_ssize_t nargs) {
    RecordWriter *self = (RecordWriter *)self_obj;
    int64_t timestamp = 0, base_ts = 0, max_ts = 0, ts_delta = 0;
    int have_base = 0;
    if (nargs != 2)
        goto slow;
    PyObject *values = args[0];
    if (!(PyList_CheckExact(values) || PyTuple_CheckExact(values))
            || !as_int64(args[1], &timestamp) || (timestamp < 0 && timestamp != -1)
            || self->records == NULL || !PyByteArray_CheckExact(self->records)
            || self->max_timestamp == NULL || !as_int64(self->max_timestamp, &max_ts)
            || (self->base_timestamp != NULL && self->base_timestamp != Py_None
                && !(have_base = as_int64(self->base_timestamp, &base_ts))))
        goto slow;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(values);
    PyObject **items = PySequence_Fast_ITEMS(values);
    if (n == 0)
        return PyLong_FromLongLong(self->last_offset_delta);
    if (self->last_offset_delta + n > 0x7FFFFFFF)
        goto slow;                   /* an offset delta out of range: the pure append says which */
    if (!have_base)
        base_ts = timestamp;
    if (__builtin_sub_overflow(timestamp, base_ts, &ts_delta))
        goto slow;
    /* Sizes first (every item checked before anything changes), then one resize. */
    uint64_t z_ts = ((uint64_t)ts_delta << 1) ^ (uint64_t)(ts_delta >> 63);
    int ts_size = varint_size(z_ts);
    Py_ssize_t total = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *v = items[i];
        if (v != Py_None && !PyBytes_CheckExact(v))
            goto slow;
        int64_t offset_delta = self->last_offset_delta + 1 + i;
        /* attributes, timestamp delta, offset delta, null key, value, no headers */
        Py_ssize_t body = 1 + ts_size + varint_size((uint64_t)offset_delta << 1) + 1 + nullable_size(v) + 1;
        total += varint_size((uint64_t)body << 1) + body;
    }
    if (!have_base) {
        PyObject *b = PyLong_FromLongLong(base_ts);
        if (b == NULL)
            return NULL;
        Py_XSETREF(self->base_timestamp, b);
    }
    if (timestamp > max_ts) {
        PyObject *m = PyLong_FromLongLong(timestamp);
        if (m == NULL)
            return NULL;
        Py_XSETREF(self->max_timestamp, m);
    }
    Py_ssize_t old = PyByteArray_GET_SIZE(self->records);
    if (PyByteArray_Resize(self->records, old + total) < 0)
        return NULL;
    char *out = PyByteArray_AS_STRING(self->records) + old;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *v = items[i];
        uint64_t offset_z = (uint64_t)(self->last_offset_delta + 1 + i) << 1;
        Py_ssize_t body = 1 + ts_size + varint_size(offset_z) + 1 + nullable_size(v) + 1;
        out = put_varint(out, (uint64_t)body << 1);
        *out++ = 0;
        out = put_varint(out, z_ts);
        out = put_varint(out, offset_z);
        *out++ = 1;                  /* zigzag(-1): a null key */
        out = put_nullable(out, v);
        *out++ = 0;                  /* no headers */
    }
    self->count += n;
    self->last_offset_delta += n;
    return PyLong_FromLongLong(self->last_offset_delta);
slow:
    {
        PyObject *method = PyObject_GetAttrString(self_obj, "_append_values_pure");
        if (method == NULL)
            return NULL;
        PyObject *result = PyObject_Vectorcall(method, args, (size_t)nargs, NULL);
        Py_DECREF(method);
        return result;
    }
}

PyObject *kw_set_pure_append(PyObject *module, PyObject *func) {
    Py_XSETREF(pure_append, Py_NewRef(func));
    Py_RETURN_NONE;
}

static PyMemberDef writer_members[] = {
    {"_records", T_OBJECT_EX, offsetof(RecordWriter, records), 0, NULL},
    {"_count", T_PYSSIZET, offsetof(RecordWriter, count), 0, NULL},
    {"_last_offset_delta", T_LONGLONG, offsetof(RecordWriter, last_offset_delta), 0, NULL},
    {"_max_record_timestamp", T_OBJECT_EX, offsetof(RecordWriter, max_timestamp), 0, NULL},
    {"base_timestamp", T_OBJECT, offsetof(RecordWriter, base_timestamp), 0, NULL},
    {NULL, 0, 0, 0, NULL},
};

static PyMethodDef writer_methods[] = {
    {"append", (PyCFunction)(void (*)(void))writer_append, METH_FASTCALL | METH_KEYWORDS,
     "append($self, key, value, headers=(), timestamp=None, *, offset_delta=None, timestamp_delta=None, "
     "attributes=0)\n--\n\n"
     "Add a record; returns its offset delta (RecordBatchBuilder._append_pure's docstring says how; this is "
     "the same in C)."},
    {"append_values", (PyCFunction)(void (*)(void))writer_append_values, METH_FASTCALL,
     "append_values($self, values, timestamp, /)\n--\n\n"
     "append(None, value, (), timestamp) for each value, in one call; returns the last offset delta "
     "(RecordBatchBuilder._append_values_pure is its definition)."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject RecordWriterType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "kafkawire._native_records.RecordWriter",
    .tp_basicsize = sizeof(RecordWriter),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "The state and the append of RecordBatchBuilder, in C.",
    .tp_traverse = (traverseproc)writer_traverse,
    .tp_clear = (inquiry)writer_clear,
    .tp_dealloc = (destructor)writer_dealloc,
    .tp_methods = writer_methods,
    .tp_members = writer_members,
    .tp_new = PyType_GenericNew,
};

int kw_encode_init(PyObject *module) {
    if (PyType_Ready(&RecordWriterType) < 0)
        return -1;
    return PyModule_AddObjectRef(module, "RecordWriter", (PyObject *)&RecordWriterType);
}
