/* Record objects from the parser (issue 26): decode_records, the native twin of the pure
 * loop in kafkawire/records/record_decoding.py.
 *
 * decode_records(data, start, end, count, base_offset, base_timestamp, log_append_time,
 *                batch, record_cls) -> (records, error)
 *     Every record of data[start:end] as a record_cls object (Record or ControlRecord: the C
 *     code fills their __slots__ directly, as object.__new__ plus slot stores would), keys,
 *     values and header values as memoryview slices of data. error is None or (reason, pos)
 *     for the first bad record; records holds the ones before it. */
#include "message.h"

#include <structmember.h>
#include <string.h>

/* ---- memoryview slices ----
 * The public Record.key/value are memoryviews. memoryview(data)[a:b] from C costs two ints, a
 * slice object and the view; a copy of the base view (sharing its managed buffer, so the
 * exporter stays alive and locked exactly as with Python slicing) with its start and length
 * moved is one object. The layout it relies on is checked once at import (slices_selftest);
 * if the check fails, PySequence_GetSlice is used. */

static int fast_slices = 0;

static PyObject *mv_slice(PyObject *base, Py_ssize_t start, Py_ssize_t n) {
    if (!fast_slices)
        return PySequence_GetSlice(base, start, start + n);
    PyObject *o = PyMemoryView_FromObject(base);  /* a new view of base's managed buffer */
    if (o == NULL)
        return NULL;
    Py_buffer *view = PyMemoryView_GET_BUFFER(o);
    view->buf = (char *)view->buf + start;
    view->len = n;
    view->shape[0] = n;
    return o;
}

/* memoryview(data)[start:start + n] for the message decoder (message_decode.c: zeroCopy and
 * records fields), made from `source`: data itself, or a view this function made of it. All the
 * views of one message share the managed buffer of the first, which is the first view itself:
 * no base view of the whole message is made (for a message with one such field, that was a
 * third object, made and freed for nothing). */
PyObject *kw_mv_slice_of(PyObject *source, PyObject *data, Py_ssize_t start, Py_ssize_t n) {
    if (!fast_slices) {
        PyObject *base = PyMemoryView_FromObject(data);
        PyObject *slice = base == NULL ? NULL : PySequence_GetSlice(base, start, start + n);
        Py_XDECREF(base);
        return slice;
    }
    PyObject *o = PyMemoryView_FromObject(source);   /* a view of data, or of source's buffer */
    if (o == NULL)
        return NULL;
    Py_buffer *view = PyMemoryView_GET_BUFFER(o);
    view->buf = PyBytes_AS_STRING(data) + start;
    view->len = n;
    view->shape[0] = n;
    return o;
}

static int slices_selftest(void) {
    PyObject *data = PyBytes_FromString("0123456789");
    PyObject *base = data ? PyMemoryView_FromObject(data) : NULL;
    PyObject *fast = NULL, *slow = NULL;
    int ok = 0;
    if (base != NULL) {
        fast_slices = 1;
        fast = mv_slice(base, 2, 3);
        fast_slices = 0;
        slow = PySequence_GetSlice(base, 2, 5);
    }
    if (fast != NULL && slow != NULL) {
        Py_buffer *f = PyMemoryView_GET_BUFFER(fast), *s = PyMemoryView_GET_BUFFER(slow);
        ok = f->len == 3 && f->ndim == 1 && f->shape[0] == 3 && f->strides[0] == 1 && f->itemsize == 1
             && f->readonly == s->readonly && memcmp(f->buf, "234", 3) == 0 && f->buf == s->buf
             && PyObject_RichCompareBool(fast, slow, Py_EQ) == 1 && PyObject_Length(fast) == 3;
    }
    PyErr_Clear();
    Py_XDECREF(fast);
    Py_XDECREF(slow);
    Py_XDECREF(base);
    Py_XDECREF(data);
    return ok;
}

/* ---- the record class's slots ----
 * Record's __slots__ are member descriptors at fixed offsets; storing there is what
 * `r.offset = ...` does, minus the attribute lookup. The offsets are read from the class's
 * descriptors (checked to be object slots of a base of the class) and cached per class. */

enum { S_OFFSET, S_TIMESTAMP, S_KEY, S_VALUE, S_HEADERS, S_ATTRIBUTES, S_TS_DELTA, S_BATCH, N_SLOTS };
static const char *slot_names[N_SLOTS] = {
    "offset", "timestamp", "key", "value", "headers", "attributes", "timestamp_delta", "batch"};

typedef struct {
    PyTypeObject *cls;
    Py_ssize_t offsets[N_SLOTS];
} SlotLayout;

#define N_LAYOUTS 4
static SlotLayout layouts[N_LAYOUTS];

