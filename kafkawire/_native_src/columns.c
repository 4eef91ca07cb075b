/* Records straight into Arrow buffers (issue 26): Columns, the native half of
 * kafkawire/spark/record_columns.py.
 *
 * Columns(fix_key[, want_key, want_value, want_headers, saturate]) accumulates the records of
 * many batches (a column not wanted stays empty: a pruned read copies no bytes for it; with
 * saturate, a timestamp past int64 is kept as INT64_MAX or INT64_MIN for the caller to
 * report, instead of an OverflowError); add(data,
 * start, end, count, base_offset, base_timestamp, log_append_time) appends one batch's records
 * (parsed by the shared parser, so bad bytes give the pure loop's error: None or (reason,
 * position) is returned, and none of that batch's records stay) and finish() returns the
 * buffers: int64
 * offsets and timestamps (ms), key/value binary columns (validity bits, int32 offsets,
 * data), and the headers as Spark's list<struct<key: string, value: binary>> (null when a
 * record has none). Header keys that are not valid UTF-8 go through fix_key(bytes) -> str
 * (Java's replacement rule, kafkawire.metadata.java_text.java_utf8). No Python object is made
 * per record. A batch goes through the one-pass loop of columns_fast.c first, and through the
 * shared parser (with this file's put_record) only when that loop steps aside. */
#include "columns.h"

#include <string.h>

/* A finished column buffer handed to Python without a copy: it owns the memory (freed with
 * the object) and exports it read-only through the buffer protocol (pa.py_buffer keeps it). */
typedef struct {
    PyObject_HEAD
    char *p;
    Py_ssize_t len, cap;
} OwnedBuffer;

static void owned_dealloc(OwnedBuffer *self) {
    kw_buf_release(self->p, self->cap);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int owned_getbuffer(OwnedBuffer *self, Py_buffer *view, int flags) {
    return PyBuffer_FillInfo(view, (PyObject *)self, self->p ? self->p : (char *)"", self->len, 1, flags);
}

static PyBufferProcs owned_as_buffer = {(getbufferproc)owned_getbuffer, NULL};

static PyTypeObject OwnedBufferType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "kafkawire._native_records.OwnedBuffer",
    .tp_basicsize = sizeof(OwnedBuffer),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A column buffer Columns.finish hands over without copying it.",
    .tp_dealloc = (destructor)owned_dealloc,
    .tp_as_buffer = &owned_as_buffer,
};

/* The buffer's memory as an OwnedBuffer; the Buf is left empty. */
static PyObject *hand_over(Buf *b) {
    OwnedBuffer *o = PyObject_New(OwnedBuffer, &OwnedBufferType);
    if (o == NULL)
        return NULL;
    o->p = b->p;
    o->len = b->len;
    o->cap = b->cap;
    b->p = NULL;
    b->len = b->cap = 0;
    return (PyObject *)o;
}

/* How far every buffer of a Columns reached: add() puts it back when a batch fails, so that
 * a batch goes in whole or not at all (as a list of its Record objects would). */
typedef struct {
    Py_ssize_t len[16], count[10];
} Mark;

static void mark_bufs(Columns *c, Buf **out) {
    BinCol *cols[] = {&c->key, &c->value, &c->hkey, &c->hvalue};
    int k = 0;
    for (int i = 0; i < 4; i++) {
        out[k++] = &cols[i]->validity;
        out[k++] = &cols[i]->offsets;
        out[k++] = &cols[i]->data;
    }
    out[k++] = &c->offsets;
    out[k++] = &c->timestamps;
    out[k++] = &c->list_offsets;
    out[k++] = &c->list_validity;
}

static void mark_take(Columns *c, Mark *m) {
    Buf *bufs[16];
    mark_bufs(c, bufs);
    for (int i = 0; i < 16; i++)
        m->len[i] = bufs[i]->len;
    BinCol *cols[] = {&c->key, &c->value, &c->hkey, &c->hvalue};
    for (int i = 0; i < 4; i++) {
        m->count[2 * i] = cols[i]->n;
        m->count[2 * i + 1] = cols[i]->nulls;
    }
    m->count[8] = c->n;
    m->count[9] = c->list_nulls;
}

