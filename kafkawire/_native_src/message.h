/* The native message decoder (issue 26): compiled field programs and the interpreter that
 * walks them. The programs come from the generated modules (_NATIVE_PROGRAMS, written by
 * kafkawire/codegen/emit_native.py, which documents the format); message_programs.c compiles
 * them into the structs below, message_decode.c runs them. */
#ifndef KAFKAWIRE_MESSAGE_H
#define KAFKAWIRE_MESSAGE_H

#include "records.h"

/* The kinds of a field op, in the order of kw_kind_names. The fixed-width ones come first. */
enum {
    K_BOOL, K_INT8, K_INT16, K_UINT16, K_INT32, K_UINT32, K_INT64, K_FLOAT64, K_UUID,
    K_STRING, K_BYTES, K_RECORDS, K_STRUCT, K_ARRAY, K_DEFAULT, N_KINDS
};
#define K_LAST_FIXED K_UUID

/* Field flags: the same values as NATIVE_FLAGS in kafkawire/codegen/emit_native.py. */
enum { F_COMPACT = 1, F_NULLABLE = 2, F_VIEW = 4, F_VARINT_MARKER = 8, F_IGNORABLE = 16 };
/* Set by the compiler on the default op of a field that is a tagged field of the version. */
#define F_TAGGED_DEFAULT 64

/* How an absent field's default is made. */
enum { D_CONST, D_LIST, D_CALL, D_LAZY };

typedef struct Program Program;

typedef struct {
    Py_ssize_t offset;     /* the slot's offset in the instance */
    uint8_t kind, flags, element, dmode;
    const Program *sub;    /* a struct's (or struct array's) program */
    PyObject *value;       /* a default's value, or its factory (D_CALL); owned */
    PyObject *instance;    /* D_LAZY: the default instance a value read is compared with; owned */
    Py_ssize_t *lazy_slots;        /* D_LAZY: the offsets of the instance's field slots, or NULL */
    Py_ssize_t n_lazy_slots;       /* (the encoder compares them in C, message_encode.c) */
    Py_ssize_t lazy_unknown;       /* D_LAZY: the offset of its _unknown_tagged_fields slot */
} FieldOp;

typedef struct {
    int64_t tag;
    FieldOp op;
    const FieldOp *dflt;   /* the field's default op, in the program's fields */
} TagOp;

struct Program {
    PyTypeObject *cls;              /* owned */
    Py_ssize_t n_fields, n_tags;
    Py_ssize_t unknown_offset;      /* the _unknown_tagged_fields slot */
    int flexible;
    FieldOp *fields;
    TagOp *tags;
};

extern const char *const kw_kind_names[N_KINDS];

/* The offset of a writable object slot (a __slots__ entry) of cls; TypeError otherwise. */
int kw_slot_offset(PyTypeObject *cls, const char *name, Py_ssize_t *offset);

/* UUID objects as uuid_from_bytes makes them; kw_uuid_init once at import. */
int kw_uuid_init(void);
/* The 16 bytes of a uuid.UUID (exactly that class): 0, or -1 (no exception set). */
int kw_uuid_bytes(PyObject *u, uint8_t out[16]);

/* The message at data[pos:] as program p says: a new (message, end) tuple, or NULL when the
 * bytes cannot be decoded (an exception may or may not be set: the caller clears it and lets
 * the pure decoder word the error). */
PyObject *kw_run_program(const Program *p, PyObject *data, Py_ssize_t pos);
/* The same without the tuple: the message, *pos moved to its end. */
PyObject *kw_read_message(const Program *p, PyObject *data, Py_ssize_t *pos);

/* The bytes program p makes of obj (an instance of p->cls), exactly as the generated encoder
 * writes them; NULL (an exception may be set) for anything the C code does not take on: the
 * caller clears it and lets the pure encoder encode or word the error. */
PyObject *kw_encode_program(const Program *p, PyObject *obj);
int kw_encode_messages_init(void);

/* The program a MessageDecoder or MessageEncoder runs; NULL for any other object. */
const Program *kw_decoder_program(PyObject *obj);
const Program *kw_encoder_program(PyObject *obj);

/* cls.decode and message.encode in C (message_methods.c). */
PyObject *kw_class_decode_new(PyObject *cls, PyObject *decoders, PyObject *fallback);
PyObject *kw_method_encode_new(PyObject *fallback);
int kw_message_methods_init(void);

int kw_messages_init(PyObject *module);

/* Instances of the generated classes (struct_alloc.c): kw_struct_adopt gives a class whose layout
 * is __slots__ only a cheaper deallocator that keeps freed instances' memory for kw_struct_new
 * (a class with any other layout is left as it is); kw_struct_new makes an instance with every
 * slot NULL, as cls->tp_alloc(cls, 0) does. */
int kw_struct_adopt(PyTypeObject *cls);
PyObject *kw_struct_new(PyTypeObject *cls);

#endif