static const SlotLayout *slot_layout(PyObject *cls_obj) {
    if (!PyType_Check(cls_obj)) {
        PyErr_SetString(PyExc_TypeError, "record_cls must be a class");
        return NULL;
    }
    PyTypeObject *cls = (PyTypeObject *)cls_obj;
    for (int i = 0; i < N_LAYOUTS; i++)
        if (layouts[i].cls == cls)
            return &layouts[i];
    SlotLayout layout;
    layout.cls = cls;
    for (int s = 0; s < N_SLOTS; s++) {
        PyObject *descr = PyObject_GetAttrString(cls_obj, slot_names[s]);
        if (descr == NULL)
            return NULL;
        int ok = Py_IS_TYPE(descr, &PyMemberDescr_Type);
        if (ok) {
            PyMemberDescrObject *m = (PyMemberDescrObject *)descr;
            ok = m->d_member->type == T_OBJECT_EX && !(m->d_member->flags & READONLY)
                 && PyType_IsSubtype(cls, m->d_common.d_type)
                 && m->d_member->offset >= (Py_ssize_t)sizeof(PyObject)
                 && m->d_member->offset + (Py_ssize_t)sizeof(PyObject *) <= cls->tp_basicsize;
            layout.offsets[s] = m->d_member->offset;
        }
        Py_DECREF(descr);
        if (!ok) {
            PyErr_Format(PyExc_TypeError, "%s.%s is not a __slots__ attribute", cls->tp_name, slot_names[s]);
            return NULL;
        }
    }
    /* Record objects are made and freed by the hundred per batch: the struct allocator's
     * deallocator and free list (struct_alloc.c) make both cheaper than Python's generic ones
     * (subtype_dealloc alone was a tenth of decoding time). A class it cannot take is left as is. */
    if (kw_struct_adopt(cls) < 0)
        return NULL;
    for (int i = 0; i < N_LAYOUTS; i++) {
        if (layouts[i].cls == NULL) {
            Py_INCREF(cls);
            layouts[i] = layout;
            return &layouts[i];
        }
    }
    static SlotLayout spare;  /* more classes than cache entries: recomputed each call */
    spare = layout;
    return &spare;
}

static inline void set_slot(PyObject *obj, Py_ssize_t offset, PyObject *value) {
    *(PyObject **)((char *)obj + offset) = value;  /* steals value; the slot was NULL */
}

/* base + delta as a Python int, exact beyond int64 too (the pure loop uses Python ints) */
static PyObject *add_int64(int64_t base, int64_t delta) {
    int64_t sum;
    if (!__builtin_add_overflow(base, delta, &sum))
        return PyLong_FromLongLong(sum);
    PyObject *a = PyLong_FromLongLong(base), *b = PyLong_FromLongLong(delta), *r = NULL;
    if (a != NULL && b != NULL)
        r = PyNumber_Add(a, b);
    Py_XDECREF(a);
    Py_XDECREF(b);
    return r;
}

typedef struct {
    int64_t base_offset, base_timestamp;
    PyObject *log_append_time;  /* NULL: CREATE_TIME */
    PyObject *batch;
    const SlotLayout *layout;
    PyObject *base;             /* memoryview of the whole buffer: slices are views of it */
    PyObject *last_hkey;        /* header keys repeat: the previous one's str is reused */
    const uint8_t *last_hkey_bytes;
    Py_ssize_t last_hkey_len;
    PyObject *last_ts;          /* records of one batch often share a millisecond: its int is reused */
    int64_t last_ts_delta;
} Objects;

static PyObject *span_view(Objects *o, Span s) {
    return s.present ? mv_slice(o->base, s.pos, s.len) : Py_NewRef(Py_None);
}

static PyObject *header_key(Objects *o, const uint8_t *s, Py_ssize_t n) {
    if (o->last_hkey != NULL && n == o->last_hkey_len && memcmp(s, o->last_hkey_bytes, n) == 0)
        return Py_NewRef(o->last_hkey);
    PyObject *key = PyUnicode_DecodeUTF8((const char *)s, n, "surrogateescape");
    if (key != NULL) {
        Py_XSETREF(o->last_hkey, Py_NewRef(key));
        o->last_hkey_bytes = s;
        o->last_hkey_len = n;
    }
    return key;
}

static PyObject *header_tuple(Objects *o, const Parser *p, Py_ssize_t n) {
    PyObject *headers = PyTuple_New(n);
    for (Py_ssize_t h = 0; headers != NULL && h < n; h++) {
        const HeaderSpans *hs = &p->headers[h];
        PyObject *key = header_key(o, p->r.d + hs->key.pos, hs->key.len);
        PyObject *value = key == NULL ? NULL : span_view(o, hs->value);
        PyObject *pair = value == NULL ? NULL : PyTuple_New(2);
        if (pair == NULL) {
            Py_XDECREF(key);
            Py_XDECREF(value);
            Py_CLEAR(headers);
            break;
        }
        PyTuple_SET_ITEM(pair, 0, key);
        PyTuple_SET_ITEM(pair, 1, value);
        PyTuple_SET_ITEM(headers, h, pair);
    }
    return headers;
}

/* base_timestamp + delta (CREATE_TIME), the previous record's int when the delta repeats */
static PyObject *create_timestamp(Objects *o, int64_t delta) {
    if (o->last_ts != NULL && delta == o->last_ts_delta)
        return Py_NewRef(o->last_ts);
    PyObject *ts = add_int64(o->base_timestamp, delta);
    if (ts != NULL) {
        Py_XSETREF(o->last_ts, Py_NewRef(ts));
        o->last_ts_delta = delta;
    }
    return ts;
}

