/* dump-log's text in C (issue 26): a growable UTF-8 buffer, the JSON writer of decoded messages
 * (dump_json.c) and the record lines of a batch (dump_lines.c). The pure-Python tool
 * (kafkawire/tools/dump_log*.py) is their oracle: where they meet anything unusual they write
 * nothing and say so, and the pure code does the batch. */
#ifndef KAFKAWIRE_DUMP_TEXT_H
#define KAFKAWIRE_DUMP_TEXT_H

#include "message.h"

typedef Buf TextBuf;

int kw_buf_int(TextBuf *b, long long v);

static inline int kw_buf_putc(TextBuf *b, char c) {
    if (kw_buf_reserve(b, 1) < 0)
        return -1;
    b->p[b->len++] = c;
    return 0;
}

#define KW_PUT_LIT(b, lit) (kw_buf_put((b), (lit), (Py_ssize_t)(sizeof(lit) - 1)) < 0 ? -2 : 0)

/* Value kinds of a JSON field: the same numbers as JSON_KINDS in kafkawire/tools/dump_log_native.py. */
enum { J_NONE = -1, J_BOOL = 0, J_INT, J_FLOAT, J_STRING, J_UUID, J_BYTES, J_STRUCT, J_ARRAY };
/* How a tagged field's default is recognised (tagged_value_is_default). */
enum { T_NOT_TAGGED = 0, T_NULL_DEFAULT, T_EMPTY_DEFAULT, T_EQUAL };

typedef struct {
    Py_ssize_t offset;
    int kind, element, tag_mode;
    const char *name;       /* '"jsonName":' */
    Py_ssize_t name_len;
    PyObject *name_obj, *sub, *dflt;  /* owned */
} JsonField;

typedef struct {
    PyObject_HEAD
    PyTypeObject *cls;
    Py_ssize_t n_fields;
    JsonField *fields;
} JsonFormatObject;

extern PyTypeObject kw_JsonFormatType;

/* The JSON text of obj by format (a JsonFormat): 0; -1 when the pure writer must do it (no
 * exception set); -2 for a Python error (memory). */
int kw_json_format(TextBuf *b, PyObject *format, PyObject *obj);

PyObject *kw_dump_records(PyObject *module, PyObject *const *args, Py_ssize_t nargs);
PyObject *kw_dump_run(PyObject *module, PyObject *const *args, Py_ssize_t nargs);

#endif
