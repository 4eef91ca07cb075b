/* Record batch decompression in C (issue 26), with the framing Kafka's Java streams write
 * (kafkawire/records/compression.py describes it; that module is the oracle). Each codec is
 * compiled in only when setup.py found its library (KW_HAVE_ZLIB for gzip, KW_HAVE_SNAPPY) or
 * compiled the vendored one (KW_HAVE_LZ4, KW_HAVE_ZSTD: vendor/). A codec left out, like any input this code does not take whole
 * (bad bytes, a truncated stream, output past max_size, a frame needing more memory than the
 * library's default window), makes kw_decompress step aside: the caller then runs the
 * pure-Python codec, which returns the same bytes or raises CorruptRecordError with its own
 * message. So every error a caller sees is the pure path's, and this code only has to be at
 * least as strict as it (the differential tests check both agree on every input they draw).
 * Output grows in a Buf, never past max_size + 64 KiB of room: a decompression bomb stops at
 * the cap. Every call holds the GIL (the zstd context is shared). */
#include "codecs.h"
#define ASIDE 0
#define DONE 1

/* Room for at least `want` more bytes (at most what the cap leaves, plus one byte to see it
 * passed); ASIDE when the output already passed max_size. */
static inline int room(Buf *out, Py_ssize_t want, Py_ssize_t max_size) {
    if (out->len > max_size)
        return ASIDE;
    Py_ssize_t left = max_size + 1 - out->len;
    if (want > left)
        want = left;
    return kw_buf_reserve(out, want) < 0 ? -1 : DONE;
}

static inline uint32_t le32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* --- gzip: concatenated members, trailing bytes that start no member ignored (GZIPInputStream) */
#ifdef KW_HAVE_ZLIB
static int gzip_inflate(const uint8_t *src, Py_ssize_t n, Py_ssize_t max_size, Buf *out) {
    if (n > (Py_ssize_t)UINT32_MAX)
        return ASIDE;
    z_stream z = {0};
    if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK) {
        PyErr_NoMemory();
        return -1;
    }
    z.next_in = (Bytef *)src;
    z.avail_in = (uInt)n;
    int rc = ASIDE;
    for (;;) {
        Py_ssize_t want = out->len > 32768 ? out->len : 65536;
        int ok = room(out, want, max_size);
        if (ok <= 0) {
            rc = ok;
            break;
        }
        Py_ssize_t space = out->cap - out->len;
        z.next_out = (Bytef *)out->p + out->len;
        z.avail_out = space > (Py_ssize_t)UINT32_MAX ? UINT32_MAX : (uInt)space;
        uInt before = z.avail_out;
        int zrc = inflate(&z, Z_NO_FLUSH);
        out->len += before - z.avail_out;
        if (out->len > max_size)
            break;
        if (zrc == Z_STREAM_END) {
            if (z.avail_in >= 2 && z.next_in[0] == 0x1f && z.next_in[1] == 0x8b && inflateReset(&z) == Z_OK)
                continue;
            rc = DONE;
            break;
        }
        if (zrc != Z_OK && !(zrc == Z_BUF_ERROR && z.avail_out == 0))
            break;  /* corrupt, or truncated (no input left before the member's end) */
    }
    inflateEnd(&z);
    return rc;
}
#endif

/* --- snappy: xerial framing (SnappyOutputStream), or one raw block ----------------------- */
#ifdef KW_HAVE_SNAPPY
static int snappy_block(const uint8_t *src, size_t n, Py_ssize_t max_size, Buf *out) {
    size_t len = 0;
    if (snappy_uncompressed_length((const char *)src, n, &len) != SNAPPY_OK || len > (size_t)(max_size - out->len))
        return ASIDE;
    if (kw_buf_reserve(out, (Py_ssize_t)len + 1) < 0)  /* + 1: a buffer even for an empty block */
        return -1;
    size_t got = len;
    if (snappy_uncompress((const char *)src, n, out->p + out->len, &got) != SNAPPY_OK || got != len)
        return ASIDE;
    out->len += (Py_ssize_t)len;
    return DONE;
}

static const uint8_t XERIAL_MAGIC[8] = {0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0};