/* The record object of a parsed record, or NULL with a Python error. */
static PyObject *record_object(Objects *o, const Parser *p, const ParsedRecord *rec) {
    PyTypeObject *cls = o->layout->cls;
    PyObject *obj = kw_struct_new(cls);   /* every slot NULL, as tp_alloc makes it */
    if (obj == NULL)
        return NULL;
    const Py_ssize_t *off = o->layout->offsets;
    PyObject *values[N_SLOTS];
    values[S_OFFSET] = add_int64(o->base_offset, rec->off_delta);
    values[S_TIMESTAMP] = o->log_append_time != NULL ? Py_NewRef(o->log_append_time)
                                                     : create_timestamp(o, rec->ts_delta);
    values[S_KEY] = span_view(o, rec->key);
    values[S_VALUE] = span_view(o, rec->value);
    values[S_HEADERS] = header_tuple(o, p, rec->n_headers);
    values[S_ATTRIBUTES] = PyLong_FromLong(rec->attributes);
    values[S_TS_DELTA] = PyLong_FromLongLong(rec->ts_delta);
    values[S_BATCH] = Py_NewRef(o->batch);
    int ok = 1;
    for (int s = 0; s < N_SLOTS; s++) {
        set_slot(obj, off[s], values[s]);  /* a NULL slot is what dealloc expects of an unset one */
        ok &= values[s] != NULL;
    }
    if (!ok)
        Py_CLEAR(obj);
    return obj;
}

/* The records of a batch, each made by a sink into a list of count slots filled in order:
 * what decode_records and decode_values share. */
typedef struct {
    PyObject *list;
    Py_ssize_t next;
    Objects *o;         /* decode_records' object state; NULL for decode_values */
} ListSink;

static int add_object(void *ctx, const Parser *p, const ParsedRecord *rec) {
    ListSink *s = ctx;
    PyObject *obj = record_object(s->o, p, rec);
    if (obj == NULL)
        return -1;
    PyList_SET_ITEM(s->list, s->next++, obj);
    return 0;
}

/* Walks a's batch with `add`; (list, error) as kw_result makes it, the list cut before the first
 * bad record. Frees a's parser and releases its view. */
static PyObject *walk_into_list(BatchArgs *a, RecordSink add, Objects *o) {
    ListSink sink = {PyList_New(a->parser.count), 0, o};
    PyObject *result = NULL;
    Py_ssize_t done;
    if (sink.list != NULL && kw_parse_batch(&a->parser, a->start, add, &sink, &done) == 0) {
        if (done < a->parser.count)  /* bad bytes: the items before them */
            Py_SETREF(sink.list, PyList_GetSlice(sink.list, 0, done));
        if (sink.list != NULL)
            result = kw_result(sink.list, &a->parser.r);
    }
    Py_XDECREF(sink.list);
    kw_parser_free(&a->parser);
    Py_DECREF(a->view);
    return result;
}

PyObject *kw_decode_records(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 9) {
        PyErr_SetString(PyExc_TypeError, "decode_records takes 9 arguments");
        return NULL;
    }
    BatchArgs a;
    Objects o = {0};
    o.batch = args[7];
    if ((o.layout = slot_layout(args[8])) == NULL || kw_batch_args(args, &a) < 0)
        return NULL;
    o.base = a.view;
    o.base_offset = a.base_offset;
    o.base_timestamp = a.base_timestamp;
    o.log_append_time = a.log_append_time;
    PyObject *result = walk_into_list(&a, add_object, &o);
    Py_XDECREF(o.last_hkey);
    Py_XDECREF(o.last_ts);
    return result;
}

/* decode_values(data, start, end, count, base_offset, base_timestamp, log_append_time)
 * -> (values, error): decode_records' walk, but each record only as its value, a
 * bytes (None for a null one), with no Record object or memoryview made: what a raft node hands
 * its listeners for each committed record (RecordBatch.values, whose pure definition is a bytes
 * of each record's value). The arguments and the error are decode_records'. */
static int add_value(void *ctx, const Parser *p, const ParsedRecord *rec) {
    ListSink *s = ctx;
    PyObject *value = rec->value.present
        ? PyBytes_FromStringAndSize((const char *)p->r.d + rec->value.pos, rec->value.len)
        : Py_NewRef(Py_None);
    if (value == NULL)
        return -1;
    PyList_SET_ITEM(s->list, s->next++, value);
    return 0;
}

PyObject *kw_decode_values(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    if (nargs != 7) {
        PyErr_SetString(PyExc_TypeError, "decode_values takes 7 arguments");
        return NULL;
    }
    BatchArgs a;
    if (kw_batch_args(args, &a) < 0)
        return NULL;
    return walk_into_list(&a, add_value, NULL);
}

int kw_decode_init(PyObject *module) {
    fast_slices = slices_selftest();
    return PyModule_AddIntConstant(module, "FAST_SLICES", fast_slices);
}
