/* TCP reassembly of one direction of a connection, for `kafkawire pcap` (issue 26):
 * kafkawire/capture/streams.py's _relative and _fill in C, which stay the oracle (the first way
 * runs them, tests/tools/test_pcap_reassembly.py holds the two equal). Per segment the Python loop
 * made a tuple, a sort key, a slice and a bytearray append; here each run's bytes are copied once
 * into a bytearray of their exact size.
 *
 * reassemble_direction(segments, run_cls, segment_cls) -> None | (runs, gaps, retransmitted, saw_syn, syn_ack)
 *     segments: the direction's Segment objects in capture order. None when a segment is not
 *     plainly what the packet readers make (not exactly segment_cls, payload not bytes, numbers
 *     out of range): the Python code reassembles that direction, and words anything odd. */
#include "records.h"

#define TCP_SYN 0x02
#define TCP_ACK 0x10
#define MAX_LENGTH ((int64_t)1 << 40)

typedef struct {
    int64_t seq, flags, index, length, offset;
    Py_ssize_t pos;                 /* place in capture order: the tie-break of Python's stable sort */
    PyObject *index_obj, *payload;  /* new references */
} Seg;

typedef struct {
    int64_t start;
    Py_ssize_t first, count, size;  /* its pieces, and the bytes they add */
} RunSpan;

typedef struct {
    Py_ssize_t seg, from, len, at;  /* bytes seg.payload[from:from+len], at this offset of its run */
} Piece;

static PyObject *s_seq, *s_flags, *s_index, *s_length, *s_payload;

static int intern_names(void) {
    if (s_seq != NULL)
        return 0;
    s_seq = PyUnicode_InternFromString("seq");
    s_flags = PyUnicode_InternFromString("flags");
    s_index = PyUnicode_InternFromString("index");
    s_length = PyUnicode_InternFromString("length");
    s_payload = PyUnicode_InternFromString("payload");
    return s_seq && s_flags && s_index && s_length && s_payload ? 0 : -1;
}

/* An int attribute within [lo, hi]: 1 and *out set; 0 when it is not (the Python path decides); -1. */
static int int_attr(PyObject *obj, PyObject *name, int64_t lo, int64_t hi, int64_t *out, PyObject **keep) {
    PyObject *value = PyObject_GetAttr(obj, name);
    if (value == NULL)
        return -1;
    if (!PyLong_CheckExact(value)) {
        Py_DECREF(value);
        return 0;
    }
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(value, &overflow);
    if (v == -1 && PyErr_Occurred()) {
        Py_DECREF(value);
        return -1;
    }
    if (overflow || v < lo || v > hi) {
        Py_DECREF(value);
        return 0;
    }
    *out = v;
    if (keep != NULL)
        *keep = value;
    else
        Py_DECREF(value);
    return 1;
}

/* 1: the segment read; 0: not plainly a segment; -1: an error. */
static int read_segment(PyObject *obj, PyObject *segment_cls, Seg *s) {
    if ((PyObject *)Py_TYPE(obj) != segment_cls)
        return 0;
    int rc;
    if ((rc = int_attr(obj, s_seq, 0, 0xFFFFFFFFLL, &s->seq, NULL)) <= 0
        || (rc = int_attr(obj, s_flags, 0, 0xFFFF, &s->flags, NULL)) <= 0
        || (rc = int_attr(obj, s_length, 0, MAX_LENGTH, &s->length, NULL)) <= 0
        || (rc = int_attr(obj, s_index, INT64_MIN, INT64_MAX, &s->index, &s->index_obj)) <= 0)
        return rc;
    s->payload = PyObject_GetAttr(obj, s_payload);
    if (s->payload == NULL)
        return -1;
    return PyBytes_CheckExact(s->payload) ? 1 : 0;
}

static int by_offset(const void *a, const void *b) {
    const Seg *x = *(Seg *const *)a, *y = *(Seg *const *)b;
    if (x->offset != y->offset)
        return x->offset < y->offset ? -1 : 1;
    if (x->index != y->index)
        return x->index < y->index ? -1 : 1;
    return x->pos < y->pos ? -1 : x->pos > y->pos;
}

