/* Column buffers kept for reuse (issue 26). A table of 10,000 records writes about 1.6 MB of
 * fresh column buffers; allocations that size come from mmap, so every page written is a page
 * fault (with the kernel zeroing the page) and every free an munmap: under perf that was a
 * third of records_to_arrow's time. Buffers Arrow releases (OwnedBuffer) and ones a Columns
 * drops come back here instead, and the next Buf that needs that much takes one, its pages
 * already mapped (a Buf growing past POOL_MIN moves into one too): a bounded pool (POOL_SLOTS blocks, POOL_BYTES in all), so a process holds
 * at most that much idle. Only big blocks are kept: malloc serves small ones from its heap
 * without faults. Every call is made with the GIL held, which guards the pool. */
#include "records.h"

#define POOL_SLOTS 16
#define POOL_BYTES ((Py_ssize_t)64 << 20)
#define POOL_MIN ((Py_ssize_t)128 << 10)

static struct {
    char *p;
    Py_ssize_t cap;
} pool[POOL_SLOTS];
static int pool_n;
static Py_ssize_t pool_bytes;

void kw_buf_release(char *p, Py_ssize_t cap) {
    if (p != NULL && cap >= POOL_MIN && pool_n < POOL_SLOTS && pool_bytes + cap <= POOL_BYTES) {
        pool[pool_n].p = p;
        pool[pool_n].cap = cap;
        pool_n += 1;
        pool_bytes += cap;
        return;
    }
    PyMem_RawFree(p);
}

/* The smallest kept block of at least `need` bytes (taken out of the pool), or NULL. */
static char *pool_take(Py_ssize_t need, Py_ssize_t *cap) {
    int best = -1;
    for (int i = 0; i < pool_n; i++)
        if (pool[i].cap >= need && (best < 0 || pool[i].cap < pool[best].cap))
            best = i;
    if (best < 0)
        return NULL;
    char *p = pool[best].p;
    *cap = pool[best].cap;
    pool_bytes -= *cap;
    pool[best] = pool[--pool_n];
    return p;
}

int kw_buf_grow(Buf *b, Py_ssize_t extra) {
    Py_ssize_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + extra)
        cap *= 2;
    Py_ssize_t kept_cap;
    char *p = cap >= POOL_MIN ? pool_take(b->len + extra, &kept_cap) : NULL;
    if (p != NULL) {  /* a kept block: its pages are mapped already */
        if (b->len > 0)
            memcpy(p, b->p, (size_t)b->len);
        kw_buf_release(b->p, b->cap);
        cap = kept_cap;
    } else if ((p = PyMem_RawRealloc(b->p, (size_t)cap)) == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    b->p = p;
    b->cap = cap;
    return 0;
}
