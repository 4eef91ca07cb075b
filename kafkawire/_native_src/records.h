/* Shared parts of kafkawire's native record path (issue 26): the record parser every output
 * (Record objects, Arrow columns) uses, so that all of them check the bytes, and word their
 * errors, exactly as the pure-Python loop (kafkawire/records/record_decoding.py) does. */
#ifndef KAFKAWIRE_RECORDS_H
#define KAFKAWIRE_RECORDS_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

/* A growable byte buffer (Arrow columns, dump-log's text). Its memory comes from PyMem_Raw*,
 * so that a finished column can be handed to an OwnedBuffer that frees it. */
typedef struct {
    char *p;
    Py_ssize_t len, cap;
} Buf;

int kw_buf_grow(Buf *b, Py_ssize_t extra);  /* room for extra more bytes; -1 (MemoryError set) */
void kw_buf_release(char *p, Py_ssize_t cap);  /* a Buf's memory, freed or kept for reuse (buf_pool.c) */

static inline int kw_buf_reserve(Buf *b, Py_ssize_t extra) {
    if (__builtin_expect(b->len + extra <= b->cap, 1))
        return 0;
    return kw_buf_grow(b, extra);
}

static inline int kw_buf_put(Buf *b, const void *src, Py_ssize_t n) {
    if (kw_buf_reserve(b, n) < 0)
        return -1;
    memcpy(b->p + b->len, src, (size_t)n);
    b->len += n;
    return 0;
}

/* A bad-bytes error: the reason and byte position the pure loop would give. */
typedef struct {
    const uint8_t *d;   /* the whole buffer: reads may pass a batch's end, as the pure loop's do */
    Py_ssize_t len;
    PyObject *reason;   /* set on a decoding error (new reference) */
    Py_ssize_t err_pos;
} Reader;

int kw_fail(Reader *r, Py_ssize_t pos, const char *fmt, ...);

/* bytes at d[pos:pos+len]; present == 0 for a null (-1 length) */
typedef struct {
    Py_ssize_t pos, len;
    int present;
} Span;

typedef struct {
    Span key, value;
} HeaderSpans;

/* One parsed record; header spans go to a growable array the parser owns. */
typedef struct {
    int64_t ts_delta, off_delta;
    long attributes;
    Span key, value;
    Py_ssize_t n_headers;
} ParsedRecord;

typedef struct {
    Reader r;
    Py_ssize_t end;          /* the records' end */
    Py_ssize_t count;        /* records the batch declares (for messages) */
    HeaderSpans *headers;    /* the current record's headers */
    Py_ssize_t headers_cap;
} Parser;

/* The record at *pos (moved past it): 0, or -1 with p->r.reason set for bad bytes or a
 * Python error (memory) set when reason is NULL. */
int kw_parse_record(Parser *p, Py_ssize_t *pos, ParsedRecord *rec);
void kw_parser_free(Parser *p);

/* Every record of a batch's records data[start:end] (count of them) handed to sink(ctx, parser,
 * record) in turn: 0 when done, with p->r.reason set if bad bytes stopped it (the records
 * before went to the sink) or the records end where the last does not; -1 for a Python error
 * (from the sink or memory). *done is how many records the sink got. */
typedef int (*RecordSink)(void *ctx, const Parser *p, const ParsedRecord *rec);
int kw_parse_batch(Parser *p, Py_ssize_t start, RecordSink sink, void *ctx, Py_ssize_t *done);

/* The arguments every batch decoder starts with: (data, start, end, count, base_offset,
 * base_timestamp, log_append_time). view is a byte view of data (kw_byte_view) the caller
 * releases; the parser is ready for kw_parse_batch. */
typedef struct {
    PyObject *view;
    Py_ssize_t start;
    int64_t base_offset, base_timestamp;
    PyObject *log_append_time;  /* NULL: CREATE_TIME */
    Parser parser;
} BatchArgs;

int kw_batch_args(PyObject *const *args, BatchArgs *a);

/* A 1-D contiguous byte view of data (BufferError otherwise), and the framing check shared
 * by the decoders: the range inside the buffer, count bounded by the bytes (7 per record). */
PyObject *kw_byte_view(PyObject *data);
int kw_check_range(Py_ssize_t start, Py_ssize_t end, Py_ssize_t len, Py_ssize_t count);

/* The result of a decode: (value, None) or (value, (reason, position)). */
PyObject *kw_result(PyObject *value, Reader *r);

/* memoryview(data)[start:start+n], made from data or from a view this made of it (decode.c) */
PyObject *kw_mv_slice_of(PyObject *source, PyObject *data, Py_ssize_t start, Py_ssize_t n);

PyObject *kw_decode_records(PyObject *module, PyObject *const *args, Py_ssize_t nargs);
PyObject *kw_decode_values(PyObject *module, PyObject *const *args, Py_ssize_t nargs);
PyObject *kw_check_records(PyObject *module, PyObject *const *args, Py_ssize_t nargs);
PyObject *kw_scan_packets(PyObject *module, PyObject *const *args, Py_ssize_t nargs);  /* capture.c */
PyObject *kw_reassemble_direction(PyObject *module, PyObject *const *args, Py_ssize_t nargs);  /* reassemble.c */
int kw_decode_init(PyObject *module);
PyObject *kw_set_pure_append(PyObject *module, PyObject *func);
int kw_encode_init(PyObject *module);
int kw_columns_init(PyObject *module);
/* int64_bounds(column) -> (min, max) of native int64s, None if empty (columns.c) */
PyObject *kw_int64_bounds(PyObject *module, PyObject *column);
/* repeat_binary(value, n) -> (offsets, data): an Arrow binary column of n copies (columns.c) */
PyObject *kw_repeat_binary(PyObject *module, PyObject *const *args, Py_ssize_t nargs);

/* CRC-32C of n bytes (crc32c.c); kw_crc32c_init once at import. crc32c(data) from Python. */
uint32_t kw_crc32c(const uint8_t *p, size_t n);
void kw_crc32c_init(void);
PyObject *kw_crc32c_py(PyObject *module, PyObject *data);

/* Decompression (decompress.c): a batch's records section, decompressed into out (emptied
 * first) when its codec is compiled in and the data is good and at most max_size bytes: 1;
 * 0 when the pure-Python codec must decide (it words every error); -1 for a Python error. */
int kw_codec_native(int codec);
int kw_decompress(int codec, const uint8_t *src, Py_ssize_t n, Py_ssize_t max_size, int magic, Buf *out);
void kw_buf_trim(Buf *b, Py_ssize_t keep);  /* frees a Buf whose capacity passed keep */
PyObject *kw_decompress_py(PyObject *module, PyObject *const *args, Py_ssize_t nargs);
PyObject *kw_use_codecs(PyObject *module, PyObject *ids);
int kw_decompress_init(PyObject *module);
/* build_compressed(...): a compressed batch written in C, or None (compress.c) */
PyObject *kw_build_compressed_py(PyObject *module, PyObject *const *args, Py_ssize_t nargs);  /* CODECS: the codecs compiled in, a tuple of Kafka's ids */

#endif
