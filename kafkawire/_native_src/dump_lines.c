/* dump-log's record lines of a v2 data batch in C (issue 26): the native twin of the text loop
 * of kafkawire/tools/dump_log_records.py (RecordPrinter._dump_data_records), which is its
 * oracle and does every batch this code turns down.
 *
 * dump_records(data, start, end, count, base_offset, base_timestamp, log_append_time,
 *              previous_offset, timestamp_name, base_sequence, mode, metadata_table,
 *              batch_buffer, batch_position)
 *     -> None, or (text, last_offset)
 *
 * With a batch_buffer (else None), text starts with the batch's line (RecordPrinter._batch_line),
 * from the header at batch_buffer[batch_position:], whose CRC-32C is checked here.
 * text is the batch's record lines joined by newlines, exactly as the pure loop writes them:
 * "| offset: ... headerKeys: [...]" and, by mode, nothing (0: --deep-iteration), the key and
 * payload as Java's UTF-8 text (1: --print-data-log) or the metadata record's JSON (2:
 * --cluster-metadata-decoder). None means "the pure loop must do this batch", and nothing is
 * written: a record that does not parse, an offset that does not follow the previous one
 * (Kafka's non-consecutive report), bytes that are not well-formed UTF-8 (Java's replacement
 * rules), a metadata value the fast decoder does not take (or that fails), an overflow.
 *
 * metadata_table maps api_key * 256 + version to (decoder, b'{"type":"..","version":v,"data":',
 * JsonFormat or None), built by kafkawire/tools/dump_log_native.py from the generated classes. */
#include "dump_text.h"

enum { MODE_DEEP = 0, MODE_PLAIN = 1, MODE_METADATA = 2, MODE_BATCHES = 3 };

typedef struct {
    TextBuf out;
    int64_t base_offset, base_timestamp, previous, base_sequence;
    PyObject *log_append_time;
    int64_t log_append_ms;
    const char *ts_name;
    Py_ssize_t ts_name_len;
    int mode;
    PyObject *table;
    Py_ssize_t lines;
} LineCtx;

/* Strict UTF-8 (what Python decodes without an error handler): then Java's text is the same. */
static int well_formed_utf8(const uint8_t *s, Py_ssize_t n) {
    Py_ssize_t i = 0;
    while (i < n) {
        uint8_t c = s[i];
        if (c < 0x80) {
            i++;
            continue;
        }
        Py_ssize_t need;
        uint8_t lo = 0x80, hi = 0xBF;
        if (c >= 0xC2 && c <= 0xDF)
            need = 1;
        else if (c >= 0xE0 && c <= 0xEF) {
            need = 2;
            if (c == 0xE0) lo = 0xA0;
            if (c == 0xED) hi = 0x9F;
        } else if (c >= 0xF0 && c <= 0xF4) {
            need = 3;
            if (c == 0xF0) lo = 0x90;
            if (c == 0xF4) hi = 0x8F;
        } else
            return 0;
        if (n - i - 1 < need || s[i + 1] < lo || s[i + 1] > hi)
            return 0;
        for (Py_ssize_t k = 2; k <= need; k++)
            if ((s[i + k] & 0xC0) != 0x80)
                return 0;
        i += need + 1;
    }
    return 1;
}

/* Java's text of bytes (well-formed only): 0, -1 (not taken on), -2 (memory). */
static int put_java_text(TextBuf *b, const uint8_t *d, const Span *s) {
    if (!well_formed_utf8(d + s->pos, s->len))
        return -1;
    return kw_buf_put(b, (const char *)d + s->pos, s->len) < 0 ? -2 : 0;
}

