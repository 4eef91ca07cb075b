/* Compressed record batches built in C (issue 26): the records section compressed straight into
 * the batch's bytes, then the CRC-32C over them, in one call. The pure-Python encoder
 * (kafkawire/records/compression.py, builder.py) is the oracle: every batch this writes is byte
 * for byte the one the pure path writes, so this code takes only what it can write identically
 * and steps aside (returns None) otherwise:
 *   gzip   - zlib's raw deflate (level -1 or 1-9, window 15, memLevel 8, default strategy: what
 *            zlib.compressobj is given) between GZIPOutputStream's fixed header and the CRC-32 /
 *            ISIZE trailer. The same zlib library as Python's zlib module gives the same bytes.
 *   snappy - xerial framing, each 32 KiB chunk a raw snappy block written by snappy_block below:
 *            the pure path's cramjam writes snappy with the Rust `snap` encoder, whose choices
 *            (hash table size, match search, copy and literal encodings) differ from libsnappy's,
 *            so the block encoder here follows the same documented algorithm rather than calling
 *            libsnappy.
 *   lz4    - the LZ4 frame Lz4BlockOutputStream writes, blocks by liblz4: the fast compressor at
 *            the default level (Kafka's 9 or none), else what LZ4F (the frame API the pure path's
 *            cramjam calls for the other levels) does per independent block: HC at levels 2 and
 *            up (LZ4HC_CLEVEL_MIN), the fast compressor at 1; a block that does not fit in one byte less than
 *            its input is stored.
 *   zstd   - libzstd's streamed frame (content size in the header), at every level.
 * Both are the vendored releases the pure path's cramjam bundles (the vendor directory), so their bytes are
 * the pure path's; native_compress.py still checks that once per (codec, level).
 * Which codecs run here is decompress.c's choice (kw_codec_native: compiled in, and not turned off
 * by use_codecs), so KAFKAWIRE_NATIVE_CODECS and use_codecs govern both directions. */
#include "codecs.h"
#define HEADER 61      /* RECORD_BATCH_OVERHEAD */
#define CRC_FROM 21    /* the CRC covers attributes onward */
#define POST 40        /* attributes..recordsCount */

