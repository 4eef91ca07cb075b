/* The native record-batch path (issue 26): the v2 record loop in C.
 *
 * The pure-Python code (record_decoding.py, builder.py) is the oracle: this file must give the
 * same records, the same bytes and, on bad input, the same error (reason text and byte
 * position) as it does; tests/records/test_records_native.py checks that differentially.
 *
 * decode_records(data, start, end, count, base_offset, base_timestamp, log_append_time,
 *                batch, record_cls) -> (records, error)
 *     Every record of data[start:end] as a record_cls object (Record or ControlRecord: the C
 *     code fills their __slots__ directly, as object.__new__ plus slot stores would), keys,
 *     values and header values as memoryview slices of data. error is None or (reason, pos)
 *     for the first bad record; records holds the ones before it.
 *
 * RecordWriter: the base class of RecordBatchBuilder when the extension is built; its append
 *     encodes a record as the pure append does (see its comment below).
 *
 * Reads are bounded by the buffer's length (as the pure loop's IndexError is), slices by the
 * record's end, and nothing is allocated from a length before it is checked against the bytes
 * left.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

/* ---- errors: a reason and a byte position, formatted as the pure loop formats them ---- */

typedef struct {
    const uint8_t *d;   /* the whole buffer: reads may pass `end`, as the pure loop's do */
    Py_ssize_t len;
    PyObject *reason;   /* set on a decoding error (new reference) */
    Py_ssize_t err_pos;
} Reader;

static int fail(Reader *r, Py_ssize_t pos, const char *fmt, ...) {
    va_list va;
    va_start(va, fmt);
    r->reason = PyUnicode_FromFormatV(fmt, va);
    va_end(va);
    r->err_pos = pos;
    return -1;
}

/* A zigzag varint at d[at]: `inline_bytes` is how many bytes the pure loop reads inline
 * (a missing one there is an IndexError, reported at `report_pos`); later ones come from
 * read_unsigned_tail, which reports the missing or the last allowed byte itself. */