/* " payload: {"type":..,"version":..,"data":{..}}" of a metadata record value. */
static int put_metadata(LineCtx *c, const uint8_t *d, const Span *value) {
    const uint8_t *v = d + value->pos;
    if (!value->present || value->len < 3 || v[0] != 1 || v[1] >= 0x80 || v[2] >= 0x80)
        return -1;
    PyObject *key = PyLong_FromLong((long)v[1] * 256 + v[2]);
    if (key == NULL)
        return -2;
    PyObject *entry = PyDict_GetItemWithError(c->table, key);  /* borrowed */
    Py_DECREF(key);
    if (entry == NULL)
        return PyErr_Occurred() ? -2 : -1;
    if (!PyTuple_CheckExact(entry) || PyTuple_GET_SIZE(entry) != 3 || PyTuple_GET_ITEM(entry, 2) == Py_None)
        return -1;
    PyObject *args[2] = {PyBytes_FromStringAndSize((const char *)v, value->len), NULL};
    if (args[0] == NULL)
        return -2;
    args[1] = PyLong_FromLong(3);
    PyObject *decoded = args[1] ? PyObject_Vectorcall(PyTuple_GET_ITEM(entry, 0), args, 2, NULL) : NULL;
    Py_DECREF(args[0]);
    Py_XDECREF(args[1]);
    if (decoded == NULL) {  /* the pure decoder's error: the pure loop reports it */
        PyErr_Clear();
        return -1;
    }
    int rc = -1;
    if (PyTuple_CheckExact(decoded) && PyTuple_GET_SIZE(decoded) == 2
            && PyLong_AsSsize_t(PyTuple_GET_ITEM(decoded, 1)) == value->len) {
        PyObject *head = PyTuple_GET_ITEM(entry, 1);
        rc = KW_PUT_LIT(&c->out, " payload: ");
        if (rc == 0)
            rc = kw_buf_put(&c->out, PyBytes_AS_STRING(head), PyBytes_GET_SIZE(head)) < 0 ? -2 : 0;
        if (rc == 0)
            rc = kw_json_format(&c->out, PyTuple_GET_ITEM(entry, 2), PyTuple_GET_ITEM(decoded, 0));
        if (rc == 0)
            rc = kw_buf_putc(&c->out, '}') < 0 ? -2 : 0;
    }
    if (PyErr_Occurred() && rc != -2) {
        PyErr_Clear();
        rc = -1;
    }
    Py_DECREF(decoded);
    return rc;
}

static int put_header_keys(TextBuf *b, const Parser *p, const ParsedRecord *rec) {
    if (KW_PUT_LIT(b, " headerKeys: [") < 0)
        return -2;
    for (Py_ssize_t h = 0; h < rec->n_headers; h++) {
        if (h && kw_buf_putc(b, ',') < 0)
            return -2;
        int rc = put_java_text(b, p->r.d, &p->headers[h].key);
        if (rc < 0)
            return rc;
    }
    return kw_buf_putc(b, ']') < 0 ? -2 : 0;
}

/* "| offset: O <ts>: T keySize: K valueSize: V sequence: S" */
static int put_record_head(LineCtx *c, int64_t offset, int64_t timestamp, const ParsedRecord *rec) {
    TextBuf *b = &c->out;
    int64_t sequence = -1;
    if (c->base_sequence >= 0) {  /* DefaultRecordBatch.incrementSequence */
        sequence = c->base_sequence + rec->off_delta;
        if (sequence > 0x7FFFFFFF)
            sequence -= 0x80000000LL;
    }
    if ((c->lines && kw_buf_putc(b, '\n') < 0) || KW_PUT_LIT(b, "| offset: ") < 0 || kw_buf_int(b, offset) < 0
            || kw_buf_putc(b, ' ') < 0 || kw_buf_put(b, c->ts_name, c->ts_name_len) < 0
            || KW_PUT_LIT(b, ": ") < 0 || kw_buf_int(b, timestamp) < 0 || KW_PUT_LIT(b, " keySize: ") < 0
            || kw_buf_int(b, rec->key.present ? rec->key.len : -1) < 0 || KW_PUT_LIT(b, " valueSize: ") < 0
            || kw_buf_int(b, rec->value.present ? rec->value.len : -1) < 0 || KW_PUT_LIT(b, " sequence: ") < 0
            || kw_buf_int(b, sequence) < 0)
        return -2;
    return 0;
}