/* Bits past n cleared: a later record's bit_put only sets bits, so a stale one would stay. */
static void bits_cut(Buf *bits, Py_ssize_t n) {
    if (n % 8 && bits->len > n / 8)
        bits->p[n / 8] &= (char)((1 << (n % 8)) - 1);
}

static void mark_restore(Columns *c, const Mark *m) {
    Buf *bufs[16];
    mark_bufs(c, bufs);
    for (int i = 0; i < 16; i++)
        bufs[i]->len = m->len[i];
    BinCol *cols[] = {&c->key, &c->value, &c->hkey, &c->hvalue};
    for (int i = 0; i < 4; i++) {
        cols[i]->n = m->count[2 * i];
        cols[i]->nulls = m->count[2 * i + 1];
        bits_cut(&cols[i]->validity, cols[i]->n);
    }
    c->n = m->count[8];
    c->list_nulls = m->count[9];
    bits_cut(&c->list_validity, c->n);
}

static void bin_free(BinCol *c) {
    kw_buf_release(c->validity.p, c->validity.cap);
    kw_buf_release(c->offsets.p, c->offsets.cap);
    kw_buf_release(c->data.p, c->data.cap);
}

static void columns_dealloc(Columns *self) {
    Py_XDECREF(self->fix_key);
    kw_buf_release(self->offsets.p, self->offsets.cap);
    kw_buf_release(self->timestamps.p, self->timestamps.cap);
    bin_free(&self->key);
    bin_free(&self->value);
    bin_free(&self->hkey);
    bin_free(&self->hvalue);
    kw_buf_release(self->list_offsets.p, self->list_offsets.cap);
    kw_buf_release(self->list_validity.p, self->list_validity.cap);
    kw_buf_release(self->inflated.p, self->inflated.cap);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *columns_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    PyObject *fix_key;
    int want_key = 1, want_value = 1, want_headers = 1, saturate = 0;
    if (!PyArg_ParseTuple(args, "O|pppp:Columns", &fix_key, &want_key, &want_value, &want_headers, &saturate))
        return NULL;
    Columns *self = (Columns *)type->tp_alloc(type, 0);
    if (self != NULL) {
        self->fix_key = Py_NewRef(fix_key);
        self->want_key = want_key;
        self->want_value = want_value;
        self->want_headers = want_headers;
        self->saturate = saturate;
        int32_t zero = 0;
        if (kw_buf_put(&self->list_offsets, &zero, 4) < 0)
            Py_CLEAR(self);
    }
    return (PyObject *)self;
}

int kw_is_utf8(const uint8_t *s, Py_ssize_t n) {
    for (Py_ssize_t i = 0; i < n; i++)
        if (s[i] >= 0x80)
            goto check;
    return 1;
check:;
    PyObject *text = PyUnicode_DecodeUTF8((const char *)s, n, "strict");
    if (text == NULL) {
        PyErr_Clear();
        return 0;
    }
    Py_DECREF(text);
    return 1;
}

/* A header key as valid UTF-8: as stored, or through fix_key when it is not UTF-8. */
static int put_header_key(Columns *self, const uint8_t *s, Py_ssize_t n) {
    int same = self->last_key != NULL && n == self->last_key_len && memcmp(s, self->last_key, n) == 0;
    if (same || kw_is_utf8(s, n)) {
        self->last_key = s;
        self->last_key_len = n;
        return bin_put(&self->hkey, s, n, 1);
    }
    PyObject *raw = PyBytes_FromStringAndSize((const char *)s, n);
    PyObject *text = raw ? PyObject_CallOneArg(self->fix_key, raw) : NULL;
    Py_ssize_t len = 0;
    const char *utf8 = text && PyUnicode_Check(text) ? PyUnicode_AsUTF8AndSize(text, &len) : NULL;
    if (text != NULL && utf8 == NULL && !PyErr_Occurred())
        PyErr_SetString(PyExc_TypeError, "fix_key must return a str");
    int rc = utf8 == NULL ? -1 : bin_put(&self->hkey, (const uint8_t *)utf8, len, 1);
    Py_XDECREF(raw);
    Py_XDECREF(text);
    return rc;
}

