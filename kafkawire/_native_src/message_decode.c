/* The interpreter of compiled message programs (issue 26): the native twin of the generated
 * Python decoders (the modules of kafkawire/messages, written by kafkawire/codegen/emit_decode.py).
 *
 * It builds the same objects they do: instances of the generated classes made as
 * object.__new__ makes them, every slot filled (wire fields, then defaults, then tagged
 * fields), strings decoded as strict UTF-8, bytes copied, records and zeroCopy bytes as
 * memoryview slices of the input, uuids as uuid_from_bytes makes them, unknown tagged fields
 * as [(tag, bytes), ...] or (). Every length is checked against the bytes left before
 * anything is allocated or read. It never words an error: on bytes it cannot decode it
 * returns NULL and the caller runs the pure decoder, which raises the error it always did. */
#include "message.h"

#include <structmember.h>
#include <string.h>

typedef struct {
    const uint8_t *d;
    Py_ssize_t len;
    PyObject *data;   /* the input, a bytes object */
    PyObject *view;   /* the first view field's value: the next ones are made from it */
} Ctx;

#define SLOT(obj, offset) (*(PyObject **)((char *)(obj) + (offset)))
#define LEFT(c, pos) ((c)->len - (pos))

static const int fixed_size[K_LAST_FIXED + 1] = {1, 1, 2, 2, 4, 4, 8, 8, 16};

/* The small ints CPython keeps (-5..256), taken once: most int fields are small (error codes,
 * partition indexes, broker ids), and a table look-up is cheaper than PyLong_FromLong's call. */
#define SMALL_LOW (-5)
#define SMALL_HIGH 256
static PyObject *small_ints[SMALL_HIGH - SMALL_LOW + 1];

static inline PyObject *int_object(long v) {
    if (v >= SMALL_LOW && v <= SMALL_HIGH) {
        PyObject *o = small_ints[v - SMALL_LOW];
        Py_INCREF(o);
        return o;
    }
    return PyLong_FromLong(v);
}

static PyTypeObject *uuid_type;
static Py_ssize_t uuid_int_offset, uuid_safe_offset;
static PyObject *uuid_unknown_safety;

static inline uint32_t be16(const uint8_t *p) { return ((uint32_t)p[0] << 8) | p[1]; }
static inline uint32_t be32(const uint8_t *p) {
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}
static inline uint64_t be64(const uint8_t *p) { return ((uint64_t)be32(p) << 32) | be32(p + 4); }

/* read_uvarint's rules: at most 5 bytes, at most 32 bits. */
static int read_uvarint(const Ctx *c, Py_ssize_t *pos, uint32_t *out) {
    Py_ssize_t p = *pos;
    uint64_t result = 0;
    for (int shift = 0; shift <= 28; shift += 7) {
        if (p >= c->len)
            return -1;
        uint8_t b = c->d[p++];
        result |= (uint64_t)(b & 0x7F) << shift;
        if (b < 0x80) {
            if (result > 0xFFFFFFFFu)
                return -1;
            *out = (uint32_t)result;
            *pos = p;
            return 0;
        }
    }
    return -1;
}

static PyObject *zero_uuid;   /* the uuid of 16 zero bytes, made once: UUIDs are immutable */
static PyObject *make_uuid(const uint8_t *p);

int kw_uuid_init(void) {
    for (long v = SMALL_LOW; v <= SMALL_HIGH; v++)
        if ((small_ints[v - SMALL_LOW] = PyLong_FromLong(v)) == NULL)   /* kept for the process */
            return -1;
    PyObject *mod = PyImport_ImportModule("uuid");
    if (mod == NULL)
        return -1;
    PyObject *cls = PyObject_GetAttrString(mod, "UUID");
    PyObject *safety = PyObject_GetAttrString(mod, "SafeUUID");
    Py_DECREF(mod);
    if (cls != NULL && safety != NULL && PyType_Check(cls)) {
        uuid_type = (PyTypeObject *)cls;
        uuid_unknown_safety = PyObject_GetAttrString(safety, "unknown");
    }
    Py_XDECREF(safety);
    if (uuid_unknown_safety == NULL)
        return -1;
    if (kw_slot_offset(uuid_type, "int", &uuid_int_offset) < 0
        || kw_slot_offset(uuid_type, "is_safe", &uuid_safe_offset) < 0)
        return -1;
    static const uint8_t zeros[16] = {0};
    zero_uuid = make_uuid(zeros);   /* kept for the process, shared as the pure read_uuid shares ZERO_UUID */
    return zero_uuid == NULL ? -1 : 0;
}