static inline void put_be32(uint8_t *p, uint32_t v) {
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

static inline void put_le32(uint8_t *p, uint32_t v) {
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}

static inline uint32_t load32(const uint8_t *p) {
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

static inline uint64_t load64(const uint8_t *p) {
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

/* --- gzip ------------------------------------------------------------------------------------ */
#ifdef KW_HAVE_ZLIB
static const uint8_t GZIP_HEADER[10] = {0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff};

/* The deflate stream for level (made once per level, reset per batch: deflateInit costs more than
 * a small batch's compression). */
static z_stream deflaters[10];
static int deflater_ready[10];

static z_stream *deflater(int level) {
    int slot = level < 0 ? 0 : level;
    z_stream *z = &deflaters[slot];
    if (!deflater_ready[slot]) {
        if (deflateInit2(z, level, Z_DEFLATED, -MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
            PyErr_NoMemory();
            return NULL;
        }
        deflater_ready[slot] = 1;
    } else if (deflateReset(z) != Z_OK) {
        PyErr_SetString(PyExc_RuntimeError, "deflateReset failed");
        return NULL;
    }
    return z;
}

static Py_ssize_t gzip_bound(Py_ssize_t n) {
    return 10 + (Py_ssize_t)deflateBound(NULL, (uLong)n) + 8;
}

static Py_ssize_t gzip_write(const uint8_t *src, Py_ssize_t n, int level, uint8_t *dst, Py_ssize_t cap) {
    z_stream *z = deflater(level);
    if (z == NULL)
        return -1;
    memcpy(dst, GZIP_HEADER, 10);
    z->next_in = (Bytef *)src;
    z->avail_in = (uInt)n;
    z->next_out = dst + 10;
    z->avail_out = (uInt)(cap - 18);
    if (deflate(z, Z_FINISH) != Z_STREAM_END) {
        PyErr_SetString(PyExc_RuntimeError, "deflate did not finish within its bound");
        return -1;
    }
    uint8_t *end = dst + 10 + z->total_out;
    put_le32(end, (uint32_t)crc32(0, src, (uInt)n));
    put_le32(end + 4, (uint32_t)n);
    return 10 + (Py_ssize_t)z->total_out + 8;
}
#endif

/* --- snappy (xerial framing; raw blocks as the `snap` encoder writes them) ------------------- */
#ifdef KW_HAVE_SNAPPY
#define XERIAL_CHUNK 32768
#define SNAPPY_MARGIN 15  /* no match search in a block's last 15 bytes */
static const uint8_t XERIAL_HEADER[16] = {0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0, 0, 0, 0, 1, 0, 0, 0, 1};

static uint8_t *snappy_literal(uint8_t *out, const uint8_t *src, size_t len) {
    size_t n = len - 1;
    if (n < 60) {
        *out++ = (uint8_t)(n << 2);
    } else if (n < 256) {
        *out++ = 60 << 2;
        *out++ = (uint8_t)n;
    } else {
        *out++ = 61 << 2;
        *out++ = (uint8_t)n;
        *out++ = (uint8_t)(n >> 8);
    }
    memcpy(out, src, len);
    return out + len;
}

static uint8_t *snappy_copy2(uint8_t *out, size_t offset, size_t len) {
    out[0] = (uint8_t)(((len - 1) << 2) | 2);
    out[1] = (uint8_t)offset;
    out[2] = (uint8_t)(offset >> 8);
    return out + 3;
}

/* A copy: 64-byte pieces while 68 or more are left (a 60-byte one when 65-67 are), then a
 * 2-byte tag for a short near copy, else a 3-byte one. */
static uint8_t *snappy_copy(uint8_t *out, size_t offset, size_t len) {
    for (; len >= 68; len -= 64)
        out = snappy_copy2(out, offset, 64);
    if (len > 64) {
        out = snappy_copy2(out, offset, 60);
        len -= 60;
    }
    if (len <= 11 && offset <= 2047) {
        out[0] = (uint8_t)(((offset >> 8) << 5) | ((len - 4) << 2) | 1);
        out[1] = (uint8_t)offset;
        return out + 2;
    }
    return snappy_copy2(out, offset, len);
}

static size_t match_length(const uint8_t *src, size_t n, size_t i, size_t j) {
    size_t matched = 0;
    for (; i + 8 <= n; i += 8, j += 8, matched += 8) {
        uint64_t x = load64(src + i) ^ load64(src + j);
        if (x != 0)
            return matched + (size_t)__builtin_ctzll(x) / 8;
    }
    for (; i < n && src[i] == src[j]; i++, j++)
        matched++;
    return matched;
}

/* One block (at most 64 KiB, at least 17 bytes): a greedy search with a hash table of the 4-byte
 * sequences seen (256 to 16384 slots, the smallest power of two at least the block's length),
 * probing further apart the longer no match is found. */
static uint8_t *snappy_block(uint8_t *out, const uint8_t *src, size_t n) {
    uint16_t table[1 << 14];
    int shift = 24;
    size_t size = 256;
    while (size < (1 << 14) && size < n) {
        shift--;
        size <<= 1;
    }
    memset(table, 0, size * sizeof(uint16_t));
#define HASH(x) ((size_t)((uint32_t)((x) * 0x1E35A7BDu) >> shift))
    size_t limit = n - SNAPPY_MARGIN, emitted = 0, s = 1, candidate;
    size_t next_hash = HASH(load32(src + 1));
    for (;;) {
        size_t skip = 32, next = s;
        for (;;) {
            s = next;
            size_t step = skip >> 5;
            next = s + step;
            skip += step;
            if (next > limit)
                goto tail;
            candidate = table[next_hash];
            table[next_hash] = (uint16_t)s;
            next_hash = HASH(load32(src + next));
            if (load32(src + s) == load32(src + candidate))
                break;
        }
        out = snappy_literal(out, src + emitted, s - emitted);
        for (;;) {
            size_t start = s, matched = 4 + match_length(src, n, s + 4, candidate + 4);
            s += matched;
            out = snappy_copy(out, start - candidate, matched);
            emitted = s;
            if (s >= limit)
                goto tail;
            uint64_t x = load64(src + s - 1);
            table[HASH((uint32_t)x)] = (uint16_t)(s - 1);
            size_t h = HASH((uint32_t)(x >> 8));
            candidate = table[h];
            table[h] = (uint16_t)s;
            if ((uint32_t)(x >> 8) != load32(src + candidate)) {
                next_hash = HASH((uint32_t)(x >> 16));
                s++;
                break;
            }
        }
    }
#undef HASH
tail:
    if (emitted < n)
        out = snappy_literal(out, src + emitted, n - emitted);
    return out;
}

static Py_ssize_t snappy_bound(Py_ssize_t n) {
    Py_ssize_t chunks = (n + XERIAL_CHUNK - 1) / XERIAL_CHUNK;
    return 16 + chunks * (4 + 5 + 32) + n + n / 6;
}

static Py_ssize_t snappy_write(const uint8_t *src, Py_ssize_t n, uint8_t *dst) {
    memcpy(dst, XERIAL_HEADER, 16);
    uint8_t *out = dst + 16;
    for (Py_ssize_t start = 0; start < n; start += XERIAL_CHUNK) {
        size_t len = (size_t)(n - start < XERIAL_CHUNK ? n - start : XERIAL_CHUNK);
        uint8_t *block = out + 4, *p = block;
        for (size_t v = len; ; v >>= 7) {  /* the raw format's uncompressed length, a varint */
            *p++ = (uint8_t)(v > 0x7F ? (v & 0x7F) | 0x80 : v);
            if (v <= 0x7F)
                break;
        }
        p = len < 1 + 1 + SNAPPY_MARGIN ? snappy_literal(p, src + start, len) : snappy_block(p, src + start, len);
        put_be32(out, (uint32_t)(p - block));
        out = p;
    }
    return out - dst;
}
#endif

/* --- lz4 (frame, independent 64 KiB blocks, no checksums; incompressible blocks stored) ------- */
#ifdef KW_HAVE_LZ4
#define LZ4_BLOCK 65536
/* magic, FLG 0x60, BD 0x40, and the descriptor's checksum (xxh32 of FLG BD, second byte) */
static const uint8_t LZ4_FRAME_HEADER[7] = {0x04, 0x22, 0x4d, 0x18, 0x60, 0x40, 0x82};

static Py_ssize_t lz4_bound(Py_ssize_t n) {
    Py_ssize_t blocks = (n + LZ4_BLOCK - 1) / LZ4_BLOCK;
    return 7 + blocks * (4 + LZ4_COMPRESSBOUND(LZ4_BLOCK)) + 4;
}

#define LZ4_DEFAULT_LEVEL 9  /* Kafka's: the fast compressor */
static void *lz4_hc_state;

/* One block as LZ4F compresses it at level (0: too big for one byte less than its input). */
static int lz4_block(int level, const char *src, char *dst, int len) {
    if (level == LZ4_DEFAULT_LEVEL)
        return LZ4_compress_default(src, dst, len, LZ4_compressBound(len));
    if (level < LZ4HC_CLEVEL_MIN)  /* LZ4F compresses these fast */
        return LZ4_compress_default(src, dst, len, len - 1);
    return LZ4_compress_HC_extStateHC(lz4_hc_state, src, dst, len, len - 1, level);
}

static Py_ssize_t lz4_write(const uint8_t *src, Py_ssize_t n, int level, uint8_t *dst) {
    if (level != LZ4_DEFAULT_LEVEL && lz4_hc_state == NULL
            && (lz4_hc_state = PyMem_RawMalloc((size_t)LZ4_sizeofStateHC())) == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    memcpy(dst, LZ4_FRAME_HEADER, 7);
    uint8_t *out = dst + 7;
    for (Py_ssize_t start = 0; start < n; start += LZ4_BLOCK) {
        int len = (int)(n - start < LZ4_BLOCK ? n - start : LZ4_BLOCK);
        int packed = lz4_block(level, (const char *)src + start, (char *)out + 4, len);
        if (packed <= 0 || packed >= len) {
            put_le32(out, (uint32_t)len | 0x80000000u);
            memcpy(out + 4, src + start, (size_t)len);
            packed = len;
        } else {
            put_le32(out, (uint32_t)packed);
        }
        out += 4 + packed;
    }
    put_le32(out, 0);  /* EndMark */
    return out + 4 - dst;
}
#endif

/* --- zstd ------------------------------------------------------------------------------------ */
#ifdef KW_HAVE_ZSTD
static ZSTD_CCtx *zstd_cctx;

/* The frame cramjam writes: its `zstd` crate streams (ZSTD_compressStream2, the source size
 * pledged, ZSTD_e_continue then ZSTD_e_end), and a stream keeps its window in a ring buffer, so
 * past a few hundred KiB its matches, hence its bytes, differ from ZSTD_compressCCtx's. */
static Py_ssize_t zstd_write(const uint8_t *src, Py_ssize_t n, int level, uint8_t *dst, Py_ssize_t cap) {
    if (zstd_cctx == NULL && (zstd_cctx = ZSTD_createCCtx()) == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    ZSTD_inBuffer in = {src, (size_t)n, 0};
    ZSTD_outBuffer out = {dst, (size_t)cap, 0};
    size_t rc = ZSTD_CCtx_reset(zstd_cctx, ZSTD_reset_session_and_parameters);
    if (!ZSTD_isError(rc))
        rc = ZSTD_CCtx_setParameter(zstd_cctx, ZSTD_c_compressionLevel, level);
    if (!ZSTD_isError(rc))
        rc = ZSTD_CCtx_setPledgedSrcSize(zstd_cctx, (unsigned long long)n);
    while (!ZSTD_isError(rc) && in.pos < in.size)
        rc = ZSTD_compressStream2(zstd_cctx, &out, &in, ZSTD_e_continue);
    while (!ZSTD_isError(rc) && (rc = ZSTD_compressStream2(zstd_cctx, &out, &in, ZSTD_e_end)) != 0)
        if (!ZSTD_isError(rc) && out.pos == out.size) {
            PyErr_SetString(PyExc_RuntimeError, "zstd did not finish within its bound");
            return -1;
        }
    if (ZSTD_isError(rc)) {
        PyErr_Format(PyExc_RuntimeError, "zstd: %s", ZSTD_getErrorName(rc));
        return -1;
    }
    return (Py_ssize_t)out.pos;
}
#endif

/* The level this code takes for codec (level_obj None: the codec's default), or 0 to step aside:
 * the pure path raises for a bad level and writes the levels this code cannot match. */
static int native_level(int codec, PyObject *level_obj, int *level) {
    long v = 0;
    if (level_obj != Py_None) {
        if (!PyLong_CheckExact(level_obj))
            return 0;
        int overflow;
        v = PyLong_AsLongAndOverflow(level_obj, &overflow);
        if (overflow || (v == -1 && PyErr_Occurred())) {
            PyErr_Clear();
            return 0;
        }
    }
    int given = level_obj != Py_None;
    switch (codec) {
    case GZIP:
        *level = given ? (int)v : -1;
        return *level == -1 || (*level >= 1 && *level <= 9);
    case SNAPPY:
        return 1;  /* no levels: the pure path ignores one */
    case LZ4:  /* Kafka's levels (CompressionType.LZ4's bounds) */
        *level = given ? (int)v : 9;
        return *level >= 1 && *level <= 17;
    case ZSTD:  /* libzstd's, which are Kafka's (-131072..22) */
        *level = given ? (int)v : 3;
#ifdef KW_HAVE_ZSTD
        return *level >= ZSTD_minCLevel() && *level <= ZSTD_maxCLevel();
#else
        return 0;
#endif
    default:
        return 0;
    }
}

static Py_ssize_t codec_bound(int codec, Py_ssize_t n) {
    switch (codec) {
#ifdef KW_HAVE_ZLIB
    case GZIP: return gzip_bound(n);
#endif
#ifdef KW_HAVE_SNAPPY
    case SNAPPY: return snappy_bound(n);
#endif
#ifdef KW_HAVE_LZ4
    case LZ4: return lz4_bound(n);
#endif
#ifdef KW_HAVE_ZSTD
    case ZSTD: return (Py_ssize_t)ZSTD_compressBound((size_t)n);
#endif
    default: return -1;
    }
}

/* The compressed records written at dst (cap bytes there): their length, or -1 (error set). */
static Py_ssize_t codec_write(int codec, int level, const uint8_t *src, Py_ssize_t n, uint8_t *dst, Py_ssize_t cap) {
    (void)level;
    (void)cap;
    switch (codec) {
#ifdef KW_HAVE_ZLIB
    case GZIP: return gzip_write(src, n, level, dst, cap);
#endif
#ifdef KW_HAVE_SNAPPY
    case SNAPPY: return snappy_write(src, n, dst);
#endif
#ifdef KW_HAVE_LZ4
    case LZ4: return lz4_write(src, n, level, dst);
#endif
#ifdef KW_HAVE_ZSTD
    case ZSTD: return zstd_write(src, n, level, dst, cap);
#endif
    default:
        PyErr_SetString(PyExc_RuntimeError, "codec not compiled in");
        return -1;
    }
}

/* build_compressed(codec, level, records, base_offset, partition_leader_epoch, post) -> the batch's
 * bytes, or None when the pure path must write it (module comment). post is the 40 bytes from
 * attributes to recordsCount, as RecordBatchBuilder.build packs them. */
PyObject *kw_build_compressed_py(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 6) {
        PyErr_SetString(PyExc_TypeError, "build_compressed takes 6 arguments");
        return NULL;
    }
    int codec = (int)PyLong_AsLong(args[0]), level = 0, overflow = 0;
    long long base_offset = PyLong_AsLongLongAndOverflow(args[3], &overflow);
    long long leader_epoch = overflow ? 0 : PyLong_AsLongLongAndOverflow(args[4], &overflow);
    if (PyErr_Occurred())
        return NULL;
    if (overflow || leader_epoch < INT32_MIN || leader_epoch > INT32_MAX || !kw_codec_native(codec)
            || !native_level(codec, args[1], &level) || !PyBytes_CheckExact(args[5]) || PyBytes_GET_SIZE(args[5]) != POST)
        Py_RETURN_NONE;
    Py_buffer in;
    if (PyObject_GetBuffer(args[2], &in, PyBUF_SIMPLE) < 0)
        return NULL;
    PyObject *batch = NULL;
    Py_ssize_t bound = in.len > (INT32_MAX - HEADER) / 2 ? -1 : codec_bound(codec, in.len);
    if (bound < 0) {  /* past what a batch's int32 length can say: the pure path's business */
        PyBuffer_Release(&in);
        Py_RETURN_NONE;
    }
    batch = PyBytes_FromStringAndSize(NULL, HEADER + bound);
    if (batch == NULL)
        goto done;
    uint8_t *p = (uint8_t *)PyBytes_AS_STRING(batch);
    Py_ssize_t packed = codec_write(codec, level, in.buf, in.len, p + HEADER, bound);
    if (packed < 0 || _PyBytes_Resize(&batch, HEADER + packed) < 0) {
        Py_CLEAR(batch);
        goto done;
    }
    p = (uint8_t *)PyBytes_AS_STRING(batch);
    memcpy(p + CRC_FROM, PyBytes_AS_STRING(args[5]), POST);
    put_be32(p, (uint32_t)((uint64_t)base_offset >> 32));
    put_be32(p + 4, (uint32_t)base_offset);
    put_be32(p + 8, (uint32_t)(HEADER - 12 + packed));
    put_be32(p + 12, (uint32_t)leader_epoch);
    p[16] = 2;  /* magic */
    put_be32(p + 17, kw_crc32c(p + CRC_FROM, (size_t)(HEADER - CRC_FROM + packed)));
done:
    PyBuffer_Release(&in);
    return batch;
}