/* One record's line; -1 turns the batch down (no Python error), -2 is a Python error. */
static int line_sink(void *ctx, const Parser *p, const ParsedRecord *rec) {
    LineCtx *c = ctx;
    int64_t offset, timestamp;
    if (__builtin_add_overflow(c->base_offset, rec->off_delta, &offset) || offset != c->previous + 1)
        return -1;
    if (c->log_append_time != NULL)
        timestamp = c->log_append_ms;
    else if (__builtin_add_overflow(c->base_timestamp, rec->ts_delta, &timestamp))
        return -1;
    c->previous = offset;
    int rc = put_record_head(c, offset, timestamp, rec);
    if (rc == 0)
        rc = put_header_keys(&c->out, p, rec);
    if (rc == 0 && c->mode == MODE_PLAIN) {
        if (rec->key.present && KW_PUT_LIT(&c->out, " key: ") == 0)
            rc = put_java_text(&c->out, p->r.d, &rec->key);
        if (rc == 0 && rec->value.present && KW_PUT_LIT(&c->out, " payload: ") == 0)
            rc = put_java_text(&c->out, p->r.d, &rec->value);
        if (rc == 0 && PyErr_Occurred())
            rc = -2;
    } else if (rc == 0 && c->mode == MODE_METADATA)
        rc = put_metadata(c, p->r.d, &rec->value);
    c->lines++;
    return rc;
}

static inline int64_t be_int(const uint8_t *p, int n) {  /* a big-endian signed int of n bytes */
    uint64_t v = 0;
    for (int i = 0; i < n; i++)
        v = (v << 8) | p[i];
    return n == 8 ? (int64_t)v : (int64_t)(v ^ (1ULL << (8 * n - 1))) - (int64_t)(1ULL << (8 * n - 1));
}

static const char *const codec_names[] = {"none", "gzip", "snappy", "lz4", "zstd"};

/* The v2 batch line (RecordPrinter._batch_line) of the batch at h (size bytes, CRC checked
 * here: a batch that fails it goes to the pure loop, which reports it). */
static int put_batch_line(TextBuf *b, const uint8_t *h, Py_ssize_t size, Py_ssize_t position) {
    int64_t base_offset = be_int(h, 8), last_delta = be_int(h + 23, 4), base_sequence = be_int(h + 53, 4);
    int attributes = (int)be_int(h + 21, 2);
    uint32_t crc = (uint32_t)be_int(h + 17, 4) & 0xFFFFFFFFu;
    if (size < 61 || (attributes & 7) > 4 || kw_crc32c(h + 21, (size_t)(size - 21)) != crc)
        return -1;
    int64_t last, last_sequence = -1;
    if (__builtin_add_overflow(base_offset, last_delta, &last))
        return -1;
    if (base_sequence != -1) {
        last_sequence = base_sequence + last_delta;
        if (last_sequence > 0x7FFFFFFF)
            last_sequence -= 0x80000000LL;
    }
    char tmp[640];
    int n = snprintf(tmp, sizeof tmp, "baseOffset: %lld lastOffset: %lld count: %lld baseSequence: %lld "
                     "lastSequence: %lld producerId: %lld producerEpoch: %lld partitionLeaderEpoch: %lld "
                     "isTransactional: %s isControl: %s deleteHorizonMs: ",
                     (long long)base_offset, (long long)last, (long long)be_int(h + 57, 4), (long long)base_sequence,
                     (long long)last_sequence, (long long)be_int(h + 43, 8), (long long)be_int(h + 51, 2),
                     (long long)be_int(h + 12, 4), attributes & 0x10 ? "true" : "false",
                     attributes & 0x20 ? "true" : "false");
    if (attributes & 0x40)
        n += snprintf(tmp + n, sizeof tmp - n, "OptionalLong[%lld]", (long long)be_int(h + 27, 8));
    else
        n += snprintf(tmp + n, sizeof tmp - n, "OptionalLong.empty");
    n += snprintf(tmp + n, sizeof tmp - n, " position: %lld %s: %lld size: %lld magic: 2 compresscodec: %s "
                  "crc: %lu isvalid: true", (long long)position, attributes & 0x08 ? "LogAppendTime" : "CreateTime",
                  (long long)be_int(h + 35, 8), (long long)size, codec_names[attributes & 7], (unsigned long)crc);
    return kw_buf_put(b, tmp, n) < 0 ? -2 : 0;
}