static int snappy_inflate(const uint8_t *src, Py_ssize_t n, Py_ssize_t max_size, Buf *out) {
    if (n < 16 || memcmp(src, XERIAL_MAGIC, 8) != 0)
        return snappy_block(src, (size_t)n, max_size, out);
    Py_ssize_t pos = 16;
    while (pos < n) {
        if (n - pos >= 8 && memcmp(src + pos, XERIAL_MAGIC, 8) == 0) {  /* a concatenated stream */
            if (n - pos < 16)
                return ASIDE;
            pos += 16;
            continue;
        }
        if (n - pos < 4)
            return ASIDE;
        int32_t size = (int32_t)((uint32_t)src[pos] << 24 | (uint32_t)src[pos + 1] << 16
                                 | (uint32_t)src[pos + 2] << 8 | src[pos + 3]);
        pos += 4;
        if (size < 0 || size > n - pos)
            return ASIDE;
        int rc = snappy_block(src + pos, (size_t)size, max_size, out);
        if (rc != DONE)
            return rc;
        pos += size;
    }
    return DONE;
}
#endif

/* --- lz4: the frame format of KafkaLZ4BlockInputStream ------------------------------------ */
#ifdef KW_HAVE_LZ4
#define P1 2654435761u
#define P2 2246822519u
#define P3 3266489917u
#define P4 668265263u
#define P5 374761393u

static inline uint32_t rotl(uint32_t x, int r) {
    return (x << r) | (x >> (32 - r));
}

/* XXH32 (seed 0): the frame descriptor's checksum byte and optional block checksums. */
static uint32_t xxh32(const uint8_t *p, size_t n) {
    size_t i = 0;
    uint32_t h;
    if (n >= 16) {
        uint32_t v[4] = {P1 + P2, P2, 0, 0u - P1};
        for (; i + 16 <= n; i += 16)
            for (int k = 0; k < 4; k++)
                v[k] = rotl(v[k] + le32(p + i + 4 * k) * P2, 13) * P1;
        h = rotl(v[0], 1) + rotl(v[1], 7) + rotl(v[2], 12) + rotl(v[3], 18);
    } else {
        h = P5;
    }
    h += (uint32_t)n;
    for (; i + 4 <= n; i += 4)
        h = rotl(h + le32(p + i) * P3, 17) * P4;
    for (; i < n; i++)
        h = rotl(h + p[i] * P5, 11) * P1;
    h = (h ^ (h >> 15)) * P2;
    h = (h ^ (h >> 13)) * P3;
    return h ^ (h >> 16);
}

/* The frame header: *pos past it and *block_max set, or ASIDE. check_header is 0 for magic
 * 0/1 data, whose descriptor checksum old Kafka computed wrongly. */
static int lz4_header(const uint8_t *src, Py_ssize_t n, Py_ssize_t max_size, int check_header, Py_ssize_t *pos,
                      Py_ssize_t *block_max) {
    if (n < 7 || le32(src) != 0x184D2204u)
        return ASIDE;
    uint8_t flg = src[4], bd = src[5];
    int size_id = (bd >> 4) & 0x07;
    if (flg >> 6 != 1 || (flg & 0x03) || (bd & 0x8F) || !(flg & 0x20) || size_id < 4)
        return ASIDE;
    *block_max = (Py_ssize_t)1 << (2 * size_id + 8);
    *pos = 6;
    if (flg & 0x08) {
        if (n - *pos < 9)
            return ASIDE;
        uint64_t content = (uint64_t)le32(src + 6) | (uint64_t)le32(src + 10) << 32;
        if (content > (uint64_t)max_size)
            return ASIDE;
        *pos += 8;
    }
    if (check_header && src[*pos] != ((xxh32(src + 4, (size_t)(*pos - 4)) >> 8) & 0xFF))
        return ASIDE;
    *pos += 1;
    return DONE;
}