static int put_record(Columns *self, const Parser *p, const ParsedRecord *rec, int64_t base_offset,
                      int64_t base_timestamp, const int64_t *log_append_time) {
    int64_t offset, timestamp;
    if (kw_record_position(self, base_offset, base_timestamp, log_append_time, rec->off_delta, rec->ts_delta, &offset,
                           &timestamp) < 0)
        return -1;
    const uint8_t *d = p->r.d;
    if (kw_buf_put(&self->offsets, &offset, 8) < 0 || kw_buf_put(&self->timestamps, &timestamp, 8) < 0
            || (self->want_key && bin_put(&self->key, d + rec->key.pos, rec->key.len, rec->key.present) < 0)
            || (self->want_value && bin_put(&self->value, d + rec->value.pos, rec->value.len, rec->value.present) < 0))
        return -1;
    if (!self->want_headers) {
        self->n += 1;
        return 0;
    }
    for (Py_ssize_t h = 0; h < rec->n_headers; h++) {
        const HeaderSpans *hs = &p->headers[h];
        if (put_header_key(self, d + hs->key.pos, hs->key.len) < 0
                || bin_put(&self->hvalue, d + hs->value.pos, hs->value.len, hs->value.present) < 0)
            return -1;
    }
    int32_t end = (int32_t)self->hkey.n;
    if (valid_put(&self->list_validity, self->n, self->list_nulls, rec->n_headers > 0) < 0 || kw_buf_put(&self->list_offsets, &end, 4) < 0)
        return -1;
    self->list_nulls += rec->n_headers == 0;  /* Spark's source: null, not an empty list */
    self->n += 1;
    return 0;
}

typedef struct {
    Columns *self;
    const BatchArgs *batch;
    int64_t log_append_time;
} ColumnSink;

static int add_to_columns(void *ctx, const Parser *p, const ParsedRecord *rec) {
    ColumnSink *s = ctx;
    const BatchArgs *b = s->batch;
    return put_record(s->self, p, rec, b->base_offset, b->base_timestamp,
                      b->log_append_time == NULL ? NULL : &s->log_append_time);
}

/* A batch's records through the one-pass loop (columns_fast.c): 1 done, 0 when it steps
 * aside (the buffers are as they were: the general parser reads the batch), -1 an error. */
static int add_fast(Columns *self, const Parser *p, Py_ssize_t start, int64_t base_offset, int64_t base_timestamp,
                    const int64_t *log_append_time) {
    Mark mark;
    mark_take(self, &mark);
    int rc = kw_columns_fast(self, p->r.d, start, p->end, p->count, base_offset, base_timestamp, log_append_time);
    if (rc <= 0)
        mark_restore(self, &mark);
    self->last_key = NULL;  /* it pointed into this batch's buffer */
    return rc;
}

static PyObject *columns_add(Columns *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 7) {
        PyErr_SetString(PyExc_TypeError, "add takes 7 arguments");
        return NULL;
    }
    BatchArgs a;
    if (kw_batch_args(args, &a) < 0)
        return NULL;
    ColumnSink sink = {self, &a, a.log_append_time == NULL ? 0 : PyLong_AsLongLong(a.log_append_time)};
    PyObject *result = NULL;
    Py_ssize_t done;
    Mark mark;
    mark_take(self, &mark);
    int fast = PyErr_Occurred() ? -1 : add_fast(self, &a.parser, a.start, a.base_offset, a.base_timestamp,
                                                a.log_append_time == NULL ? NULL : &sink.log_append_time);
    if (fast > 0)
        result = Py_NewRef(Py_None);
    else if (fast == 0 && kw_parse_batch(&a.parser, a.start, add_to_columns, &sink, &done) == 0)
        result = a.parser.r.reason == NULL ? Py_NewRef(Py_None)
                                           : Py_BuildValue("(On)", a.parser.r.reason, a.parser.r.err_pos);
    if (result != Py_None)  /* bad bytes or a Python error: none of the batch's records stay */
        mark_restore(self, &mark);
    self->last_key = NULL;  /* it pointed into this batch's buffer */
    kw_parser_free(&a.parser);
    Py_DECREF(a.view);
    return result;
}

