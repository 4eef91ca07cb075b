/* The v2 record parser of the native path (issue 26). It checks every length against the bytes
 * left before using it and reads nothing outside the buffer; its errors (reason and byte
 * position) are the pure loop's, including where it reads past a record's end as the pure
 * loop does (into the rest of the buffer) and the IndexError cases ("record runs past the end
 * of the buffer", reported where the pure loop's `pos` stood). */
#include "records.h"

#include <stdarg.h>

int kw_fail(Reader *r, Py_ssize_t pos, const char *fmt, ...) {
    va_list va;
    va_start(va, fmt);
    r->reason = PyUnicode_FromFormatV(fmt, va);
    va_end(va);
    r->err_pos = pos;
    return -1;
}

/* A zigzag varint at d[at]: `inline_bytes` is how many bytes the pure loop reads inline (a
 * missing one there is an IndexError, reported at `report_pos`); later ones come from
 * read_unsigned_tail, which reports the missing or the last allowed byte itself. */
static inline int read_varint(Reader *r, Py_ssize_t at, Py_ssize_t report_pos, int inline_bytes,
                              int max_bytes, int64_t *out, Py_ssize_t *next) {
    if (at < r->len && r->d[at] < 0x80) {  /* the common one-byte case */
        uint8_t b = r->d[at];
        *out = (int64_t)(b >> 1) ^ -(int64_t)(b & 1);
        *next = at + 1;
        return 0;
    }
    uint64_t v = 0;
    int shift = 0;
    for (int i = 0; i < max_bytes; i++) {
        Py_ssize_t idx = at + i;
        if (idx >= r->len) {
            if (i < inline_bytes)
                return kw_fail(r, report_pos, "record runs past the end of the buffer");
            return kw_fail(r, idx, "varint runs past the end of the buffer");
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
    }
    return kw_fail(r, at + max_bytes - 1, "varint longer than %d bytes", max_bytes);
}

/* A varint length (-1 = null) then that many bytes; `what` names the field in errors. */
static int nullable_span(Reader *r, Py_ssize_t *pos, Py_ssize_t rec_end, int inline_bytes, const char *what,
                         Span *out) {
    int64_t n = 0;
    if (read_varint(r, *pos, *pos, inline_bytes, 5, &n, pos) < 0)
        return -1;
    if (n >= 0 && n <= rec_end - *pos) {
        out->pos = *pos;
        out->len = (Py_ssize_t)n;
        out->present = 1;
        *pos += (Py_ssize_t)n;
        return 0;
    }
    if (n == -1) {
        out->pos = *pos;
        out->len = 0;
        out->present = 0;
        return 0;
    }
    return kw_fail(r, *pos, "invalid %s length %lld: %zd bytes left in the record", what, (long long)n,
                   rec_end - *pos);
}

static int parse_header(Reader *r, Py_ssize_t *pos, Py_ssize_t rec_end, HeaderSpans *out) {
    int64_t n = 0;
    if (read_varint(r, *pos, *pos, 1, 5, &n, pos) < 0)
        return -1;
    if (!(n >= 0 && n <= rec_end - *pos))
        return kw_fail(r, *pos, "invalid header key length %lld: %zd bytes left in the record "
                       "(header keys are not nullable)", (long long)n, rec_end - *pos);
    out->key.pos = *pos;
    out->key.len = (Py_ssize_t)n;
    out->key.present = 1;
    *pos += (Py_ssize_t)n;
    return nullable_span(r, pos, rec_end, 1, "header value", &out->value);
}

static Py_ssize_t floor_half(Py_ssize_t x) {  /* Python's x >> 1 */
    return x >= 0 ? x / 2 : -((-x + 1) / 2);
}

static int parse_headers(Parser *p, Py_ssize_t *pos, Py_ssize_t rec_end, Py_ssize_t *count) {
    Reader *r = &p->r;
    if (*pos >= r->len)
        return kw_fail(r, *pos, "record runs past the end of the buffer");
    if (r->d[*pos] == 0) {  /* zigzag(0): no headers, the common case */
        *pos += 1;
        *count = 0;
        return 0;
    }
    int64_t n = 0;
    if (read_varint(r, *pos, *pos, 1, 5, &n, pos) < 0)
        return -1;
    if (n != 1) {  /* one header is not checked up front, as in the pure loop */
        if (n < 0)
            return kw_fail(r, *pos, "invalid number of record headers %lld", (long long)n);
        if (n > floor_half(rec_end - *pos))  /* every header takes at least 2 bytes */
            return kw_fail(r, *pos, "%lld headers cannot fit in the %zd bytes left in the record", (long long)n,
                           rec_end - *pos);
    }
    if (n > p->headers_cap) {  /* n is bounded by the bytes left in the record */
        HeaderSpans *grown = PyMem_Realloc(p->headers, (size_t)n * sizeof(HeaderSpans));
        if (grown == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        p->headers = grown;
        p->headers_cap = (Py_ssize_t)n;
    }
    for (Py_ssize_t h = 0; h < (Py_ssize_t)n; h++)
        if (parse_header(r, pos, rec_end, &p->headers[h]) < 0)
            return -1;
    *count = (Py_ssize_t)n;
    return 0;
}

int kw_parse_record(Parser *p, Py_ssize_t *pos, ParsedRecord *rec) {
    Reader *r = &p->r;
    int64_t length = 0;
    Py_ssize_t at = *pos;
    if (read_varint(r, at, at, 2, 5, &length, &at) < 0)
        return -1;
    if (length < 0 || length > p->end - at)
        return kw_fail(r, at, "invalid record size %lld: %zd bytes of records left (count says %zd records)",
                       (long long)length, p->end - at, p->count);
    Py_ssize_t rec_end = at + (Py_ssize_t)length;
    if (at >= r->len)
        return kw_fail(r, at, "record runs past the end of the buffer");
    rec->attributes = r->d[at];
    /* the timestamp delta follows the attributes byte, which the pure loop has not passed yet */
    if (read_varint(r, at + 1, at, 2, 10, &rec->ts_delta, &at) < 0
            || read_varint(r, at, at, 2, 5, &rec->off_delta, &at) < 0
            || nullable_span(r, &at, rec_end, 2, "key", &rec->key) < 0
            || nullable_span(r, &at, rec_end, 2, "value", &rec->value) < 0
            || parse_headers(p, &at, rec_end, &rec->n_headers) < 0)
        return -1;
    if (at != rec_end)
        return kw_fail(r, rec_end - (Py_ssize_t)length, "invalid record size: expected to read %lld bytes in "
                       "record payload, but instead read %zd", (long long)length, at - rec_end + (Py_ssize_t)length);
    *pos = at;
    return 0;
}

void kw_parser_free(Parser *p) {
    PyMem_Free(p->headers);
    p->headers = NULL;
    p->headers_cap = 0;
    Py_CLEAR(p->r.reason);
}

PyObject *kw_byte_view(PyObject *data) {
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

int kw_check_range(Py_ssize_t start, Py_ssize_t end, Py_ssize_t len, Py_ssize_t count) {
    /* The caller has checked the framing; refuse anything that would read outside it or
     * allocate more than the bytes could hold. */
    if (start < 0 || start > end || end > len || count < 0 || count > (end - start) / 7) {
        PyErr_SetString(PyExc_ValueError, "records range outside the buffer or count too large");
        return -1;
    }
    return 0;
}

int kw_parse_batch(Parser *p, Py_ssize_t start, RecordSink sink, void *ctx, Py_ssize_t *done) {
    Py_ssize_t pos = start;
    ParsedRecord rec;
    for (*done = 0; *done < p->count; *done += 1) {
        if (kw_parse_record(p, &pos, &rec) < 0)
            return p->r.reason != NULL ? 0 : -1;
        if (sink(ctx, p, &rec) < 0)
            return -1;
    }
    if (pos != p->end)
        kw_fail(&p->r, pos, "incorrect declared batch size: %zd bytes remain after the last record", p->end - pos);
    return 0;
}

int kw_batch_args(PyObject *const *args, BatchArgs *a) {
    Py_ssize_t start = PyLong_AsSsize_t(args[1]), end = PyLong_AsSsize_t(args[2]);
    Py_ssize_t count = PyLong_AsSsize_t(args[3]);
    a->base_offset = PyLong_AsLongLong(args[4]);
    a->base_timestamp = PyLong_AsLongLong(args[5]);
    a->log_append_time = args[6] == Py_None ? NULL : args[6];
    if (PyErr_Occurred() || (a->view = kw_byte_view(args[0])) == NULL)
        return -1;
    Py_buffer *view = PyMemoryView_GET_BUFFER(a->view);
    a->start = start;
    a->parser = (Parser){{view->buf, view->len, NULL, 0}, end, count, NULL, 0};
    if (kw_check_range(start, end, view->len, count) < 0) {
        Py_CLEAR(a->view);
        return -1;
    }
    return 0;
}

PyObject *kw_result(PyObject *value, Reader *r) {
    if (r->reason == NULL)
        return PyTuple_Pack(2, value, Py_None);
    return Py_BuildValue("(O(On))", value, r->reason, r->err_pos);
}

/* check_records(data, start, end, count, base_offset, base_timestamp, log_append_time) -> None
 * or (reason, position): what decode_records would find wrong with these records, found without
 * making a single record object (`kafkawire pcap --check` reads every batch of a capture only
 * to know that it is sound). */
static int skip_record(void *ctx, const Parser *p, const ParsedRecord *rec) {
    (void)ctx, (void)p, (void)rec;
    return 0;
}

PyObject *kw_check_records(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    if (nargs != 7) {
        PyErr_SetString(PyExc_TypeError, "check_records takes 7 arguments");
        return NULL;
    }
    BatchArgs a;
    if (kw_batch_args(args, &a) < 0)
        return NULL;
    PyObject *result = NULL;
    Py_ssize_t done;
    if (kw_parse_batch(&a.parser, a.start, skip_record, NULL, &done) == 0)
        result = a.parser.r.reason == NULL ? Py_NewRef(Py_None)
                                           : Py_BuildValue("(On)", a.parser.r.reason, a.parser.r.err_pos);
    kw_parser_free(&a.parser);
    Py_DECREF(a.view);
    return result;
}
