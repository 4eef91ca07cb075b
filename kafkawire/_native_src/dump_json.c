/* Jackson's compact JSON of a decoded message, in C, for dump-log's --cluster-metadata-decoder
 * (issue 26): the native twin of kafkawire/metadata/fast_json.py's text form, which stays the
 * oracle.
 *
 * A JsonFormat is built per (message class, version) by kafkawire/tools/dump_log_native.py from
 * the generated class's _FIELDS (the code generator's output: no second copy of a schema): one
 * entry per field the version carries, in declaration order, as
 * (slot name, '"jsonName":' as bytes, kind, element kind, JsonFormat of a struct or None,
 * tag mode, default). It reads the instance's slots directly. Anything it does not take on
 * (a double, a value of an unexpected type, a string with lone surrogates) makes it return -1
 * with no exception set: the caller then runs the pure path, which writes the same text. */
#include "dump_text.h"

#include <string.h>

#define SLOT(obj, offset) (*(PyObject **)((char *)(obj) + (offset)))

/* ---- numbers ---- */

int kw_buf_int(TextBuf *b, long long v) {
    /* by hand: snprintf was a quarter of dump-log's time */
    char tmp[24], *end = tmp + sizeof tmp, *o = end;
    unsigned long long u = v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;
    do {
        *--o = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (v < 0)
        *--o = '-';
    return kw_buf_put(b, o, end - o);
}

/* ---- values ---- */

static const char hex_upper[] = "0123456789ABCDEF";

/* A JSON string literal as Python's encode_basestring writes it, with Jackson's upper-case
 * hex in \u escapes (jackson_hex_escapes): '"' '\' and the C0 controls escaped, the rest as is. */
static int put_string(TextBuf *b, PyObject *s) {
    if (!PyUnicode_CheckExact(s))
        return -1;
    Py_ssize_t n;
    const char *u = PyUnicode_AsUTF8AndSize(s, &n);
    if (u == NULL) {  /* lone surrogates: the pure path decides */
        PyErr_Clear();
        return -1;
    }
    if (kw_buf_reserve(b, 6 * n + 2) < 0)
        return -2;
    char *o = b->p + b->len;
    *o++ = '"';
    for (Py_ssize_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)u[i];
        if (c >= 0x20 && c != '"' && c != '\\') {
            *o++ = (char)c;
            continue;
        }
        *o++ = '\\';
        switch (c) {
        case '"': *o++ = '"'; break;
        case '\\': *o++ = '\\'; break;
        case '\n': *o++ = 'n'; break;
        case '\r': *o++ = 'r'; break;
        case '\t': *o++ = 't'; break;
        case '\b': *o++ = 'b'; break;
        case '\f': *o++ = 'f'; break;
        default:
            *o++ = 'u'; *o++ = '0'; *o++ = '0';
            *o++ = hex_upper[c >> 4]; *o++ = hex_upper[c & 15];
        }
    }
    *o++ = '"';
    b->len = o - b->p;
    return 0;
}