/* Room for the records of `bytes` more bytes of batches (up to 16 MiB of them: past that
 * the buffers double as they fill), reserved once per call, so that they grow without copies;
 * pages nobody writes are never touched. */
static int reserve_for(Columns *self, Py_ssize_t bytes) {
    if (bytes > (16 << 20))
        bytes = 16 << 20;
    Py_ssize_t records = bytes / 7 + 1;
    BinCol *cols[] = {&self->key, &self->value, &self->hkey, &self->hvalue};
    for (int i = 0; i < 4; i++)
        if (kw_buf_reserve(&cols[i]->data, bytes) < 0 || kw_buf_reserve(&cols[i]->offsets, 4 * records + 4) < 0
                || kw_buf_reserve(&cols[i]->validity, records / 8 + 2) < 0)
            return -1;
    return kw_buf_reserve(&self->offsets, 8 * records) < 0 || kw_buf_reserve(&self->timestamps, 8 * records) < 0
           || kw_buf_reserve(&self->list_offsets, 4 * records + 4) < 0
           || kw_buf_reserve(&self->list_validity, records / 8 + 2) < 0 ? -1 : 0;
}

static inline uint32_t be32(const uint8_t *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static inline int64_t be64(const uint8_t *p) {
    return (int64_t)((uint64_t)be32(p) << 32 | be32(p + 4));
}

/* The batch at d[pos:] when it is one the fast loop takes whole: a complete v2 batch, CRC
 * matching (if checked), record count plausible, uncompressed or compressed with a codec
 * compiled in (decompress.c: its records are decompressed into self->inflated, at most
 * max_size bytes). Anything else - a torn tail, a legacy message, a bad size, magic or CRC,
 * compressed data the C codec does not take - is left to the Python loop, which reads it as
 * iter_batches does (and raises its error). Returns the batch's end, -1 (the Python loop), or
 * -2 (a Python error: memory). */
static Py_ssize_t simple_batch(Columns *self, const uint8_t *d, Py_ssize_t len, Py_ssize_t pos, int verify_crc,
                               Py_ssize_t max_size, BatchArgs *b, int *control) {
    Py_ssize_t left = len - pos;
    if (left < 61)
        return -1;
    const uint8_t *h = d + pos;
    int32_t size = (int32_t)be32(h + 8);
    if (h[16] != 2 || size < 49 || size > left - 12)
        return -1;
    Py_ssize_t end = pos + 12 + size;
    int attributes = h[21] << 8 | h[22], codec = attributes & 0x07;
    int32_t count = (int32_t)be32(h + 57);
    if ((codec != 0 && !kw_codec_native(codec))
            || (verify_crc && kw_crc32c(h + 21, (size_t)(end - pos - 21)) != be32(h + 17)))
        return -1;
    *control = (attributes & 0x20) != 0;
    b->start = pos + 61;
    b->parser = (Parser){{d, len, NULL, 0}, end, count, NULL, 0};
    if (!*control && codec != 0 && count > 0) {  /* as records_range: no records, nothing decompressed */
        int rc = kw_decompress(codec, h + 61, size - 49, max_size, 2, &self->inflated);
        if (rc <= 0)
            return rc < 0 ? -2 : -1;
        b->start = 0;
        b->parser = (Parser){{(const uint8_t *)self->inflated.p, self->inflated.len, NULL, 0}, self->inflated.len,
                             count, NULL, 0};
    }
    if (!*control && (count < 0 || count > (b->parser.end - b->start) / 7))
        return -1;
    b->base_offset = be64(h);
    b->base_timestamp = be64(h + 27);
    b->log_append_time = (attributes & 0x08) ? Py_None : NULL;  /* a marker: the value is below */
    return end;
}

/* add_batches(buf, start, verify_crc, max_size) -> position: the records of every batch from
 * start on that simple_batch takes, in one pass (framing, CRC, decompression, records); returns
 * where it stopped: the end of the buffer or a batch for the Python loop. */
static PyObject *columns_add_batches(Columns *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "add_batches takes 4 arguments");
        return NULL;
    }
    Py_ssize_t pos = PyLong_AsSsize_t(args[1]), max_size = PyLong_AsSsize_t(args[3]);
    int verify = PyObject_IsTrue(args[2]);
    PyObject *view = PyErr_Occurred() || verify < 0 ? NULL : kw_byte_view(args[0]);
    if (view == NULL)
        return NULL;
    const uint8_t *d = PyMemoryView_GET_BUFFER(view)->buf;
    Py_ssize_t len = PyMemoryView_GET_BUFFER(view)->len, end = 0, done;
    BatchArgs b;
    int control, failed = 0;
    if (pos >= 0 && pos < len && reserve_for(self, len - pos) < 0) {
        Py_DECREF(view);
        return NULL;
    }
    while (pos >= 0 && (end = simple_batch(self, d, len, pos, verify, max_size, &b, &control)) >= 0) {
        if (!control && b.parser.count > 0) {
            ColumnSink sink = {self, &b, be64(d + pos + 35)};  /* max timestamp, for LOG_APPEND_TIME */
            int rc = add_fast(self, &b.parser, b.start, b.base_offset, b.base_timestamp,
                              b.log_append_time == NULL ? NULL : &sink.log_append_time);
            rc = rc != 0 ? rc - 1 : kw_parse_batch(&b.parser, b.start, add_to_columns, &sink, &done);
            failed = rc < 0;
            int bad = rc == 0 && b.parser.r.reason != NULL;
            kw_parser_free(&b.parser);
            self->last_key = NULL;
            if (failed || bad)
                break;  /* bad bytes: the Python loop reads the batch again and raises their error */
        }
        pos = end;
    }
    failed |= end == -2;
    kw_buf_trim(&self->inflated, 8 << 20);  /* a big batch's buffer is not kept */
    Py_DECREF(view);
    return failed ? NULL : PyLong_FromSsize_t(pos);
}

