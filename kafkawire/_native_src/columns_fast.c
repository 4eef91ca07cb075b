/* The one-pass loop of Columns (issue 26): the records of a plain batch straight into the
 * column buffers, sized once per batch from its header, with the record fields read inline
 * and no call per record. It takes only what it can take whole: anything else - bad bytes,
 * a varint longer than 4 bytes (9 for the timestamp delta), an offset or timestamp past
 * int64, a header key that is not UTF-8 - makes it step aside, and the caller puts the
 * buffers back and reads the batch with the general parser (parse.c), which gives the pure
 * loop's result or error. So when this loop finishes a batch, its columns are the ones the
 * general path would have built: every check the general parser makes on a good batch is
 * made here too (lengths against the bytes left in the record, the header count against
 * half of them, the record and the batch ending exactly where their sizes say). */
#include "columns.h"

/* A zigzag varint of at most max_bytes bytes, all before lim; NULL otherwise. */
static inline const uint8_t *varint(const uint8_t *p, const uint8_t *lim, int max_bytes, int64_t *out) {
    if (__builtin_expect(p < lim && *p < 0x80, 1)) {
        *out = (int64_t)(*p >> 1) ^ -(int64_t)(*p & 1);
        return p + 1;
    }
    uint64_t v = 0;
    for (int i = 0; i < max_bytes && p < lim; i++) {
        uint8_t b = *p++;
        v |= (uint64_t)(b & 0x7F) << (7 * i);
        if (!(b & 0x80)) {
            *out = (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
            return p;
        }
    }
    return NULL;
}

/* A length (-1: null) and that many bytes, all before rec_end; NULL otherwise. */
static inline const uint8_t *span(const uint8_t *p, const uint8_t *rec_end, int nullable, const uint8_t **s,
                                  int64_t *len) {
    p = varint(p, rec_end, 4, len);
    if (p == NULL || *len < -nullable || *len > rec_end - p)
        return NULL;
    *s = p;
    return *len > 0 ? p + *len : p;
}

/* A value of a column whose data and offsets have room for it (reserved for the batch). */
static inline int put_reserved(BinCol *c, const uint8_t *s, int64_t len) {
    if (valid_put(&c->validity, c->n, c->nulls, len >= 0) < 0)
        return -1;
    if (len > 0) {
        memcpy(c->data.p + c->data.len, s, (size_t)len);
        c->data.len += len;
    }
    int32_t end = (int32_t)c->data.len;
    memcpy(c->offsets.p + c->offsets.len, &end, 4);
    c->offsets.len += 4;
    c->nulls += len < 0;
    c->n += 1;
    return 0;
}

/* Room for a batch of `count` records in `bytes` bytes: every fixed-width slot, and the data
 * of key and value (each at most the batch's bytes); 0 when a binary column would pass
 * Arrow's 2 GiB (the general path raises that error), -1 for memory. */
static int reserve_batch(Columns *c, Py_ssize_t count, Py_ssize_t bytes) {
    BinCol *cols[] = {&c->key, &c->value, &c->hkey, &c->hvalue};
    int wanted[] = {c->want_key, c->want_value, c->want_headers, c->want_headers};
    for (int i = 0; i < 4; i++) {
        if (!wanted[i])
            continue;
        if (cols[i]->data.len + bytes > INT32_MAX)
            return 0;
        int32_t zero = 0;
        if ((cols[i]->offsets.len == 0 && kw_buf_put(&cols[i]->offsets, &zero, 4) < 0)
                || (i < 2 && (kw_buf_reserve(&cols[i]->data, bytes) < 0
                              || kw_buf_reserve(&cols[i]->offsets, 4 * count) < 0)))
            return -1;
    }
    return kw_buf_reserve(&c->offsets, 8 * count) < 0 || kw_buf_reserve(&c->timestamps, 8 * count) < 0
           || kw_buf_reserve(&c->list_offsets, 4 * count) < 0 ? -1 : 1;
}

static inline int ascii(const uint8_t *s, int64_t n) {
    uint8_t any = 0;
    for (int64_t i = 0; i < n; i++)
        any |= s[i];
    return any < 0x80;
}

/* One header into the header columns: 1, 0 (a key that is not UTF-8: the general path calls
 * fix_key), -1 (memory). */
static int put_header(Columns *c, const uint8_t *k, int64_t klen, const uint8_t *v, int64_t vlen) {
    int same = c->last_key != NULL && klen == c->last_key_len && memcmp(k, c->last_key, (size_t)klen) == 0;
    if (!same && !ascii(k, klen) && !kw_is_utf8(k, klen))
        return 0;
    c->last_key = k;
    c->last_key_len = klen;
    return bin_put(&c->hkey, k, klen, 1) < 0 || bin_put(&c->hvalue, v, vlen < 0 ? 0 : vlen, vlen >= 0) < 0 ? -1 : 1;
}

/* A record's headers (n of them, in the bytes before rec_end), stored if wanted. */
static int put_headers(Columns *c, const uint8_t **at, const uint8_t *rec_end, int64_t n) {
    const uint8_t *p = *at;
    for (int64_t h = 0; h < n; h++) {
        const uint8_t *k, *v;
        int64_t klen, vlen;
        if ((p = span(p, rec_end, 0, &k, &klen)) == NULL || (p = span(p, rec_end, 1, &v, &vlen)) == NULL)
            return 0;
        int rc = c->want_headers ? put_header(c, k, klen, v, vlen) : 1;
        if (rc <= 0)
            return rc;
    }
    *at = p;
    if (!c->want_headers)
        return 1;
    int32_t end = (int32_t)c->hkey.n;
    if (valid_put(&c->list_validity, c->n, c->list_nulls, n > 0) < 0)
        return -1;
    memcpy(c->list_offsets.p + c->list_offsets.len, &end, 4);
    c->list_offsets.len += 4;
    c->list_nulls += n == 0;  /* Spark's source: null, not an empty list */
    return 1;
}

static inline void put_int64(Buf *b, int64_t v) {
    memcpy(b->p + b->len, &v, 8);
    b->len += 8;
}

/* One record at *at: 1 (stored, *at past it), 0 (step aside), -1 (memory). */
static inline int put_record(Columns *c, const uint8_t **at, const uint8_t *lim, int64_t base_offset,
                             int64_t base_timestamp, const int64_t *log_append_time) {
    int64_t length, ts_delta, off_delta, klen, vlen, n_headers, offset, timestamp;
    const uint8_t *p = varint(*at, lim, 4, &length), *k, *v;
    if (p == NULL || length < 1 || length > lim - p)
        return 0;
    const uint8_t *rec_end = p + length;
    p += 1;  /* the record's attributes: unused */
    if ((p = varint(p, rec_end, 9, &ts_delta)) == NULL || (p = varint(p, rec_end, 4, &off_delta)) == NULL
            || (p = span(p, rec_end, 1, &k, &klen)) == NULL || (p = span(p, rec_end, 1, &v, &vlen)) == NULL
            || (p = varint(p, rec_end, 4, &n_headers)) == NULL || n_headers < 0 || n_headers > (rec_end - p) / 2)
        return 0;
    if (kw_record_position(c, base_offset, base_timestamp, log_append_time, off_delta, ts_delta, &offset,
                           &timestamp) < 0) {
        PyErr_Clear();  /* the general path raises it, after any bad bytes before it */
        return 0;
    }
    put_int64(&c->offsets, offset);
    put_int64(&c->timestamps, timestamp);
    if ((c->want_key && put_reserved(&c->key, k, klen) < 0) || (c->want_value && put_reserved(&c->value, v, vlen) < 0))
        return -1;
    int rc = put_headers(c, &p, rec_end, n_headers);
    if (rc <= 0)
        return rc;
    if (p != rec_end)
        return 0;
    *at = p;
    c->n += 1;
    return 1;
}

int kw_columns_fast(Columns *c, const uint8_t *d, Py_ssize_t start, Py_ssize_t end, Py_ssize_t count,
                    int64_t base_offset, int64_t base_timestamp, const int64_t *log_append_time) {
    int rc = reserve_batch(c, count, end - start);
    const uint8_t *p = d + start, *lim = d + end;
    for (Py_ssize_t i = 0; i < count && rc > 0; i++)
        rc = put_record(c, &p, lim, base_offset, base_timestamp, log_append_time);
    return rc > 0 && p != lim ? 0 : rc;
}