static inline int read_varint(Reader *r, Py_ssize_t at, Py_ssize_t report_pos, int inline_bytes,
                              int max_bytes, int64_t *out, Py_ssize_t *next) {
    if (at < r->len) {
        uint8_t b = r->d[at];
        if (b < 0x80) {  /* the common one-byte case */
            *out = (int64_t)(b >> 1) ^ -(int64_t)(b & 1);
            *next = at + 1;
            return 0;
        }
    }
    uint64_t v = 0;
    int shift = 0;
    for (int i = 0; i < max_bytes; i++) {
        Py_ssize_t idx = at + i;
        if (idx >= r->len) {
            if (i < inline_bytes)
                return fail(r, report_pos, "record runs past the end of the buffer");
            return fail(r, idx, "varint runs past the end of the buffer");
        }
        uint8_t b = r->d[idx];
        v |= (uint64_t)(b & 0x7F) << shift;
        if (!(b & 0x80)) {
            if (max_bytes == 5)
                v &= 0xFFFFFFFFu;  /* Java shifts into an int: higher bits are dropped */
            *out = (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
            *next = idx + 1;
            return 0;
        }
        shift += 7;
        if (i == max_bytes - 1)
            return fail(r, idx, "varint longer than %d bytes", max_bytes);
    }
    return -1;  /* not reached */
}

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

/* ---- one record ---- */

typedef struct {
    Reader r;
    PyObject *base;          /* memoryview of the whole buffer: slices are views of it */
    Py_ssize_t end;
    PyObject *last_hkey;     /* header keys repeat: the previous one's str is reused */
    const uint8_t *last_hkey_bytes;
    Py_ssize_t last_hkey_len;
} Decoder;

/* A varint length (-1 = null) then that many bytes; `what` names the field in errors. */
static int nullable_slice(Decoder *dec, Py_ssize_t *pos, Py_ssize_t rec_end, int inline_bytes,
                          const char *what, PyObject **out) {
    int64_t n = 0;
    if (read_varint(&dec->r, *pos, *pos, inline_bytes, 5, &n, pos) < 0)
        return -1;
    if (n >= 0 && n <= rec_end - *pos) {
        *out = mv_slice(dec->base, *pos, (Py_ssize_t)n);
        if (*out == NULL)
            return -1;
        *pos += (Py_ssize_t)n;
        return 0;
    }
    if (n == -1) {
        *out = Py_NewRef(Py_None);
        return 0;
    }
    return fail(&dec->r, *pos, "invalid %s length %lld: %zd bytes left in the record", what,
                (long long)n, rec_end - *pos);
}

static PyObject *header_key(Decoder *dec, const uint8_t *s, Py_ssize_t n) {
    if (dec->last_hkey != NULL && n == dec->last_hkey_len && memcmp(s, dec->last_hkey_bytes, n) == 0)
        return Py_NewRef(dec->last_hkey);
    PyObject *key = PyUnicode_DecodeUTF8((const char *)s, n, "surrogateescape");
    if (key != NULL) {
        Py_XSETREF(dec->last_hkey, Py_NewRef(key));
        dec->last_hkey_bytes = s;
        dec->last_hkey_len = n;
    }
    return key;
}

static PyObject *read_header(Decoder *dec, Py_ssize_t *pos, Py_ssize_t rec_end) {
    int64_t n = 0;
    if (read_varint(&dec->r, *pos, *pos, 1, 5, &n, pos) < 0)
        return NULL;
    if (!(n >= 0 && n <= rec_end - *pos)) {
        fail(&dec->r, *pos, "invalid header key length %lld: %zd bytes left in the record "
             "(header keys are not nullable)", (long long)n, rec_end - *pos);
        return NULL;
    }
    PyObject *key = header_key(dec, dec->r.d + *pos, (Py_ssize_t)n);
    if (key == NULL)
        return NULL;
    *pos += (Py_ssize_t)n;
    PyObject *value;
    if (nullable_slice(dec, pos, rec_end, 1, "header value", &value) < 0) {
        Py_DECREF(key);
        return NULL;
    }
    PyObject *pair = PyTuple_New(2);
    if (pair == NULL) {
        Py_DECREF(key);
        Py_DECREF(value);
        return NULL;
    }
    PyTuple_SET_ITEM(pair, 0, key);
    PyTuple_SET_ITEM(pair, 1, value);
    return pair;
}

static Py_ssize_t floor_half(Py_ssize_t x) {  /* Python's x >> 1 */
    return x >= 0 ? x / 2 : -((-x + 1) / 2);
}

static PyObject *read_headers(Decoder *dec, Py_ssize_t *pos, Py_ssize_t rec_end) {
    Reader *r = &dec->r;
    if (*pos >= r->len) {
        fail(r, *pos, "record runs past the end of the buffer");
        return NULL;
    }
    if (r->d[*pos] == 0) {  /* zigzag(0): no headers, the common case */
        *pos += 1;
        return PyTuple_New(0);
    }
    int64_t n = 0;
    if (read_varint(r, *pos, *pos, 1, 5, &n, pos) < 0)
        return NULL;
    if (n != 1) {
        if (n < 0) {
            fail(r, *pos, "invalid number of record headers %lld", (long long)n);
            return NULL;
        }
        if (n > floor_half(rec_end - *pos)) {  /* every header takes at least 2 bytes */
            fail(r, *pos, "%lld headers cannot fit in the %zd bytes left in the record", (long long)n,
                 rec_end - *pos);
            return NULL;
        }
    }
    PyObject *headers = PyTuple_New((Py_ssize_t)n);  /* n is bounded by the bytes left */
    if (headers == NULL)
        return NULL;
    for (Py_ssize_t h = 0; h < (Py_ssize_t)n; h++) {
        PyObject *pair = read_header(dec, pos, rec_end);
        if (pair == NULL) {
            Py_DECREF(headers);
            return NULL;
        }
        PyTuple_SET_ITEM(headers, h, pair);
    }
    return headers;
}

typedef struct {
    int64_t base_offset, base_timestamp;
    PyObject *log_append_time;  /* NULL: CREATE_TIME */
    PyObject *batch;
    const SlotLayout *layout;
} BatchFields;

/* One record at *pos: a new record object, or NULL (dec->r.reason set for bad bytes). */
static PyObject *read_record(Decoder *dec, Py_ssize_t *pos, Py_ssize_t count, const BatchFields *bf) {
    Reader *r = &dec->r;
    int64_t length = 0, ts_delta = 0, off_delta = 0;
    Py_ssize_t p = *pos;
    if (read_varint(r, p, p, 2, 5, &length, &p) < 0)
        return NULL;
    if (length < 0 || length > dec->end - p) {
        fail(r, p, "invalid record size %lld: %zd bytes of records left (count says %zd records)",
             (long long)length, dec->end - p, count);
        return NULL;
    }
    Py_ssize_t rec_end = p + (Py_ssize_t)length;
    if (p >= r->len) {
        fail(r, p, "record runs past the end of the buffer");
        return NULL;
    }
    long attributes = r->d[p];
    if (read_varint(r, p + 1, p, 2, 10, &ts_delta, &p) < 0 || read_varint(r, p, p, 2, 5, &off_delta, &p) < 0)
        return NULL;
    PyObject *key = NULL, *value = NULL, *headers = NULL;
    if (nullable_slice(dec, &p, rec_end, 2, "key", &key) < 0
            || nullable_slice(dec, &p, rec_end, 2, "value", &value) < 0
            || (headers = read_headers(dec, &p, rec_end)) == NULL)
        goto error;
    if (p != rec_end) {
        fail(r, rec_end - (Py_ssize_t)length, "invalid record size: expected to read %lld bytes in record "
             "payload, but instead read %zd", (long long)length, p - rec_end + (Py_ssize_t)length);
        goto error;
    }
    PyTypeObject *cls = bf->layout->cls;
    PyObject *rec = cls->tp_alloc(cls, 0);
    if (rec == NULL)
        goto error;
    const Py_ssize_t *off = bf->layout->offsets;
    PyObject *offset = add_int64(bf->base_offset, off_delta);
    PyObject *timestamp = bf->log_append_time != NULL ? Py_NewRef(bf->log_append_time)
                                                        : add_int64(bf->base_timestamp, ts_delta);
    PyObject *ts_obj = PyLong_FromLongLong(ts_delta);
    PyObject *attr_obj = PyLong_FromLong(attributes);
    set_slot(rec, off[S_OFFSET], offset);
    set_slot(rec, off[S_TIMESTAMP], timestamp);
    set_slot(rec, off[S_KEY], key);
    set_slot(rec, off[S_VALUE], value);
    set_slot(rec, off[S_HEADERS], headers);
    set_slot(rec, off[S_ATTRIBUTES], attr_obj);
    set_slot(rec, off[S_TS_DELTA], ts_obj);
    set_slot(rec, off[S_BATCH], Py_NewRef(bf->batch));
    if (offset == NULL || timestamp == NULL || ts_obj == NULL || attr_obj == NULL) {
        Py_DECREF(rec);
        return NULL;
    }
    *pos = p;
    return rec;
error:
    Py_XDECREF(key);
    Py_XDECREF(value);
    Py_XDECREF(headers);
    return NULL;
}

/* The memoryview to read and slice: 1-D, contiguous, one byte per item. */
static PyObject *byte_view(PyObject *data) {
    PyObject *base = PyMemoryView_FromObject(data);
    if (base == NULL)
        return NULL;
    Py_buffer *v = PyMemoryView_GET_BUFFER(base);
    if (v->ndim != 1 || v->itemsize != 1 || !PyBuffer_IsContiguous(v, 'C')) {
        Py_DECREF(base);
        PyErr_SetString(PyExc_BufferError, "records must be in a contiguous byte buffer");
        return NULL;
    }
    return base;
}

static PyObject *decode_records(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 9) {
        PyErr_SetString(PyExc_TypeError, "decode_records takes 9 arguments");
        return NULL;
    }
    Py_ssize_t start = PyLong_AsSsize_t(args[1]), end = PyLong_AsSsize_t(args[2]);
    Py_ssize_t count = PyLong_AsSsize_t(args[3]);
    BatchFields bf;
    bf.base_offset = PyLong_AsLongLong(args[4]);
    bf.base_timestamp = PyLong_AsLongLong(args[5]);
    bf.log_append_time = args[6] == Py_None ? NULL : args[6];
    bf.batch = args[7];
    if (PyErr_Occurred())
        return NULL;
    if ((bf.layout = slot_layout(args[8])) == NULL)
        return NULL;
    Decoder dec = {{0}};
    dec.base = byte_view(args[0]);
    if (dec.base == NULL)
        return NULL;
    Py_buffer *view = PyMemoryView_GET_BUFFER(dec.base);
    dec.r.d = view->buf;
    dec.r.len = view->len;
    dec.end = end;
    /* The caller has checked the framing; refuse anything that would read outside it or
     * allocate more list slots than the bytes could hold (7 bytes per record at least). */
    if (start < 0 || start > end || end > view->len || count < 0 || count > (end - start) / 7) {
        Py_DECREF(dec.base);
        PyErr_SetString(PyExc_ValueError, "records range outside the buffer or count too large");
        return NULL;
    }
    PyObject *records = PyList_New(count), *result = NULL;
    Py_ssize_t pos = start, done = 0;
    if (records == NULL)
        goto out;
    for (; done < count; done++) {
        PyObject *rec = read_record(&dec, &pos, count, &bf);
        if (rec == NULL)
            break;
        PyList_SET_ITEM(records, done, rec);
    }
    if (done == count && pos != end)
        fail(&dec.r, pos, "incorrect declared batch size: %zd bytes remain after the last record", end - pos);
    if (done < count) {
        if (dec.r.reason == NULL)
            goto out;  /* a Python error (memory), not bad bytes */
        Py_SETREF(records, PyList_GetSlice(records, 0, done));
        if (records == NULL)
            goto out;
    }
    if (dec.r.reason != NULL)
        result = Py_BuildValue("(N(On))", Py_NewRef(records), dec.r.reason, dec.r.err_pos);
    else
        result = PyTuple_Pack(2, records, Py_None);
out:
    Py_XDECREF(records);
    Py_XDECREF(dec.r.reason);
    Py_XDECREF(dec.last_hkey);
    Py_DECREF(dec.base);
    return result;
}


/* ==== encode: RecordWriter, the C base of RecordBatchBuilder ====
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

static PyObject *set_pure_append(PyObject *module, PyObject *func) {
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
     "Add a record; returns its offset delta (RecordBatchBuilder.append, in C)."},
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

static PyMethodDef methods[] = {
    {"decode_records", (PyCFunction)(void (*)(void))decode_records, METH_FASTCALL,
     "decode_records(data, start, end, count, base_offset, base_timestamp, log_append_time, batch, "
     "record_cls) -> (records, None | (reason, position))"},
    {"set_pure_append", set_pure_append, METH_O, "The pure append RecordWriter.append hands odd calls to."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "kafkawire._native_records",
    "The v2 record loop in C (issue 26); the pure-Python code is its oracle.", -1, methods,
};

PyMODINIT_FUNC PyInit__native_records(void) {
    PyObject *m = PyModule_Create(&module_def);
    if (m == NULL)
        return NULL;
    fast_slices = slices_selftest();
    if (PyType_Ready(&RecordWriterType) < 0 || PyModule_AddObjectRef(m, "RecordWriter", (PyObject *)&RecordWriterType) < 0
            || PyModule_AddIntConstant(m, "FAST_SLICES", fast_slices) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