static PyObject *bin_tuple(BinCol *c) {
    if (c->offsets.len == 0) {
        int32_t zero = 0;
        if (kw_buf_put(&c->offsets, &zero, 4) < 0)
            return NULL;
    }
    return Py_BuildValue("(NNNn)", hand_over(&c->validity), hand_over(&c->offsets), hand_over(&c->data), c->nulls);
}

/* finish() -> the column buffers (each an OwnedBuffer, no copy); the Columns is empty after,
 * and takes more records as a new one would. */
static PyObject *columns_finish(Columns *self, PyObject *unused) {
    PyObject *result = Py_BuildValue("{s:n,s:N,s:N,s:N,s:N,s:N,s:N,s:(NNn)}", "n", self->n,
                                     "offset", hand_over(&self->offsets), "timestamp", hand_over(&self->timestamps),
                                     "key", bin_tuple(&self->key), "value", bin_tuple(&self->value),
                                     "header_key", bin_tuple(&self->hkey), "header_value", bin_tuple(&self->hvalue),
                                     "headers", hand_over(&self->list_validity), hand_over(&self->list_offsets),
                                     self->list_nulls);
    /* Empty again, ready for more batches (the Spark reader takes a batch of rows at a time). */
    BinCol *cols[] = {&self->key, &self->value, &self->hkey, &self->hvalue};
    for (int i = 0; i < 4; i++)
        cols[i]->n = cols[i]->nulls = 0;
    self->n = self->list_nulls = 0;
    int32_t zero = 0;
    if (result != NULL && kw_buf_put(&self->list_offsets, &zero, 4) < 0)
        Py_CLEAR(result);
    return result;
}

/* repeat_binary(value, n) -> (offsets, data): the int32 offsets and the data of an Arrow
 * string/binary column holding `value` n times (records_to_arrow's topic column; pa.repeat
 * took 130 us for 10,000 rows, as long as decoding them). */