static int lz4_inflate(const uint8_t *src, Py_ssize_t n, Py_ssize_t max_size, int check_header, Buf *out) {
    Py_ssize_t pos, block_max;
    if (lz4_header(src, n, max_size, check_header, &pos, &block_max) != DONE)
        return ASIDE;
    int block_checksum = src[4] & 0x10, content_checksum = src[4] & 0x04;
    for (;;) {
        if (n - pos < 4)
            return ASIDE;
        uint32_t size = le32(src + pos), raw = size & 0x80000000u;
        size &= 0x7FFFFFFFu;
        pos += 4;
        if (size == 0)  /* the EndMark; a content checksum after it is skipped, as Java does */
            return content_checksum && n - pos < 4 ? ASIDE : DONE;
        if ((Py_ssize_t)size > block_max || (Py_ssize_t)size > n - pos)
            return ASIDE;
        if (kw_buf_reserve(out, block_max) < 0)
            return -1;
        int produced = (int)size;
        if (raw)
            memcpy(out->p + out->len, src + pos, size);
        else if ((produced = LZ4_decompress_safe((const char *)src + pos, out->p + out->len, (int)size,
                                                 (int)block_max)) < 0)
            return ASIDE;
        if (out->len + produced > max_size)
            return ASIDE;
        out->len += produced;
        if (block_checksum) {
            if (n - pos - (Py_ssize_t)size < 4 || le32(src + pos + size) != xxh32(src + pos, size))
                return ASIDE;
            pos += 4;
        }
        pos += size;
    }
}
#endif

/* --- zstd: frames (and skippable frames) back to back, content size known or not ----------- */
#ifdef KW_HAVE_ZSTD
static ZSTD_DCtx *zstd_context;