/* The batch line from (buffer, position), or nothing for None; 0, -1 (the pure loop), -2. */
static int batch_line_from(LineCtx *c, PyObject *buffer, PyObject *position_obj) {
    if (buffer == Py_None)
        return 0;
    Py_ssize_t position = PyLong_AsSsize_t(position_obj);
    if (position == -1 && PyErr_Occurred())
        return -2;
    Py_buffer view;
    if (PyObject_GetBuffer(buffer, &view, PyBUF_SIMPLE) < 0)
        return -2;
    int rc = -1;
    if (position >= 0 && view.len - position >= 61) {
        const uint8_t *h = (const uint8_t *)view.buf + position;
        int64_t size = be_int(h + 8, 4) + 12;
        if (size >= 61 && size <= view.len - position) {
            rc = put_batch_line(&c->out, h, (Py_ssize_t)size, position);
            c->lines += rc == 0;
        }
    }
    PyBuffer_Release(&view);
    return rc;
}

/* 0 when a FASTCALL function got its n arguments; -1 with TypeError set otherwise. */
static int takes(const char *name, Py_ssize_t nargs, Py_ssize_t n) {
    if (nargs == n)
        return 0;
    PyErr_Format(PyExc_TypeError, "%s takes %zd arguments (%zd given)", name, n, nargs);
    return -1;
}

PyObject *kw_dump_records(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (takes("dump_records", nargs, 14) < 0)
        return NULL;
    BatchArgs a;
    if (kw_batch_args(args, &a) < 0)
        return NULL;
    LineCtx c = {{NULL, 0, 0}, a.base_offset, a.base_timestamp, 0, 0, a.log_append_time, 0, NULL, 0, 0, NULL, 0};
    c.previous = PyLong_AsLongLong(args[7]);
    c.ts_name = PyUnicode_Check(args[8]) ? PyUnicode_AsUTF8AndSize(args[8], &c.ts_name_len) : NULL;
    c.base_sequence = PyLong_AsLongLong(args[9]);
    c.mode = (int)PyLong_AsLong(args[10]);
    c.table = args[11];
    if (c.log_append_time != NULL)
        c.log_append_ms = PyLong_AsLongLong(c.log_append_time);
    PyObject *result = NULL;
    if (c.ts_name == NULL && !PyErr_Occurred())
        PyErr_SetString(PyExc_TypeError, "timestamp_name must be a str");
    if (c.mode == MODE_METADATA && !PyErr_Occurred() && !PyDict_CheckExact(c.table))
        PyErr_SetString(PyExc_TypeError, "metadata_table must be a dict");
    int head = PyErr_Occurred() ? -2 : batch_line_from(&c, args[12], args[13]);
    if (head == -1)
        result = Py_NewRef(Py_None);
    else if (head == 0) {
        Py_ssize_t done = 0;
        int rc = kw_parse_batch(&a.parser, a.start, line_sink, &c, &done);
        if (rc == 0 && a.parser.r.reason == NULL)
            result = Py_BuildValue("(NL)", PyUnicode_DecodeUTF8(c.out.p ? c.out.p : "", c.out.len, "strict"),
                                   (long long)c.previous);
        else if (!PyErr_Occurred())
            result = Py_NewRef(Py_None);  /* bad bytes or a record the pure loop must do */
    }
    PyMem_RawFree(c.out.p);
    kw_parser_free(&a.parser);
    Py_DECREF(a.view);
    return result;
}

/* ---- dump_run: the batches of a log, one after another ----
 *
 * dump_run(data, position, previous_offset, mode, metadata_table, max_chars)
 *     -> (text, last_offset, position, more)
 *
 * The lines of the batches from data[position:] on, up to the first one it does not take on
 * (anything but a whole, CRC-valid, uncompressed v2 data batch whose records all go through
 * the record loop above; in MODE_BATCHES, only the batch lines, any valid v2 batch): the pure
 * loop goes on from the returned position. more is true when it stopped after max_chars of text,
 * not at such a batch. The framing rules are kafkawire.records.scan_log's. */

#define LOG_OVERHEAD 12
#define HEADER_UP_TO_MAGIC 17
#define MIN_ENTRY_SIZE 14
#define BATCH_OVERHEAD 61
#define MIN_RECORD_SIZE 7

