/* CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), as the v2 batch header stores it:
 * the SSE4.2 crc32 instruction where the CPU has it, else a table. Written for the native
 * Arrow path (issue 26), which checks each batch's CRC in the same pass that decodes it. */
#include "records.h"

static uint32_t table[256];
static int use_sse42 = 0;

static uint32_t crc_table(uint32_t crc, const uint8_t *p, size_t n) {
    while (n--)
        crc = table[(crc ^ *p++) & 0xFF] ^ (crc >> 8);
    return crc;
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <string.h>
/* Long inputs run as three interleaved streams of BLOCK bytes: the crc32 instruction takes
 * 3 cycles but a new one can start every cycle, so one stream waits on itself 2 cycles in 3.
 * The three registers are joined by shifting the earlier ones over the BLOCK bytes that
 * follow them (the CRC of a run of zeros is linear in the register: shift[] holds it,
 * 8 bits of the register at a time), and crc(A B) = shift_B(crc(A)) ^ crc_from_0(B). */
#define BLOCK 512
static uint32_t shift[4][256];

static uint32_t shift_block(uint32_t crc) {
    return shift[0][crc & 0xFF] ^ shift[1][(crc >> 8) & 0xFF] ^ shift[2][(crc >> 16) & 0xFF] ^ shift[3][crc >> 24];
}

static void shift_init(void) {
    static const uint8_t zeros[BLOCK];
    uint32_t basis[32];
    for (int bit = 0; bit < 32; bit++)
        basis[bit] = crc_table(1u << bit, zeros, BLOCK);
    for (int k = 0; k < 4; k++)
        for (int b = 0; b < 256; b++) {
            uint32_t v = 0;
            for (int bit = 0; bit < 8; bit++)
                if (b >> bit & 1)
                    v ^= basis[8 * k + bit];
            shift[k][b] = v;
        }
}

static inline uint64_t load64(const uint8_t *p) {
    uint64_t word;
    memcpy(&word, p, 8);
    return word;
}

__attribute__((target("sse4.2"))) static uint32_t crc_sse42(uint32_t crc, const uint8_t *p, size_t n) {
    uint64_t c = crc;
    for (; n >= 3 * BLOCK; n -= 3 * BLOCK, p += 3 * BLOCK) {
        uint64_t c1 = 0, c2 = 0;
        for (size_t i = 0; i < BLOCK; i += 8) {
            c = __builtin_ia32_crc32di(c, load64(p + i));
            c1 = __builtin_ia32_crc32di(c1, load64(p + BLOCK + i));
            c2 = __builtin_ia32_crc32di(c2, load64(p + 2 * BLOCK + i));
        }
        c = shift_block(shift_block((uint32_t)c) ^ (uint32_t)c1) ^ (uint32_t)c2;
    }
    for (; n >= 8; n -= 8, p += 8)
        c = __builtin_ia32_crc32di(c, load64(p));
    uint32_t c32 = (uint32_t)c;
    for (; n; n--, p++)
        c32 = __builtin_ia32_crc32qi(c32, *p);
    return c32;
}
#endif

uint32_t kw_crc32c(const uint8_t *p, size_t n) {
    uint32_t crc = 0xFFFFFFFFu;
#if defined(__x86_64__) && defined(__GNUC__)
    if (use_sse42)
        return ~crc_sse42(crc, p, n);
#endif
    return ~crc_table(crc, p, n);
}

void kw_crc32c_init(void) {
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = c & 1 ? (c >> 1) ^ 0x82F63B78u : c >> 1;
        table[i] = c;
    }
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
    use_sse42 = __builtin_cpu_supports("sse4.2");
    shift_init();
#endif
}

PyObject *kw_crc32c_py(PyObject *module, PyObject *data) {
    Py_buffer view;
    if (PyObject_GetBuffer(data, &view, PyBUF_SIMPLE) < 0)
        return NULL;
    uint32_t crc = kw_crc32c(view.buf, (size_t)view.len);
    PyBuffer_Release(&view);
    return PyLong_FromUnsignedLong(crc);
}
