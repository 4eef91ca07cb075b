#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

static int varint(const uint8_t *d, Py_ssize_t end, Py_ssize_t *pos, int max, int64_t *out) {
    uint64_t v = 0; int shift = 0;
    for (int i = 0; i < max; i++) {
        if (*pos >= end) return -1;
        uint8_t b = d[(*pos)++];
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) { *out = (int64_t)(v >> 1) ^ -(int64_t)(v & 1); return 0; }
        shift += 7;
    }
    return -1;
}

static PyObject *take(const uint8_t *d, Py_ssize_t *pos, int64_t n, Py_ssize_t end, int *err) {
    if (n == -1) { Py_RETURN_NONE; }
    if (n < 0 || n > end - *pos) { *err = 1; return NULL; }
    PyObject *o = PyBytes_FromStringAndSize((const char *)d + *pos, n);
    *pos += n;
    return o;
}

static PyObject *decode(PyObject *self, PyObject *args) {
    Py_buffer buf; Py_ssize_t start, end, count;
    if (!PyArg_ParseTuple(args, "y*nnn", &buf, &start, &end, &count)) return NULL;
    const uint8_t *d = buf.buf;
    Py_ssize_t pos = start;
    PyObject *out = PyList_New(count);
    int err = 0;
    for (Py_ssize_t i = 0; i < count; i++) {
        int64_t length, ts, off, kn, vn, hn;
        if (varint(d, end, &pos, 5, &length) || length < 0 || length > end - pos) goto bad;
        Py_ssize_t rec_end = pos + length;
        if (pos >= end) goto bad;
        long attrs = d[pos++];
        if (varint(d, end, &pos, 10, &ts) || varint(d, end, &pos, 5, &off) || varint(d, end, &pos, 5, &kn)) goto bad;
        PyObject *key = take(d, &pos, kn, rec_end, &err); if (err) goto bad;
        if (varint(d, end, &pos, 5, &vn)) goto bad;
        PyObject *value = take(d, &pos, vn, rec_end, &err); if (err) goto bad;
        if (varint(d, end, &pos, 5, &hn) || hn < 0) goto bad;
        PyObject *hs = PyTuple_New(hn);
        for (int64_t h = 0; h < hn; h++) {
            int64_t n;
            if (varint(d, end, &pos, 5, &n) || n < 0 || n > rec_end - pos) goto bad;
            PyObject *k = PyUnicode_DecodeUTF8((const char *)d + pos, n, "surrogateescape");
            pos += n;
            if (varint(d, end, &pos, 5, &n)) goto bad;
            PyObject *v = take(d, &pos, n, rec_end, &err); if (err) goto bad;
            PyObject *t = PyTuple_New(2); PyTuple_SET_ITEM(t, 0, k); PyTuple_SET_ITEM(t, 1, v);
            PyTuple_SET_ITEM(hs, h, t);
        }
        if (pos != rec_end) goto bad;
        PyObject *t = PyTuple_New(6);
        PyTuple_SET_ITEM(t, 0, PyLong_FromLongLong(off));
        PyTuple_SET_ITEM(t, 1, PyLong_FromLongLong(ts));
        PyTuple_SET_ITEM(t, 2, key); PyTuple_SET_ITEM(t, 3, value); PyTuple_SET_ITEM(t, 4, hs);
        PyTuple_SET_ITEM(t, 5, PyLong_FromLong(attrs));
        PyList_SET_ITEM(out, i, t);
    }
    PyBuffer_Release(&buf);
    return out;
bad:
    PyBuffer_Release(&buf);
    Py_DECREF(out);  /* spike: leaks partial objects on error */
    PyErr_SetString(PyExc_ValueError, "corrupt");
    return NULL;
}

static PyMethodDef methods[] = {{"decode", decode, METH_VARARGS, NULL}, {NULL}};
static struct PyModuleDef mod = {PyModuleDef_HEAD_INIT, "spike_c", NULL, -1, methods};
PyMODINIT_FUNC PyInit_spike_c(void) { return PyModule_Create(&mod); }