static PyObject *make_uuid(const uint8_t *p) {
    uint64_t halves[2];
    memcpy(halves, p, 16);
    if ((halves[0] | halves[1]) == 0 && zero_uuid != NULL) {  /* Kafka's Uuid.ZERO_UUID: frequent */
        Py_INCREF(zero_uuid);
        return zero_uuid;
    }
    PyObject *value = _PyLong_FromByteArray(p, 16, 0, 0);  /* big-endian, unsigned */
    if (value == NULL)
        return NULL;
    PyObject *u = uuid_type->tp_alloc(uuid_type, 0);
    if (u == NULL) {
        Py_DECREF(value);
        return NULL;
    }
    SLOT(u, uuid_int_offset) = value;
    Py_INCREF(uuid_unknown_safety);
    SLOT(u, uuid_safe_offset) = uuid_unknown_safety;
    return u;
}

/* The 16 bytes of a uuid object the decoder made (an exact uuid.UUID): 0, or -1 for anything
 * else (no exception is left set: the caller falls back to the pure code). */
int kw_uuid_bytes(PyObject *u, uint8_t out[16]) {
    if (Py_TYPE(u) != uuid_type)
        return -1;
    PyObject *value = SLOT(u, uuid_int_offset);
    if (value == NULL || !PyLong_CheckExact(value))
        return -1;
#if PY_VERSION_HEX >= 0x030D0000
    int failed = _PyLong_AsByteArray((PyLongObject *)value, out, 16, 0, 0, 1) < 0;
#else
    int failed = _PyLong_AsByteArray((PyLongObject *)value, out, 16, 0, 0) < 0;
#endif
    if (failed) {
        PyErr_Clear();
        return -1;
    }
    return 0;
}

static inline PyObject *read_fixed(const Ctx *c, int kind, Py_ssize_t *pos) {
    Py_ssize_t at = *pos;
    if (fixed_size[kind] > LEFT(c, at))
        return NULL;
    const uint8_t *p = c->d + at;
    *pos = at + fixed_size[kind];
    switch (kind) {
    case K_BOOL: return PyBool_FromLong(p[0] != 0);
    case K_INT8: return int_object((int8_t)p[0]);
    case K_INT16: return int_object((int16_t)be16(p));
    case K_UINT16: return int_object((long)be16(p));
    case K_INT32: return int_object((int32_t)be32(p));
    case K_UINT32: return PyLong_FromUnsignedLong(be32(p));
    case K_INT64: return PyLong_FromLongLong((int64_t)be64(p));
    case K_FLOAT64: {
        double v = PyFloat_Unpack8((const char *)p, 0);
        return v == -1.0 && PyErr_Occurred() ? NULL : PyFloat_FromDouble(v);
    }
    default: return make_uuid(p);
    }
}

/* ---- strings: strict UTF-8, as PyUnicode_DecodeUTF8 decodes it ----
 * CPython's decoder guesses ASCII, then on the first other byte goes through a writer that
 * grows and widens the string as it goes (a realloc or two and copies per string). Measuring
 * first (validity, length, widest character), then filling a string made at its final size,
 * is cheaper for any text, and an ASCII string is one scan and one memcpy. */

/* The second byte a lead byte allows, from Unicode's table of well-formed UTF-8 (Table 3-7):
 * no overlong forms, no surrogates (ED A0..BF), nothing past U+10FFFF. */
static inline int second_byte_ok(uint8_t lead, uint8_t b) {
    switch (lead) {
    case 0xE0: return b >= 0xA0 && b <= 0xBF;
    case 0xED: return b >= 0x80 && b <= 0x9F;
    case 0xF0: return b >= 0x90 && b <= 0xBF;
    case 0xF4: return b >= 0x80 && b <= 0x8F;
    default: return b >= 0x80 && b <= 0xBF;
    }
}

