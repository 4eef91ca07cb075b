/* The packet loop of `kafkawire pcap` (issue 26): kafkawire/capture/fast_packets.py's records,
 * read in C for the packets it reads plainly (Ethernet II or raw IP, IPv4 with a 20-byte header
 * or IPv6 followed by TCP, a whole TCP header, a packet record inside the file). At the first
 * record it does not read so, it stops and says where: the Python loop reads that record (and
 * hands what is odd to dpkt), then calls it again. So the C loop only ever does what the Python
 * loop would, for the records both read the same way.
 *
 * scan_packets(data (bytes or a mapped file), pos, count, first_time, form, link, divisor, tsoffset, segment_cls, endpoints,
 *              segments) -> (pos, count, first_time)
 *     form: 0/1 libpcap little/big-endian records, 2/3 pcapng blocks. Each packet read becomes
 *     segment_cls(index, time, src, dst, seq, flags, payload, length) appended to segments; src and
 *     dst come from endpoints[addresses and ports as bytes] (a dict whose __missing__ spells them).
 *     time is computed as the Python loop computes it: seconds + fraction / divisor (pcap),
 *     tsoffset + timestamp / divisor (pcapng), in doubles. */
#include "records.h"

static inline uint32_t be16(const uint8_t *p) { return (uint32_t)p[0] << 8 | p[1]; }

static inline uint32_t be32(const uint8_t *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static inline uint32_t u32(const uint8_t *p, int little) {
    return little ? (uint32_t)p[3] << 24 | (uint32_t)p[2] << 16 | (uint32_t)p[1] << 8 | p[0] : be32(p);
}

typedef struct {
    const uint8_t *d;
    long link;
    PyObject *make, *endpoints, *segments;
} Scan;

/* Where the TCP header of the packet d[start:end] is, as fast_packets._add finds it: 1 and the
 * fields set, or 0 for a packet the Python loop reads. */
typedef struct {
    Py_ssize_t tcp, stop, key, key_len, header;
    long carried;
} Tcp;

static int find_tcp(const Scan *s, Py_ssize_t start, Py_ssize_t end, Tcp *t) {
    const uint8_t *d = s->d;
    Py_ssize_t ip;
    int v6;
    if (s->link == 1) {
        if (end - start < 14)
            return 0;
        uint32_t kind = be16(d + start + 12);
        if (kind != 0x0800 && kind != 0x86DD)
            return 0;
        v6 = kind == 0x86DD;
        ip = start + 14;
    } else if (s->link == 12 || s->link == 14 || s->link == 101) {
        if (end <= start)
            return 0;
        v6 = d[start] >> 4 != 4;
        ip = start;
    } else {
        return 0;
    }
    if (!v6) {
        if (end - ip < 20 || d[ip] != 0x45 || d[ip + 9] != 6)
            return 0;
        long total = (long)be16(d + ip + 2);
        if (total < 40 || (be16(d + ip + 6) & 0x3FFF))
            return 0;
        t->tcp = ip + 20;
        t->stop = end < ip + total ? end : ip + total;
        t->carried = total - 20;
        t->key = ip + 12;
        t->key_len = 12;
    } else {
        if (end - ip < 40 || d[ip] >> 4 != 6 || d[ip + 6] != 6)
            return 0;
        t->carried = (long)be16(d + ip + 4);
        if (t->carried < 20)
            return 0;
        t->tcp = ip + 40;
        t->stop = end < ip + 40 + t->carried ? end : ip + 40 + t->carried;
        t->key = ip + 8;
        t->key_len = 36;
    }
    if (t->stop - t->tcp < 20)
        return 0;
    t->header = (d[t->tcp + 12] >> 4) * 4;
    return t->header >= 20 && t->header <= t->stop - t->tcp;
}

/* 1: the packet's segment is appended; 0: the Python loop reads this packet; -1: an error. */
static int add_segment(const Scan *s, Py_ssize_t start, Py_ssize_t end, Py_ssize_t index, double time) {
    Tcp t;
    if (!find_tcp(s, start, end, &t))
        return 0;
    const uint8_t *d = s->d;
    PyObject *key = PyBytes_FromStringAndSize((const char *)d + t.key, t.key_len);
    if (key == NULL)
        return -1;
    PyObject *pair = PyObject_GetItem(s->endpoints, key);
    Py_DECREF(key);
    if (pair == NULL)
        return -1;
    if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2) {
        Py_DECREF(pair);
        PyErr_SetString(PyExc_TypeError, "scan_packets: endpoints must give (src, dst)");
        return -1;
    }
    Py_ssize_t payload_len = t.stop - t.tcp - t.header;
    long length = t.carried - (long)t.header > (long)payload_len ? t.carried - (long)t.header : (long)payload_len;
    PyObject *args[8] = {
        PyLong_FromSsize_t(index), PyFloat_FromDouble(time), PyTuple_GET_ITEM(pair, 0), PyTuple_GET_ITEM(pair, 1),
        PyLong_FromUnsignedLong(be32(d + t.tcp + 4)), PyLong_FromLong((long)(be16(d + t.tcp + 12) & 0x1FF)),
        PyBytes_FromStringAndSize((const char *)d + t.tcp + t.header, payload_len), PyLong_FromLong(length),
    };
    PyObject *segment = NULL;
    if (args[0] && args[1] && args[4] && args[5] && args[6] && args[7])
        segment = PyObject_Vectorcall(s->make, args, 8, NULL);
    for (int i = 0; i < 8; i++)
        if (i != 2 && i != 3)
            Py_XDECREF(args[i]);
    Py_DECREF(pair);
    if (segment == NULL)
        return -1;
    int rc = PyList_Append(s->segments, segment);
    Py_DECREF(segment);
    return rc < 0 ? -1 : 1;
}