static const char b64_std[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
static const char b64_url[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/* base64 of n bytes into o (padded with '=' when pad); returns the characters written. */
static Py_ssize_t base64_into(char *o, const uint8_t *p, Py_ssize_t n, const char *alphabet, int pad) {
    char *start = o;
    Py_ssize_t i = 0;
    for (; i + 3 <= n; i += 3) {
        uint32_t v = ((uint32_t)p[i] << 16) | ((uint32_t)p[i + 1] << 8) | p[i + 2];
        *o++ = alphabet[v >> 18]; *o++ = alphabet[(v >> 12) & 63];
        *o++ = alphabet[(v >> 6) & 63]; *o++ = alphabet[v & 63];
    }
    if (n - i == 1) {
        uint32_t v = (uint32_t)p[i] << 16;
        *o++ = alphabet[v >> 18]; *o++ = alphabet[(v >> 12) & 63];
        if (pad) { *o++ = '='; *o++ = '='; }
    } else if (n - i == 2) {
        uint32_t v = ((uint32_t)p[i] << 16) | ((uint32_t)p[i + 1] << 8);
        *o++ = alphabet[v >> 18]; *o++ = alphabet[(v >> 12) & 63]; *o++ = alphabet[(v >> 6) & 63];
        if (pad) *o++ = '=';
    }
    return o - start;
}

/* Kafka's Uuid.toString: 22 characters of unpadded base64url, quoted. */
static int put_uuid(TextBuf *b, PyObject *u) {
    uint8_t raw[16];
    if (kw_uuid_bytes(u, raw) < 0)
        return -1;
    if (kw_buf_reserve(b, 24) < 0)
        return -2;
    b->p[b->len++] = '"';
    b->len += base64_into(b->p + b->len, raw, 16, b64_url, 0);
    b->p[b->len++] = '"';
    return 0;
}

static int put_bytes(TextBuf *b, PyObject *v) {
    Py_buffer view;
    if (!PyBytes_CheckExact(v) && !PyMemoryView_Check(v) && !PyByteArray_CheckExact(v))
        return -1;
    if (PyObject_GetBuffer(v, &view, PyBUF_C_CONTIGUOUS) < 0) {
        PyErr_Clear();
        return -1;
    }
    int rc = kw_buf_reserve(b, (view.len + 2) / 3 * 4 + 2) < 0 ? -2 : 0;
    if (rc == 0) {
        b->p[b->len++] = '"';
        b->len += base64_into(b->p + b->len, view.buf, view.len, b64_std, 1);
        b->p[b->len++] = '"';
    }
    PyBuffer_Release(&view);
    return rc;
}

static int put_int(TextBuf *b, PyObject *v) {
    if (!PyLong_CheckExact(v))
        return -1;
    int overflow = 0;
    long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
    if (overflow || (x == -1 && PyErr_Occurred())) {
        PyErr_Clear();
        return -1;
    }
    return kw_buf_int(b, x) < 0 ? -2 : 0;
}

static int put_struct(TextBuf *b, const JsonFormatObject *f, PyObject *obj);

/* One value of a kind (not None): 0, -1 (not taken on), -2 (a Python error: memory). */
static int put_value(TextBuf *b, int kind, int element, const JsonFormatObject *sub, PyObject *v) {
    switch (kind) {
    case J_BOOL:
        if (!PyBool_Check(v))
            return -1;
        return v == Py_True ? KW_PUT_LIT(b, "true") : KW_PUT_LIT(b, "false");
    case J_INT: return put_int(b, v);
    case J_STRING: return put_string(b, v);
    case J_UUID: return put_uuid(b, v);
    case J_BYTES: return put_bytes(b, v);
    case J_STRUCT: return put_struct(b, sub, v);
    case J_ARRAY: {
        if (!PyList_CheckExact(v) && !PyTuple_CheckExact(v))
            return -1;
        PyObject **items = PySequence_Fast_ITEMS(v);
        Py_ssize_t n = PySequence_Fast_GET_SIZE(v);
        if (kw_buf_putc(b, '[') < 0)
            return -2;
        for (Py_ssize_t i = 0; i < n; i++) {
            if (i && kw_buf_putc(b, ',') < 0)
                return -2;
            PyObject *x = items[i];
            int rc;
            if (x == Py_None)  /* the pure writer's null for a null element (a struct one fails there) */
                rc = element == J_STRUCT || element == J_INT ? -1 : KW_PUT_LIT(b, "null");
            else
                rc = put_value(b, element, J_NONE, sub, x);
            if (rc < 0)
                return rc;
        }
        return kw_buf_putc(b, ']') < 0 ? -2 : 0;
    }
    default: return -1;  /* doubles (Java's Double.toString) and anything else: the pure path */
    }
}

/* Whether a tagged field holds its default (tagged_value_is_default): then it is left out. */
static int is_default(const JsonField *jf, PyObject *v) {
    switch (jf->tag_mode) {
    case T_NULL_DEFAULT: return v == Py_None;
    case T_EMPTY_DEFAULT: return v != Py_None && PyObject_Length(v) == 0;
    default: return PyObject_RichCompareBool(v, jf->dflt, Py_EQ);  /* -1 on error */
    }
}

static int put_struct(TextBuf *b, const JsonFormatObject *f, PyObject *obj) {
    if (f == NULL || Py_TYPE(obj) != f->cls)
        return -1;
    if (kw_buf_putc(b, '{') < 0)
        return -2;
    int first = 1;
    for (Py_ssize_t i = 0; i < f->n_fields; i++) {
        const JsonField *jf = &f->fields[i];
        PyObject *v = SLOT(obj, jf->offset);
        if (v == NULL)
            return -1;
        if (jf->tag_mode != T_NOT_TAGGED) {
            int d = is_default(jf, v);
            if (d < 0) {
                PyErr_Clear();
                return -1;
            }
            if (d)
                continue;
        }
        if ((!first && kw_buf_putc(b, ',') < 0) || kw_buf_put(b, jf->name, jf->name_len) < 0)
            return -2;
        first = 0;
        int rc = v == Py_None ? KW_PUT_LIT(b, "null")
                              : put_value(b, jf->kind, jf->element, (const JsonFormatObject *)jf->sub, v);
        if (rc < 0)
            return rc;
    }
    return kw_buf_putc(b, '}') < 0 ? -2 : 0;
}

int kw_json_format(TextBuf *b, PyObject *format, PyObject *obj) {
    return put_struct(b, (const JsonFormatObject *)format, obj);
}

/* ---- the JsonFormat type ---- */

static int compile_field(JsonFormatObject *self, PyObject *t, JsonField *jf) {
    const char *slot;
    PyObject *name, *sub, *dflt;
    if (!PyArg_ParseTuple(t, "sSiiOiO", &slot, &name, &jf->kind, &jf->element, &sub, &jf->tag_mode, &dflt))
        return -1;
    if (sub != Py_None && !PyObject_TypeCheck(sub, &kw_JsonFormatType)) {
        PyErr_SetString(PyExc_TypeError, "a struct's format must be a JsonFormat or None");
        return -1;
    }
    if (kw_slot_offset(self->cls, slot, &jf->offset) < 0)
        return -1;
    Py_INCREF(name);
    jf->name_obj = name;
    jf->name = PyBytes_AS_STRING(name);
    jf->name_len = PyBytes_GET_SIZE(name);
    jf->sub = sub == Py_None ? NULL : sub;
    Py_XINCREF(jf->sub);
    Py_INCREF(dflt);
    jf->dflt = dflt;
    return 0;
}

static PyObject *format_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    PyObject *cls, *fields;
    if (!PyArg_ParseTuple(args, "O!O!", &PyType_Type, &cls, &PyTuple_Type, &fields))
        return NULL;
    JsonFormatObject *self = (JsonFormatObject *)type->tp_alloc(type, 0);
    if (self == NULL)
        return NULL;
    Py_INCREF(cls);
    self->cls = (PyTypeObject *)cls;
    Py_ssize_t n = PyTuple_GET_SIZE(fields);
    self->fields = PyMem_Calloc((size_t)(n ? n : 1), sizeof(JsonField));
    if (self->fields == NULL) {
        Py_DECREF(self);
        return PyErr_NoMemory();
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        self->n_fields = i + 1;  /* so that dealloc frees what compile_field took */
        if (compile_field(self, PyTuple_GET_ITEM(fields, i), &self->fields[i]) < 0) {
            Py_DECREF(self);
            return NULL;
        }
    }
    return (PyObject *)self;
}

static PyObject *format_text(JsonFormatObject *self, PyObject *obj) {
    TextBuf b = {NULL, 0, 0};
    int rc = put_struct(&b, self, obj);
    PyObject *result = NULL;
    if (rc == 0)
        result = PyUnicode_DecodeUTF8(b.p, b.len, "strict");
    else if (rc == -1 && !PyErr_Occurred())
        result = Py_NewRef(Py_None);
    PyMem_RawFree(b.p);
    return result;
}

static void format_dealloc(JsonFormatObject *self) {
    for (Py_ssize_t i = 0; i < self->n_fields; i++) {
        Py_XDECREF(self->fields[i].name_obj);
        Py_XDECREF(self->fields[i].sub);
        Py_XDECREF(self->fields[i].dflt);
    }
    PyMem_Free(self->fields);
    Py_XDECREF(self->cls);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyMethodDef format_methods[] = {
    {"text", (PyCFunction)format_text, METH_O,
     "text(message) -> Jackson's compact JSON of the message, or None where the pure writer must do it"},
    {NULL, NULL, 0, NULL},
};

PyTypeObject kw_JsonFormatType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "kafkawire._native_records.JsonFormat",
    .tp_basicsize = sizeof(JsonFormatObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "JsonFormat(cls, fields): a message's JSON text writer (see dump_json.c)",
    .tp_new = format_new,
    .tp_dealloc = (destructor)format_dealloc,
    .tp_methods = format_methods,
};