/* The length of the well-formed sequence at p[0..left), 0 if there is none. */
static inline int sequence_length(const uint8_t *p, Py_ssize_t left) {
    uint8_t lead = p[0];
    int len = lead < 0xC2 ? 0 : lead <= 0xDF ? 2 : lead <= 0xEF ? 3 : lead <= 0xF4 ? 4 : 0;
    if (len == 0 || len > left || !second_byte_ok(lead, p[1]))
        return 0;
    for (int k = 2; k < len; k++)
        if ((p[k] & 0xC0) != 0x80)
            return 0;
    return len;
}

static inline Py_UCS4 sequence_value(const uint8_t *p, int len) {
    switch (len) {
    case 1: return p[0];
    case 2: return ((Py_UCS4)(p[0] & 0x1F) << 6) | (p[1] & 0x3F);
    case 3: return ((Py_UCS4)(p[0] & 0x0F) << 12) | ((Py_UCS4)(p[1] & 0x3F) << 6) | (p[2] & 0x3F);
    default:
        return ((Py_UCS4)(p[0] & 0x07) << 18) | ((Py_UCS4)(p[1] & 0x3F) << 12) | ((Py_UCS4)(p[2] & 0x3F) << 6)
               | (p[3] & 0x3F);
    }
}

/* The str of n bytes of strict UTF-8, or NULL (no exception) for bytes that are not: the pure
 * decoder then raises its error. */
static PyObject *make_str(const uint8_t *p, Py_ssize_t n) {
    Py_ssize_t i = 0, chars = 0;
    Py_UCS4 widest = 0;
    while (i + 8 <= n) {   /* ASCII eight bytes at a time */
        uint64_t word;
        memcpy(&word, p + i, 8);
        if (word & 0x8080808080808080ULL)
            break;
        i += 8;
    }
    chars = i;
    while (i < n) {
        int len = p[i] < 0x80 ? 1 : sequence_length(p + i, n - i);
        if (len == 0)
            return NULL;
        Py_UCS4 c = sequence_value(p + i, len);
        widest = c > widest ? c : widest;
        i += len;
        chars++;
    }
    if (chars == 1 && widest < 256)
        return PyUnicode_FromOrdinal(chars == n ? p[0] : widest);   /* CPython's cached one-character strings */
    PyObject *s = PyUnicode_New(chars, widest);
    if (s == NULL || chars == n) {
        if (s != NULL)
            memcpy(PyUnicode_1BYTE_DATA(s), p, n);
        return s;
    }
    int kind = PyUnicode_KIND(s);
    void *out = PyUnicode_DATA(s);
    for (Py_ssize_t at = 0, k = 0; at < n; k++) {
        int len = p[at] < 0x80 ? 1 : sequence_length(p + at, n - at);
        PyUnicode_WRITE(kind, out, k, sequence_value(p + at, len));
        at += len;
    }
    return s;
}

/* A length as the pure readers read it: int16 (strings) or int32 (bytes), or a compact
 * unsigned varint minus one. Sets *n (-1 for null). */
static int read_length(const Ctx *c, int compact, int wide, Py_ssize_t *pos, int64_t *n) {
    if (compact) {
        uint32_t u;
        if (read_uvarint(c, pos, &u) < 0)
            return -1;
        *n = (int64_t)u - 1;
        return 0;
    }
    int size = wide ? 4 : 2;
    if (size > LEFT(c, *pos))
        return -1;
    const uint8_t *p = c->d + *pos;
    *n = wide ? (int32_t)be32(p) : (int16_t)be16(p);
    *pos += size;
    return 0;
}