/* (seq - base) mod 2**32, as a signed 32-bit distance (streams._relative). */
static int64_t relative(int64_t seq, int64_t base) {
    int64_t r = (seq - base) % 0x100000000LL;
    if (r < 0)
        r += 0x100000000LL;
    return r >= 0x80000000LL ? r - 0x100000000LL : r;
}

static int append_gap(PyObject *gaps, int64_t at, int64_t missing, PyObject *index) {
    PyObject *a = PyLong_FromLongLong(at), *m = PyLong_FromLongLong(missing);
    PyObject *gap = a && m ? PyTuple_Pack(3, a, m, index) : NULL;
    Py_XDECREF(a);
    Py_XDECREF(m);
    if (gap == NULL)
        return -1;
    int rc = PyList_Append(gaps, gap);
    Py_DECREF(gap);
    return rc;
}

/* The Run objects of the spans: each run's bytes in one bytearray, its (offset, packet) list. */
static PyObject *make_runs(PyObject *run_cls, const Seg *segs, const RunSpan *spans, Py_ssize_t nspans,
                           const Piece *pieces) {
    PyObject *runs = PyList_New(0);
    if (runs == NULL)
        return NULL;
    for (Py_ssize_t r = 0; r < nspans; r++) {
        const RunSpan *span = &spans[r];
        PyObject *data = PyByteArray_FromStringAndSize(NULL, span->size);
        PyObject *packets = PyList_New(span->count);
        PyObject *start = PyLong_FromLongLong(span->start);
        PyObject *run = NULL;
        if (data && packets && start) {
            char *out = PyByteArray_AS_STRING(data);
            Py_ssize_t i = 0;
            for (; i < span->count; i++) {
                const Piece *p = &pieces[span->first + i];
                const Seg *s = &segs[p->seg];
                memcpy(out + p->at, PyBytes_AS_STRING(s->payload) + p->from, (size_t)p->len);
                PyObject *at = PyLong_FromSsize_t(p->at);
                PyObject *entry = at ? PyTuple_Pack(2, at, s->index_obj) : NULL;
                Py_XDECREF(at);
                if (entry == NULL)
                    break;
                PyList_SET_ITEM(packets, i, entry);
            }
            if (i == span->count) {
                PyObject *args[3] = {start, data, packets};
                run = PyObject_Vectorcall(run_cls, args, 3, NULL);
            }
        }
        Py_XDECREF(data);
        Py_XDECREF(packets);
        Py_XDECREF(start);
        if (run == NULL || PyList_Append(runs, run) < 0) {
            Py_XDECREF(run);
            Py_DECREF(runs);
            return NULL;
        }
        Py_DECREF(run);
    }
    return runs;
}

/* streams._fill over the ordered segments: the spans and pieces of the runs, the gaps appended. */
static int fill(Seg **ordered, Py_ssize_t n, const Seg *segs, RunSpan *spans, Py_ssize_t *nspans, Piece *pieces,
                PyObject *gaps, Py_ssize_t *retransmitted) {
    int have_end = 0, open = 0;
    int64_t end = 0;
    Py_ssize_t npieces = 0;
    RunSpan *run = NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        const Seg *s = ordered[i];
        Py_ssize_t payload_len = PyBytes_GET_SIZE(s->payload);
        if (have_end && s->offset + s->length <= end) {
            *retransmitted += 1;
            continue;
        }
        if (!open || s->offset > end) {
            if (have_end && s->offset > end && append_gap(gaps, end, s->offset - end, s->index_obj) < 0)
                return -1;
            run = &spans[(*nspans)++];
            run->start = !have_end || s->offset > end ? s->offset : end;
            run->first = npieces;
            run->count = run->size = 0;
            end = run->start;
            have_end = open = 1;
        }
        int64_t skip = end - s->offset;          /* >= 0: a run never starts after a segment it takes */
        Py_ssize_t from = skip < payload_len ? (Py_ssize_t)skip : payload_len;
        Piece *p = &pieces[npieces++];
        p->seg = s - segs;
        p->from = from;
        p->len = payload_len - from;
        p->at = run->size;
        run->count++;
        run->size += p->len;
        if (payload_len < s->length) {           /* the snapshot cut this segment: its tail is a gap */
            if (append_gap(gaps, s->offset + payload_len, s->length - payload_len, s->index_obj) < 0)
                return -1;
            end = s->offset + s->length;
            open = 0;
        } else {
            end += p->len;
        }
    }
    return 0;
}