static int zstd_inflate(const uint8_t *src, Py_ssize_t n, Py_ssize_t max_size, Buf *out) {
    if (n < 4 || (le32(src) != 0xFD2FB528u && (le32(src) & 0xFFFFFFF0u) != 0x184D2A50u))
        return ASIDE;
    unsigned long long declared = ZSTD_getFrameContentSize(src, (size_t)n);
    if (declared != ZSTD_CONTENTSIZE_UNKNOWN && declared != ZSTD_CONTENTSIZE_ERROR && declared > (unsigned long long)max_size)
        return ASIDE;
    if (zstd_context == NULL && (zstd_context = ZSTD_createDCtx()) == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    int known = declared <= (unsigned long long)max_size;
    if (known && kw_buf_reserve(out, (Py_ssize_t)declared + 1) < 0)
        return -1;
    if (known) {  /* the size is in the header (one frame, or the first of several): one call, no window copy */
        size_t got = ZSTD_decompressDCtx(zstd_context, out->p, (size_t)declared, src, (size_t)n);
        if (!ZSTD_isError(got) && got == declared) {
            out->len = (Py_ssize_t)got;
            return DONE;
        }
    }
    ZSTD_DCtx_reset(zstd_context, ZSTD_reset_session_only);
    ZSTD_inBuffer in = {src, (size_t)n, 0};
    Py_ssize_t want = known ? (Py_ssize_t)declared + 1 : 4 * n + 65536;
    for (;;) {
        int ok = room(out, want, max_size);
        if (ok <= 0)
            return ok;
        ZSTD_outBuffer o = {out->p + out->len, (size_t)(out->cap - out->len), 0};
        size_t rc = ZSTD_decompressStream(zstd_context, &o, &in);
        out->len += (Py_ssize_t)o.pos;
        if (ZSTD_isError(rc) || out->len > max_size)
            return ASIDE;
        if (in.pos == in.size && (rc == 0 || o.pos < o.size))
            return rc == 0 ? DONE : ASIDE;  /* every frame complete, or the input ends inside one */
        want = out->len > 65536 ? out->len : 65536;
    }
}
#endif

/* The codecs use_codecs() leaves on (all compiled in, at first): the benchmarks and the
 * differential tests run the same C loops with decompression in Python. */
static unsigned codecs_on = ~0u;

static int codec_compiled(int codec) {
    switch (codec) {
#ifdef KW_HAVE_ZLIB
    case GZIP: return 1;
#endif
#ifdef KW_HAVE_SNAPPY
    case SNAPPY: return 1;
#endif
#ifdef KW_HAVE_LZ4
    case LZ4: return 1;
#endif
#ifdef KW_HAVE_ZSTD
    case ZSTD: return 1;
#endif
    default: return 0;
    }
}

int kw_codec_native(int codec) {
    return codec > 0 && codec < 32 && (codecs_on >> codec & 1) && codec_compiled(codec);
}

/* use_codecs(ids) -> the ids on before: only these compiled-in codecs decompress in C. */
PyObject *kw_use_codecs(PyObject *module, PyObject *ids) {
    PyObject *before = PyList_New(0), *seq = PySequence_Fast(ids, "use_codecs takes a sequence of codec ids");
    unsigned on = 0;
    for (int codec = GZIP; before != NULL && codec <= ZSTD; codec++) {
        PyObject *id = kw_codec_native(codec) ? PyLong_FromLong(codec) : NULL;
        if (id != NULL && PyList_Append(before, id) < 0)
            Py_CLEAR(before);
        Py_XDECREF(id);
    }
    for (Py_ssize_t i = 0; seq != NULL && before != NULL && i < PySequence_Fast_GET_SIZE(seq); i++) {
        long codec = PyLong_AsLong(PySequence_Fast_GET_ITEM(seq, i));
        if (codec < 1 || codec > ZSTD) {
            if (!PyErr_Occurred())
                PyErr_Format(PyExc_ValueError, "unknown codec id %ld", codec);
            Py_CLEAR(before);
        } else {
            on |= 1u << codec;
        }
    }
    Py_XDECREF(seq);
    if (before != NULL)
        codecs_on = on;
    return before;
}

int kw_decompress(int codec, const uint8_t *src, Py_ssize_t n, Py_ssize_t max_size, int magic, Buf *out) {
    out->len = 0;
    if (max_size < 0)
        return ASIDE;
    switch (codec) {
#ifdef KW_HAVE_ZLIB
    case GZIP: return gzip_inflate(src, n, max_size, out);
#endif
#ifdef KW_HAVE_SNAPPY
    case SNAPPY: return snappy_inflate(src, n, max_size, out);
#endif
#ifdef KW_HAVE_LZ4
    case LZ4: return lz4_inflate(src, n, max_size, magic >= 2, out);
#endif
#ifdef KW_HAVE_ZSTD
    case ZSTD: return magic >= 2 ? zstd_inflate(src, n, max_size, out) : ASIDE;
#endif
    default: return ASIDE;
    }
}

void kw_buf_trim(Buf *b, Py_ssize_t keep) {
    if (b->cap > keep) {
        kw_buf_release(b->p, b->cap);
        b->p = NULL;
        b->len = b->cap = 0;
    }
}

/* The output buffer of decompress(): reused, dropped when a big batch grew it past 8 MiB. */
static Buf scratch;

/* decompress(codec, data, max_size, magic) -> bytes, or None: the pure codec decides (a codec
 * not compiled in, data it does not take whole, or not one contiguous byte buffer). */
PyObject *kw_decompress_py(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "decompress takes 4 arguments");
        return NULL;
    }
    int codec = (int)PyLong_AsLong(args[0]), magic = (int)PyLong_AsLong(args[3]);
    Py_ssize_t max_size = PyLong_AsSsize_t(args[2]);
    if (PyErr_Occurred())
        return NULL;
    Py_buffer in;
    if (!kw_codec_native(codec) || PyObject_GetBuffer(args[1], &in, PyBUF_SIMPLE) < 0) {
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    int rc = kw_decompress(codec, in.buf, in.len, max_size, magic, &scratch);
    PyBuffer_Release(&in);
    PyObject *result = rc < 0 ? NULL : rc == ASIDE ? Py_NewRef(Py_None) : PyBytes_FromStringAndSize(scratch.p, scratch.len);
    kw_buf_trim(&scratch, 8 << 20);
    return result;
}

/* CODECS: the codecs compiled in, as Kafka's ids (compression.py's GZIP..ZSTD). */
int kw_decompress_init(PyObject *module) {
    int ids[4], n = 0;
    for (int codec = GZIP; codec <= ZSTD; codec++)
        if (codec_compiled(codec))
            ids[n++] = codec;
    PyObject *codecs = PyTuple_New(n);
    for (int i = 0; codecs != NULL && i < n; i++) {
        PyObject *id = PyLong_FromLong(ids[i]);
        if (id == NULL)
            Py_CLEAR(codecs);
        else
            PyTuple_SET_ITEM(codecs, i, id);
    }
    int rc = codecs == NULL ? -1 : PyModule_AddObjectRef(module, "CODECS", codecs);
    Py_XDECREF(codecs);
    return rc;
}