/* A string, bytes or records value: flags say compact, nullable and view (a memoryview slice). */
static PyObject *read_span(Ctx *c, int kind, int flags, Py_ssize_t *pos) {
    int64_t n;
    if (read_length(c, flags & F_COMPACT, kind != K_STRING, pos, &n) < 0)
        return NULL;
    if (n < 0) {
        if (n != -1 || !(flags & F_NULLABLE))
            return NULL;
        Py_RETURN_NONE;
    }
    Py_ssize_t at = *pos;
    if (n > LEFT(c, at))
        return NULL;
    *pos = at + (Py_ssize_t)n;
    if (kind == K_STRING)
        return make_str(c->d + at, (Py_ssize_t)n);
    if (!(flags & F_VIEW))
        return PyBytes_FromStringAndSize((const char *)c->d + at, (Py_ssize_t)n);
    PyObject *view = kw_mv_slice_of(c->view != NULL ? c->view : c->data, c->data, at, (Py_ssize_t)n);
    if (c->view == NULL && view != NULL) {   /* the next views share its managed buffer */
        Py_INCREF(view);
        c->view = view;
    }
    return view;
}

static PyObject *read_struct(Ctx *c, const Program *p, Py_ssize_t *pos);

/* One element of an array: never null, never a view (as the pure readers of elements). */
static PyObject *read_element(Ctx *c, const FieldOp *op, Py_ssize_t *pos) {
    int kind = op->element;
    if (kind <= K_LAST_FIXED)
        return read_fixed(c, kind, pos);
    if (kind == K_STRUCT)
        return read_struct(c, op->sub, pos);
    return read_span(c, kind == K_STRING ? K_STRING : K_BYTES, op->flags & F_COMPACT, pos);
}

static PyObject *read_array(Ctx *c, const FieldOp *op, Py_ssize_t *pos) {
    int64_t n;
    if (read_length(c, op->flags & F_COMPACT, 1, pos, &n) < 0)
        return NULL;
    if (n < 0) {
        if (n != -1 || !(op->flags & F_NULLABLE))
            return NULL;
        Py_RETURN_NONE;
    }
    /* Every element takes a byte at least: a count beyond the bytes left is refused before
     * the list is allocated (read_array_length's rule). */
    if (n > LEFT(c, *pos))
        return NULL;
    if (op->element <= K_LAST_FIXED && n * fixed_size[op->element] > LEFT(c, *pos))
        return NULL;
    PyObject *list = PyList_New((Py_ssize_t)n);
    if (list == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < (Py_ssize_t)n; i++) {
        PyObject *item = read_element(c, op, pos);
        if (item == NULL) {
            Py_DECREF(list);
            return NULL;
        }
        PyList_SET_ITEM(list, i, item);
    }
    return list;
}

static PyObject *read_nullable_struct(Ctx *c, const FieldOp *op, Py_ssize_t *pos) {
    if (op->flags & F_VARINT_MARKER) {   /* inside a tagged field: a varint, 0 for null */
        uint32_t marker;
        if (read_uvarint(c, pos, &marker) < 0)
            return NULL;
        if (marker == 0)
            Py_RETURN_NONE;
        return read_struct(c, op->sub, pos);
    }
    if (*pos >= c->len)
        return NULL;
    int null = c->d[*pos] >= 128;        /* the int8 marker: negative for null */
    *pos += 1;
    if (null)
        Py_RETURN_NONE;
    return read_struct(c, op->sub, pos);
}

static PyObject *read_value(Ctx *c, const FieldOp *op, Py_ssize_t *pos) {
    int kind = op->kind;
    if (kind <= K_LAST_FIXED)
        return read_fixed(c, kind, pos);
    switch (kind) {
    case K_STRING:
    case K_BYTES:
    case K_RECORDS:
        return read_span(c, kind, op->flags, pos);
    case K_STRUCT:
        if (op->flags & F_NULLABLE)
            return read_nullable_struct(c, op, pos);
        return read_struct(c, op->sub, pos);
    case K_ARRAY:
        return read_array(c, op, pos);
    default:
        PyErr_SetString(PyExc_SystemError, "a default in a tagged field");
        return NULL;
    }
}

static PyObject *make_default(const FieldOp *op) {
    switch (op->dmode) {
    case D_LIST: return PyList_New(0);
    case D_CALL: return PyObject_CallNoArgs(op->value);
    default:
        Py_INCREF(op->value);
        return op->value;
    }
}