/* The records from *pos: the loop stops at the end or at the first record it leaves to Python. */
static int scan_pcap(const Scan *s, Py_ssize_t size, int little, double divisor, Py_ssize_t *pos, Py_ssize_t *count,
                     double *first) {
    while (*pos < size) {
        if (size - *pos < 16)
            return 0;
        const uint8_t *r = s->d + *pos;
        uint32_t seconds = u32(r, little), fraction = u32(r + 4, little), caplen = u32(r + 8, little);
        Py_ssize_t start = *pos + 16;
        if ((Py_ssize_t)caplen > size - start)
            return 0;
        double time = (double)seconds + (double)fraction / divisor;
        int rc = add_segment(s, start, start + caplen, *count + 1, time);
        if (rc <= 0)
            return rc;
        if (*first != *first)           /* NaN: no packet yet */
            *first = time;
        *count += 1;
        *pos = start + caplen;
    }
    return 0;
}

static int scan_pcapng(const Scan *s, Py_ssize_t size, int little, double divisor, double offset, Py_ssize_t *pos,
                       Py_ssize_t *count, double *first) {
    while (size - *pos >= 8) {
        const uint8_t *b = s->d + *pos;
        uint32_t kind = u32(b, little), length = u32(b + 4, little);
        if (length < 12 || (Py_ssize_t)length > size - *pos)
            return 0;
        if (kind != 6) {
            if (kind == 2)
                return 0;
            *pos += length;
            continue;
        }
        if (length < 32)
            return 0;
        uint64_t caplen = u32(b + 20, little);
        if (32 + (caplen + 3) / 4 * 4 != length || u32(b + length - 4, little) != length)
            return 0;
        uint64_t stamp = (uint64_t)u32(b + 12, little) << 32 | u32(b + 16, little);
        double time = offset + (double)stamp / divisor;
        int rc = add_segment(s, *pos + 28, *pos + 28 + (Py_ssize_t)caplen, *count + 1, time);
        if (rc <= 0)
            return rc;
        if (*first != *first)
            *first = time;
        *count += 1;
        *pos += length;
    }
    return 0;
}

PyObject *kw_scan_packets(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    if (nargs != 11) {
        PyErr_SetString(PyExc_TypeError, "scan_packets takes 11 arguments");
        return NULL;
    }
    Py_ssize_t pos = PyLong_AsSsize_t(args[1]), count = PyLong_AsSsize_t(args[2]);
    double first = args[3] == Py_None ? Py_NAN : PyFloat_AsDouble(args[3]);
    long form = PyLong_AsLong(args[4]);
    Scan s = {NULL, PyLong_AsLong(args[5]), args[8], args[9], args[10]};
    double divisor = PyFloat_AsDouble(args[6]);
    double offset = (double)PyLong_AsLongLong(args[7]);
    if (PyErr_Occurred())
        return NULL;
    if (!PyList_Check(s.segments) || form < 0 || form > 3) {
        PyErr_SetString(PyExc_TypeError, "scan_packets: segments must be a list, form 0-3");
        return NULL;
    }
    Py_buffer view;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0)
        return NULL;
    Py_ssize_t size = view.len;
    if (pos < 0 || pos > size) {
        PyBuffer_Release(&view);
        PyErr_SetString(PyExc_ValueError, "scan_packets: pos outside the data");
        return NULL;
    }
    s.d = (const uint8_t *)view.buf;
    int little = form == 0 || form == 2;
    int rc = form < 2 ? scan_pcap(&s, size, little, divisor, &pos, &count, &first)
                      : scan_pcapng(&s, size, little, divisor, offset, &pos, &count, &first);
    PyBuffer_Release(&view);
    if (rc < 0)
        return NULL;
    if (first != first)
        return Py_BuildValue("(nnO)", pos, count, Py_None);
    return Py_BuildValue("(nnd)", pos, count, first);
}