PyObject *kw_repeat_binary(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "repeat_binary takes 2 arguments");
        return NULL;
    }
    Py_ssize_t n = PyLong_AsSsize_t(args[1]);
    Py_buffer value;
    if ((n == -1 && PyErr_Occurred()) || PyObject_GetBuffer(args[0], &value, PyBUF_SIMPLE) < 0)
        return NULL;
    Py_ssize_t width = value.len;
    Buf offsets = {0}, data = {0};
    PyObject *result = NULL;
    if (n < 0 || (width > 0 && n > INT32_MAX / width))
        PyErr_SetString(PyExc_OverflowError, "an Arrow string column holds at most 2 GiB");
    else if (kw_buf_reserve(&offsets, 4 * (n + 1)) == 0 && kw_buf_reserve(&data, width * n + 1) == 0) {
        for (Py_ssize_t i = 0; i <= n; i++)
            ((int32_t *)offsets.p)[i] = (int32_t)(i * width);
        offsets.len = 4 * (n + 1);
        data.len = width * n;
        if (data.len > 0)  /* one copy, then the copies so far doubled */
            memcpy(data.p, value.buf, (size_t)width);
        for (Py_ssize_t done = width; done > 0 && done < data.len; done *= 2)
            memcpy(data.p + done, data.p, (size_t)(done < data.len - done ? done : data.len - done));
        result = Py_BuildValue("(NN)", hand_over(&offsets), hand_over(&data));
    }
    kw_buf_release(offsets.p, offsets.cap);
    kw_buf_release(data.p, data.cap);
    PyBuffer_Release(&value);
    return result;
}

/* int64_bounds(column) -> (min, max) of a column of native int64s (Columns' timestamps), None
 * when it is empty: a produced batch's timestamp check, where Python's min and max would make an
 * int of every record's timestamp. */
PyObject *kw_int64_bounds(PyObject *module, PyObject *column) {
    Py_buffer view;
    if (PyObject_GetBuffer(column, &view, PyBUF_SIMPLE) < 0)
        return NULL;
    PyObject *result = NULL;
    Py_ssize_t n = view.len / 8;
    if (view.len % 8 != 0)
        PyErr_SetString(PyExc_ValueError, "an int64 column's length is a multiple of 8");
    else if (n == 0)
        result = Py_NewRef(Py_None);
    else {
        const char *p = view.buf;
        int64_t low, high, v;
        memcpy(&low, p, 8);
        high = low;
        for (Py_ssize_t i = 1; i < n; i++) {
            memcpy(&v, p + 8 * i, 8);
            low = v < low ? v : low;
            high = v > high ? v : high;
        }
        result = Py_BuildValue("(LL)", (long long)low, (long long)high);
    }
    PyBuffer_Release(&view);
    return result;
}

static PyMethodDef columns_methods[] = {
    {"add", (PyCFunction)(void (*)(void))columns_add, METH_FASTCALL,
     "add(data, start, end, count, base_offset, base_timestamp, log_append_time) -> None | (reason, position)"},
    {"add_batches", (PyCFunction)(void (*)(void))columns_add_batches, METH_FASTCALL,
     "add_batches(buf, start, verify_crc, max_decompressed_size) -> the position the one-pass loop stopped at"},
    {"finish", (PyCFunction)columns_finish, METH_NOARGS, "The column buffers, as a dict of bytes."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject ColumnsType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "kafkawire._native_records.Columns",
    .tp_basicsize = sizeof(Columns),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Records of many batches accumulated as Arrow column buffers.",
    .tp_dealloc = (destructor)columns_dealloc,
    .tp_methods = columns_methods,
    .tp_new = columns_new,
};

int kw_columns_init(PyObject *module) {
    if (PyType_Ready(&OwnedBufferType) < 0 || PyType_Ready(&ColumnsType) < 0)
        return -1;
    return PyModule_AddObjectRef(module, "Columns", (PyObject *)&ColumnsType);
}