static const TagOp *find_tag(const Program *p, int64_t tag) {
    for (Py_ssize_t i = 0; i < p->n_tags; i++)
        if (p->tags[i].tag == tag)
            return &p->tags[i];
    return NULL;
}

/* An unknown tagged field kept as (tag, bytes), in a list made for the first one. */
static int keep_unknown(const Ctx *c, PyObject **unknown, uint32_t tag, Py_ssize_t start, Py_ssize_t end) {
    if (*unknown == NULL && (*unknown = PyList_New(0)) == NULL)
        return -1;
    PyObject *item = Py_BuildValue("(ky#)", (unsigned long)tag, (const char *)c->d + start, end - start);
    if (item == NULL)
        return -1;
    int rc = PyList_Append(*unknown, item);
    Py_DECREF(item);
    return rc;
}

/* The tagged-field section: known tags into their slots (over the defaults), the rest kept. */
static int read_tags(Ctx *c, const Program *p, PyObject *obj, Py_ssize_t *pos) {
    uint32_t n, tag, size;
    PyObject *unknown = NULL;
    int64_t last = -1;
    if (read_uvarint(c, pos, &n) < 0 || n > (uint64_t)LEFT(c, *pos))
        return -1;
    for (uint32_t i = 0; i < n; i++) {
        if (read_uvarint(c, pos, &tag) < 0 || (int64_t)tag <= last || read_uvarint(c, pos, &size) < 0
            || size > (uint64_t)LEFT(c, *pos))
            goto fail;
        Py_ssize_t end = *pos + size;
        const TagOp *known = find_tag(p, tag);
        if (known != NULL) {
            PyObject *value = read_value(c, &known->op, pos);
            if (value == NULL)
                goto fail;
            Py_XSETREF(SLOT(obj, known->op.offset), value);
            if (*pos != end)
                goto fail;
        } else {
            if (keep_unknown(c, &unknown, tag, *pos, end) < 0)
                goto fail;
            *pos = end;
        }
        last = tag;
    }
    if (unknown == NULL)
        unknown = PyTuple_New(0);
    Py_XSETREF(SLOT(obj, p->unknown_offset), unknown);
    return unknown == NULL ? -1 : 0;
fail:
    Py_XDECREF(unknown);
    return -1;
}

static PyObject *read_struct(Ctx *c, const Program *p, Py_ssize_t *pos) {
    PyObject *obj = kw_struct_new(p->cls);   /* as object.__new__ makes it: every slot NULL */
    if (obj == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < p->n_fields; i++) {
        const FieldOp *op = &p->fields[i];
        PyObject *value = op->kind == K_DEFAULT ? make_default(op) : read_value(c, op, pos);
        if (value == NULL) {
            Py_DECREF(obj);
            return NULL;
        }
        SLOT(obj, op->offset) = value;
    }
    if (!p->flexible) {
        SLOT(obj, p->unknown_offset) = PyTuple_New(0);
    } else if (read_tags(c, p, obj, pos) < 0) {
        Py_DECREF(obj);
        return NULL;
    }
    return obj;
}

PyObject *kw_read_message(const Program *p, PyObject *data, Py_ssize_t *pos) {
    Ctx c = {(const uint8_t *)PyBytes_AS_STRING(data), PyBytes_GET_SIZE(data), data, NULL};
    PyObject *message = read_struct(&c, p, pos);
    Py_XDECREF(c.view);
    return message;
}

PyObject *kw_run_program(const Program *p, PyObject *data, Py_ssize_t pos) {
    PyObject *message = kw_read_message(p, data, &pos);
    if (message == NULL)
        return NULL;
    PyObject *end = PyLong_FromSsize_t(pos);
    if (end == NULL) {
        Py_DECREF(message);
        return NULL;
    }
    PyObject *result = PyTuple_New(2);
    if (result == NULL) {
        Py_DECREF(message);
        Py_DECREF(end);
        return NULL;
    }
    PyTuple_SET_ITEM(result, 0, message);
    PyTuple_SET_ITEM(result, 1, end);
    return result;
}
