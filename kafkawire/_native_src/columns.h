/* The Arrow column buffers Columns accumulates (issue 26), shared by columns.c (the type, the
 * general per-record path) and columns_fast.c (the one-pass loop over plain batches). */
#ifndef KAFKAWIRE_COLUMNS_H
#define KAFKAWIRE_COLUMNS_H

#include "records.h"

/* One Arrow binary/string column: validity bits, int32 offsets, data. The validity bits are
 * only written once the column has a null (Arrow takes no bitmap for a column without one):
 * until then every value is present and no bit is set one by one. */
typedef struct {
    Buf validity, offsets, data;
    Py_ssize_t n, nulls;
} BinCol;

static inline int bit_put(Buf *bits, Py_ssize_t index, int set) {
    if (index % 8 == 0) {
        uint8_t zero = 0;
        if (kw_buf_put(bits, &zero, 1) < 0)
            return -1;
    }
    if (set)
        bits->p[index / 8] |= (char)(1 << (index % 8));
    return 0;
}

/* The validity bit of value `index` of a column that had `nulls` nulls before it: the first
 * null writes the bits of every value before it (all set) at once. */
static inline int valid_put(Buf *bits, Py_ssize_t index, Py_ssize_t nulls, int set) {
    if (__builtin_expect(nulls == 0 && set, 1))
        return 0;
    if (nulls > 0)
        return bit_put(bits, index, set);
    Py_ssize_t full = index / 8;
    bits->len = 0;
    if (kw_buf_reserve(bits, full + 1) < 0)
        return -1;
    memset(bits->p, 0xFF, (size_t)full);
    bits->p[full] = (char)((1 << (index % 8)) - 1);  /* the bits before index set, index's clear */
    bits->len = full + 1;
    return 0;
}

static inline int bin_put(BinCol *c, const uint8_t *src, Py_ssize_t len, int present) {
    if (c->offsets.len == 0) {
        int32_t zero = 0;
        if (kw_buf_put(&c->offsets, &zero, 4) < 0)
            return -1;
    }
    if (c->data.len + len > INT32_MAX) {
        PyErr_SetString(PyExc_OverflowError, "an Arrow binary column holds at most 2 GiB: read fewer batches at once");
        return -1;
    }
    if (valid_put(&c->validity, c->n, c->nulls, present) < 0 || (present && kw_buf_put(&c->data, src, len) < 0))
        return -1;
    int32_t end = (int32_t)c->data.len;
    c->nulls += !present;
    c->n += 1;
    return kw_buf_put(&c->offsets, &end, 4);
}

typedef struct {
    PyObject_HEAD
    PyObject *fix_key;
    Py_ssize_t n;
    Buf offsets, timestamps;
    BinCol key, value, hkey, hvalue;
    Buf list_offsets, list_validity;   /* headers: list<struct<key, value>> */
    Py_ssize_t list_nulls;
    const uint8_t *last_key;           /* the last header key checked as UTF-8 */
    Py_ssize_t last_key_len;
    int want_key, want_value, want_headers;  /* columns a pruned read leaves out stay empty */
    int saturate;  /* a timestamp past int64 is stored as its nearest end, not an OverflowError */
    Buf inflated;  /* the records of the compressed batch add_batches is reading (decompress.c) */
} Columns;

/* A record's offset and timestamp from its batch's bases and its deltas (log_append_time NULL
 * for CREATE_TIME): 0, or -1 with OverflowError set when one passes int64 (a timestamp is
 * kept at int64's nearest end instead when the Columns saturates). */
static inline int kw_record_position(const Columns *c, int64_t base_offset, int64_t base_timestamp,
                                     const int64_t *log_append_time, int64_t off_delta, int64_t ts_delta,
                                     int64_t *offset, int64_t *timestamp) {
    int ts_overflow = 0;
    if (log_append_time != NULL)
        *timestamp = *log_append_time;
    else if (__builtin_add_overflow(base_timestamp, ts_delta, timestamp)) {
        ts_overflow = !c->saturate;
        *timestamp = ts_delta > 0 ? INT64_MAX : INT64_MIN;
    }
    if (__builtin_add_overflow(base_offset, off_delta, offset) || ts_overflow) {
        PyErr_SetString(PyExc_OverflowError, "a record's offset or timestamp passes int64 (hostile batch header)");
        return -1;
    }
    return 0;
}

/* Whether the n bytes at s are UTF-8 (columns.c). */
int kw_is_utf8(const uint8_t *s, Py_ssize_t n);

/* The records d[start:end] (count of them) of a plain batch appended in one pass
 * (columns_fast.c): 1 when done; 0 when the batch holds anything the loop does not take
 * (bad bytes, a long varint, a non-ASCII header key...), with the buffers part-written: the
 * caller puts them back and reads the batch with the general parser, which words any error;
 * -1 for a Python error (memory). */
int kw_columns_fast(Columns *c, const uint8_t *d, Py_ssize_t start, Py_ssize_t end, Py_ssize_t count,
                    int64_t base_offset, int64_t base_timestamp, const int64_t *log_append_time);

#endif