/* One batch at pos (total bytes): 0 written, -1 not taken on (nothing written), -2 error. */
static int run_batch(LineCtx *c, const uint8_t *d, Py_ssize_t len, Py_ssize_t pos, Py_ssize_t total) {
    const uint8_t *h = d + pos;
    int attributes = (int)be_int(h + 21, 2);
    int64_t count = be_int(h + 57, 4);
    if (c->mode != MODE_BATCHES
            && ((attributes & 0x27) != 0 || count <= 0 || count > (total - BATCH_OVERHEAD) / MIN_RECORD_SIZE))
        return -1;  /* compressed, control, or no records / too many: the pure loop */
    Py_ssize_t mark = c->out.len, lines = c->lines;
    int64_t previous = c->previous;
    if (c->lines && kw_buf_putc(&c->out, '\n') < 0)
        return -2;
    int rc = put_batch_line(&c->out, h, total, pos);
    if (rc == 0 && c->mode != MODE_BATCHES) {
        c->lines++;
        c->base_offset = be_int(h, 8);
        c->base_timestamp = be_int(h + 27, 8);
        c->base_sequence = be_int(h + 53, 4);
        c->log_append_time = attributes & 0x08 ? Py_True : NULL;
        c->log_append_ms = be_int(h + 35, 8);
        c->ts_name = attributes & 0x08 ? "LogAppendTime" : "CreateTime";
        c->ts_name_len = (Py_ssize_t)strlen(c->ts_name);
        Parser parser = {{d, len, NULL, 0}, pos + total, (Py_ssize_t)count, NULL, 0};
        Py_ssize_t done = 0;
        rc = kw_parse_batch(&parser, pos + BATCH_OVERHEAD, line_sink, c, &done);
        if (rc < 0 && PyErr_Occurred())
            rc = -2;
        else if (rc < 0 || parser.r.reason != NULL)
            rc = -1;
        kw_parser_free(&parser);
    } else if (rc == 0)
        c->lines++;
    if (rc == -1) {  /* leave no trace of the batch: the pure loop does it */
        c->out.len = mark;
        c->lines = lines;
        c->previous = previous;
    }
    return rc;
}

PyObject *kw_dump_run(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (takes("dump_run", nargs, 6) < 0)
        return NULL;
    Py_buffer view;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0)
        return NULL;
    LineCtx c = {{NULL, 0, 0}, 0, 0, 0, 0, NULL, 0, NULL, 0, 0, NULL, 0};
    Py_ssize_t pos = PyLong_AsSsize_t(args[1]), max_chars = PyLong_AsSsize_t(args[5]);
    c.previous = PyLong_AsLongLong(args[2]);
    c.mode = (int)PyLong_AsLong(args[3]);
    c.table = args[4];
    int more = 0, rc = 0;
    if (!PyErr_Occurred() && (pos < 0 || pos > view.len))
        PyErr_SetString(PyExc_ValueError, "position outside the data");
    if (!PyErr_Occurred() && c.mode == MODE_METADATA && !PyDict_CheckExact(c.table))
        PyErr_SetString(PyExc_TypeError, "metadata_table must be a dict");
    const uint8_t *d = view.buf;
    while (!PyErr_Occurred()) {
        if (c.out.len >= max_chars) {
            more = 1;
            break;
        }
        Py_ssize_t left = view.len - pos;
        if (left <= HEADER_UP_TO_MAGIC)
            break;
        int64_t size = be_int(d + pos + 8, 4);
        if (size < MIN_ENTRY_SIZE || size > left - LOG_OVERHEAD || d[pos + 16] != 2
                || size + LOG_OVERHEAD < BATCH_OVERHEAD)
            break;
        rc = run_batch(&c, d, view.len, pos, (Py_ssize_t)size + LOG_OVERHEAD);
        if (rc < 0)
            break;
        pos += (Py_ssize_t)size + LOG_OVERHEAD;
    }
    PyObject *result = NULL;
    if (!PyErr_Occurred() && rc != -2)
        result = Py_BuildValue("(NLnO)", PyUnicode_DecodeUTF8(c.out.p ? c.out.p : "", c.out.len, "strict"),
                               (long long)c.previous, pos, more ? Py_True : Py_False);
    PyMem_RawFree(c.out.p);
    PyBuffer_Release(&view);
    return result;
}
