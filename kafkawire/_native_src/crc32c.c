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
__attribute__((target("sse4.2"))) static uint32_t crc_sse42(uint32_t crc, const uint8_t *p, size_t n) {
    uint64_t c = crc;
    for (; n >= 8; n -= 8, p += 8) {
        uint64_t word;
        memcpy(&word, p, 8);
        c = __builtin_ia32_crc32di(c, word);
    }
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