PyObject *kw_reassemble_direction(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    if (nargs != 3 || !PyList_Check(args[0])) {
        PyErr_SetString(PyExc_TypeError, "reassemble_direction(segments: list, run_cls, segment_cls)");
        return NULL;
    }
    if (intern_names() < 0)
        return NULL;
    PyObject *list = args[0], *run_cls = args[1], *segment_cls = args[2];
    Py_ssize_t n = PyList_GET_SIZE(list);
    if (n == 0)
        Py_RETURN_NONE;                          /* Python's own code says what an empty list is */
    Seg *segs = PyMem_Calloc((size_t)n, sizeof(Seg));
    Seg **ordered = PyMem_Calloc((size_t)n, sizeof(Seg *));
    RunSpan *spans = PyMem_Calloc((size_t)n, sizeof(RunSpan));
    Piece *pieces = PyMem_Calloc((size_t)n, sizeof(Piece));
    PyObject *result = NULL, *gaps = NULL, *runs = NULL;
    int plain = 1;
    if (!segs || !ordered || !spans || !pieces) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < n && plain; i++) {   /* what a Seg holds is released below */
        segs[i].pos = i;
        int rc = read_segment(PyList_GET_ITEM(list, i), segment_cls, &segs[i]);
        if (rc < 0)
            goto done;
        plain = rc;
    }
    if (!plain) {
        result = Py_NewRef(Py_None);
        goto done;
    }
    int saw_syn = 0, syn_ack = 0;
    int64_t base = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (segs[i].flags & TCP_SYN) {
            if (!saw_syn)
                base = segs[i].seq + 1;
            saw_syn = 1;
            syn_ack |= (segs[i].flags & TCP_ACK) != 0;
        }
    }
    if (!saw_syn) {                              /* the payload whose seq comes first after the first segment's */
        int64_t first = segs[0].seq, best = -1;
        base = first;
        for (Py_ssize_t i = 0; i < n; i++) {
            if (PyBytes_GET_SIZE(segs[i].payload) == 0)
                continue;
            int64_t key = ((segs[i].seq - first) % 0x100000000LL + 0x100000000LL) % 0x100000000LL;
            if (best < 0 || key < best) {
                best = key;
                base = segs[i].seq;
            }
        }
    }
    Py_ssize_t kept = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (PyBytes_GET_SIZE(segs[i].payload) || segs[i].length) {
            segs[i].offset = relative(segs[i].seq, base);
            ordered[kept++] = &segs[i];
        }
    }
    qsort(ordered, (size_t)kept, sizeof(Seg *), by_offset);
    gaps = PyList_New(0);
    Py_ssize_t nspans = 0, retransmitted = 0;
    if (gaps == NULL || fill(ordered, kept, segs, spans, &nspans, pieces, gaps, &retransmitted) < 0)
        goto done;
    runs = make_runs(run_cls, segs, spans, nspans, pieces);
    if (runs == NULL)
        goto done;
    result = Py_BuildValue("(OOnOO)", runs, gaps, retransmitted, saw_syn ? Py_True : Py_False,
                           syn_ack ? Py_True : Py_False);
done:
    for (Py_ssize_t i = 0; segs != NULL && i < n; i++) {
        Py_XDECREF(segs[i].index_obj);
        Py_XDECREF(segs[i].payload);
    }
    Py_XDECREF(gaps);
    Py_XDECREF(runs);
    PyMem_Free(segs);
    PyMem_Free(ordered);
    PyMem_Free(spans);
    PyMem_Free(pieces);
    return result;
}
