/* Compiled message programs and the decoder objects that run them (issue 26).
 *
 * MessagePrograms(programs, namespace): the _NATIVE_PROGRAMS of one generated module (see
 * kafkawire/codegen/emit_native.py for the format) and that module's globals, where class
 * names, default constants and factories are looked up. Its decoder(name, pure) compiles the
 * named program (and those it uses, once each) and returns a MessageDecoder: called as
 * decoder(data, pos) it returns (message, end) like the generated function `pure`, which it
 * calls instead for anything but (bytes, int) arguments and for bytes the C code cannot decode,
 * so that errors are the pure path's own. decoder.native(data, pos) runs the C code alone
 * (ValueError where the decoder would fall back): the differential tests use it.
 * Its encoder(name) returns a MessageEncoder: encoder(message) -> the bytes the generated
 * encoder would write, or None where the pure encoder must run (message_encode.c). */
#include "message.h"

#include <structmember.h>
#include <string.h>

const char *const kw_kind_names[N_KINDS] = {
    "bool", "int8", "int16", "uint16", "int32", "uint32", "int64", "float64", "uuid",
    "string", "bytes", "records", "struct", "array", "default"};

typedef struct {
    PyObject_HEAD
    PyObject *source;      /* name -> program tuple */
    PyObject *namespace;   /* the generated module's globals */
    PyObject *index;       /* name -> index in programs */
    Program **programs;
    Py_ssize_t n, cap;
} ProgramsObject;

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *owner;       /* the ProgramsObject that owns program */
    const Program *program;
    PyObject *pure, *name;
} DecoderObject;

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *owner;
    const Program *program;
    PyObject *name;
} EncoderObject;

static PyTypeObject ProgramsType, DecoderType, EncoderType;

/* ---- compiling ---- */

int kw_slot_offset(PyTypeObject *cls, const char *name, Py_ssize_t *offset) {
    PyObject *descr = PyObject_GetAttrString((PyObject *)cls, name);
    if (descr == NULL)
        return -1;
    int ok = Py_IS_TYPE(descr, &PyMemberDescr_Type);
    if (ok) {
        PyMemberDef *m = ((PyMemberDescrObject *)descr)->d_member;
        ok = m->type == T_OBJECT_EX && !(m->flags & READONLY)
             && PyType_IsSubtype(cls, ((PyMemberDescrObject *)descr)->d_common.d_type)
             && m->offset >= (Py_ssize_t)sizeof(PyObject)
             && m->offset + (Py_ssize_t)sizeof(PyObject *) <= cls->tp_basicsize;
        *offset = m->offset;
    }
    Py_DECREF(descr);
    if (!ok)
        PyErr_Format(PyExc_TypeError, "%s.%s is not a __slots__ attribute", cls->tp_name, name);
    return ok ? 0 : -1;
}

static int kind_of(PyObject *name) {
    const char *text = PyUnicode_Check(name) ? PyUnicode_AsUTF8(name) : NULL;
    for (int k = 0; text != NULL && k < N_KINDS; k++)
        if (strcmp(text, kw_kind_names[k]) == 0)
            return k;
    if (!PyErr_Occurred())
        PyErr_Format(PyExc_ValueError, "unknown field kind %R", name);
    return -1;
}

static PyObject *lookup(ProgramsObject *self, PyObject *name) {
    PyObject *value = PyDict_GetItemWithError(self->namespace, name);
    if (value == NULL && !PyErr_Occurred())
        PyErr_Format(PyExc_KeyError, "the generated module has no %R", name);
    return value;   /* borrowed */
}

static const Program *compile_named(ProgramsObject *self, PyObject *name);

/* The slots of a lazy default's instance, which the encoder compares in C with those of a value
 * read (message_encode.c, lazy_slots_differ): the offsets of its class's __slots__, the
 * _unknown_tagged_fields one apart. Left NULL (the encoder then asks Struct.__eq__) unless those
 * slots are all an instance holds and match the class's _FIELDS one for one. -1 on no memory. */
static int compile_lazy_slots(FieldOp *op) {
    PyTypeObject *cls = Py_TYPE(op->instance);
    PyObject *slots = PyObject_GetAttrString((PyObject *)cls, "__slots__");
    PyObject *fields = slots == NULL ? NULL : PyObject_GetAttrString((PyObject *)cls, "_FIELDS");
    Py_ssize_t n = fields != NULL && PyTuple_Check(slots) && PyTuple_Check(fields) ? PyTuple_GET_SIZE(slots) : 0;
    Py_ssize_t *offsets = NULL, count = 0, unknown = -1;
    if (n >= 1 && PyTuple_GET_SIZE(fields) == n - 1 && cls->tp_dictoffset == 0
        && cls->tp_basicsize == (Py_ssize_t)(sizeof(PyObject) + n * sizeof(PyObject *))) {
        if ((offsets = PyMem_Calloc(n, sizeof(Py_ssize_t))) == NULL) {
            Py_DECREF(slots);
            Py_DECREF(fields);
            PyErr_NoMemory();
            return -1;
        }
        for (Py_ssize_t i = 0; i < n; i++) {
            PyObject *name = PyTuple_GET_ITEM(slots, i);
            const char *text = PyUnicode_Check(name) ? PyUnicode_AsUTF8(name) : NULL;
            Py_ssize_t at;
            if (text == NULL || kw_slot_offset(cls, text, &at) < 0)
                break;
            if (strcmp(text, "_unknown_tagged_fields") == 0)
                unknown = at;
            else
                offsets[count++] = at;
        }
    }
    Py_XDECREF(slots);
    Py_XDECREF(fields);
    PyErr_Clear();   /* a class of another shape: the encoder asks Struct.__eq__ */
    if (unknown < 0 || count != n - 1) {
        PyMem_Free(offsets);
        return 0;
    }
    op->lazy_slots = offsets;
    op->n_lazy_slots = count;
    op->lazy_unknown = unknown;
    return 0;
}

static int compile_default(ProgramsObject *self, FieldOp *op, PyObject *mode_obj, PyObject *value) {
    const char *mode = PyUnicode_Check(mode_obj) ? PyUnicode_AsUTF8(mode_obj) : "";
    if (mode == NULL)
        return -1;
    op->dmode = D_CONST;
    if (strcmp(mode, "list") == 0) {
        op->dmode = D_LIST;
        value = Py_None;
    } else if (strcmp(mode, "lazy") == 0) {
        op->dmode = D_LAZY;
        PyObject *missing = PyUnicode_FromString("_MISSING");
        PyObject *instance = lookup(self, value);
        value = missing == NULL ? NULL : lookup(self, missing);
        Py_XDECREF(missing);
        if (instance == NULL || value == NULL)
            return -1;
        Py_INCREF(instance);
        op->instance = instance;
        if (compile_lazy_slots(op) < 0)
            return -1;
    } else if (strcmp(mode, "global") == 0 || strcmp(mode, "call") == 0) {
        op->dmode = mode[0] == 'c' ? D_CALL : D_CONST;
        if ((value = lookup(self, value)) == NULL)
            return -1;
    } else if (strcmp(mode, "const") != 0) {
        PyErr_Format(PyExc_ValueError, "unknown default mode %R", mode_obj);
        return -1;
    }
    Py_INCREF(value);
    op->value = value;
    return 0;
}

/* (slot, kind, flags[, element[, program]]) or (slot, 'default', 0, mode, value) */
static int compile_field(ProgramsObject *self, PyTypeObject *cls, PyObject *t, FieldOp *op) {
    Py_ssize_t size = PyTuple_Check(t) ? PyTuple_GET_SIZE(t) : 0;
    if (size < 3 || size > 5) {
        PyErr_Format(PyExc_ValueError, "bad field op %R", t);
        return -1;
    }
    PyObject *element = size > 3 ? PyTuple_GET_ITEM(t, 3) : Py_None;
    PyObject *program = size > 4 ? PyTuple_GET_ITEM(t, 4) : Py_None;
    int kind = kind_of(PyTuple_GET_ITEM(t, 1));
    long flags = PyLong_AsLong(PyTuple_GET_ITEM(t, 2));
    const char *slot = PyUnicode_Check(PyTuple_GET_ITEM(t, 0)) ? PyUnicode_AsUTF8(PyTuple_GET_ITEM(t, 0)) : NULL;
    if (slot == NULL && !PyErr_Occurred())
        PyErr_Format(PyExc_ValueError, "bad slot name in %R", t);
    if (slot == NULL || kind < 0 || (flags == -1 && PyErr_Occurred()) || kw_slot_offset(cls, slot, &op->offset) < 0)
        return -1;
    op->kind = (uint8_t)kind;
    op->flags = (uint8_t)flags;
    if (kind == K_DEFAULT)
        return compile_default(self, op, element, program);
    if (kind == K_ARRAY) {
        int ek = kind_of(element);
        if (ek < 0)
            return -1;
        if (ek == K_ARRAY || ek == K_DEFAULT) {
            PyErr_Format(PyExc_ValueError, "bad array element %R", element);
            return -1;
        }
        op->element = (uint8_t)ek;
    }
    if (kind == K_STRUCT || (kind == K_ARRAY && op->element == K_STRUCT)) {
        if ((op->sub = compile_named(self, program)) == NULL)
            return -1;
    }
    return 0;
}

static int compile_tags(ProgramsObject *self, Program *p, PyObject *tags) {
    p->flexible = tags != Py_None;
    if (!p->flexible)
        return 0;
    if (!PyTuple_Check(tags)) {
        PyErr_SetString(PyExc_ValueError, "tagged fields must be a tuple or None");
        return -1;
    }
    p->n_tags = PyTuple_GET_SIZE(tags);
    if ((p->tags = PyMem_Calloc(p->n_tags + 1, sizeof(TagOp))) == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < p->n_tags; i++) {
        PyObject *pair = PyTuple_GET_ITEM(tags, i);
        if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2) {
            PyErr_Format(PyExc_ValueError, "bad tagged field %R", pair);
            return -1;
        }
        p->tags[i].tag = PyLong_AsLongLong(PyTuple_GET_ITEM(pair, 0));
        if ((p->tags[i].tag == -1 && PyErr_Occurred())
            || compile_field(self, p->cls, PyTuple_GET_ITEM(pair, 1), &p->tags[i].op) < 0)
            return -1;
        for (Py_ssize_t f = 0; f < p->n_fields; f++) {
            if (p->fields[f].kind == K_DEFAULT && p->fields[f].offset == p->tags[i].op.offset) {
                p->fields[f].flags |= F_TAGGED_DEFAULT;
                p->tags[i].dflt = &p->fields[f];
            }
        }
        if (p->tags[i].dflt == NULL) {
            PyErr_Format(PyExc_ValueError, "tagged field %R has no default", pair);
            return -1;
        }
    }
    return 0;
}

/* (class name, fields, tagged) into p, which is already registered (a program may use itself). */
static int fill_program(ProgramsObject *self, Program *p, PyObject *src) {
    if (!PyTuple_Check(src) || PyTuple_GET_SIZE(src) != 3 || !PyTuple_Check(PyTuple_GET_ITEM(src, 1))) {
        PyErr_Format(PyExc_ValueError, "bad program %R", src);
        return -1;
    }
    PyObject *cls = lookup(self, PyTuple_GET_ITEM(src, 0));
    if (cls == NULL)
        return -1;
    if (!PyType_Check(cls)) {
        PyErr_Format(PyExc_TypeError, "%R is not a class", cls);
        return -1;
    }
    Py_INCREF(cls);
    p->cls = (PyTypeObject *)cls;
    if (kw_struct_adopt(p->cls) < 0)
        return -1;
    if (kw_slot_offset(p->cls, "_unknown_tagged_fields", &p->unknown_offset) < 0)
        return -1;
    PyObject *fields = PyTuple_GET_ITEM(src, 1);
    p->n_fields = PyTuple_GET_SIZE(fields);
    if ((p->fields = PyMem_Calloc(p->n_fields + 1, sizeof(FieldOp))) == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < p->n_fields; i++)
        if (compile_field(self, p->cls, PyTuple_GET_ITEM(fields, i), &p->fields[i]) < 0)
            return -1;
    return compile_tags(self, p, PyTuple_GET_ITEM(src, 2));
}

static const Program *compile_named(ProgramsObject *self, PyObject *name) {
    PyObject *at = PyDict_GetItemWithError(self->index, name);
    if (at != NULL)
        return self->programs[PyLong_AsSsize_t(at)];
    PyObject *src = PyErr_Occurred() ? NULL : PyDict_GetItemWithError(self->source, name);
    if (src == NULL) {
        if (!PyErr_Occurred())
            PyErr_Format(PyExc_KeyError, "no native program %R", name);
        return NULL;
    }
    if (self->n == self->cap) {
        Py_ssize_t cap = self->cap ? 2 * self->cap : 16;
        Program **grown = PyMem_Realloc(self->programs, cap * sizeof(Program *));
        if (grown == NULL) {
            PyErr_NoMemory();
            return NULL;
        }
        self->programs = grown;
        self->cap = cap;
    }
    Program *p = PyMem_Calloc(1, sizeof(Program));
    PyObject *index = p == NULL ? NULL : PyLong_FromSsize_t(self->n);
    if (index == NULL) {
        PyMem_Free(p);
        return (const Program *)PyErr_NoMemory();
    }
    self->programs[self->n++] = p;
    int rc = PyDict_SetItem(self->index, name, index);
    Py_DECREF(index);
    if (rc < 0 || fill_program(self, p, src) < 0)
        return NULL;
    return p;
}

static void free_ops(FieldOp *op) {
    Py_XDECREF(op->value);
    Py_XDECREF(op->instance);
    PyMem_Free(op->lazy_slots);
}

static void programs_dealloc(ProgramsObject *self) {
    for (Py_ssize_t i = 0; i < self->n; i++) {
        Program *p = self->programs[i];
        for (Py_ssize_t f = 0; p->fields != NULL && f < p->n_fields; f++)
            free_ops(&p->fields[f]);
        for (Py_ssize_t t = 0; p->tags != NULL && t < p->n_tags; t++)
            free_ops(&p->tags[t].op);
        Py_XDECREF(p->cls);
        PyMem_Free(p->fields);
        PyMem_Free(p->tags);
        PyMem_Free(p);
    }
    PyMem_Free(self->programs);
    Py_XDECREF(self->source);
    Py_XDECREF(self->namespace);
    Py_XDECREF(self->index);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *programs_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    PyObject *source, *namespace;
    if (!PyArg_ParseTuple(args, "O!O!:MessagePrograms", &PyDict_Type, &source, &PyDict_Type, &namespace))
        return NULL;
    ProgramsObject *self = (ProgramsObject *)type->tp_alloc(type, 0);
    if (self == NULL)
        return NULL;
    Py_INCREF(source);
    Py_INCREF(namespace);
    self->source = source;
    self->namespace = namespace;
    if ((self->index = PyDict_New()) == NULL) {
        Py_DECREF(self);
        return NULL;
    }
    return (PyObject *)self;
}

/* ---- decoders ---- */

static PyObject *decoder_vectorcall(PyObject *callable, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
    DecoderObject *self = (DecoderObject *)callable;
    if (PyVectorcall_NARGS(nargsf) == 2 && kwnames == NULL && PyBytes_CheckExact(args[0])
        && PyLong_CheckExact(args[1])) {
        Py_ssize_t pos = PyLong_AsSsize_t(args[1]);
        if (pos >= 0 && pos <= PyBytes_GET_SIZE(args[0])) {
            PyObject *result = kw_run_program(self->program, args[0], pos);
            if (result != NULL)
                return result;
        }
        PyErr_Clear();   /* the pure decoder words the error */
    }
    return PyObject_Vectorcall(self->pure, args, nargsf, kwnames);
}

static PyObject *decoder_native(DecoderObject *self, PyObject *args) {
    PyObject *data;
    Py_ssize_t pos;
    if (!PyArg_ParseTuple(args, "O!n:native", &PyBytes_Type, &data, &pos))
        return NULL;
    PyObject *result = NULL;
    if (pos >= 0 && pos <= PyBytes_GET_SIZE(data))
        result = kw_run_program(self->program, data, pos);
    if (result == NULL) {
        PyErr_Clear();
        PyErr_SetString(PyExc_ValueError, "the native decoder cannot decode these bytes");
    }
    return result;
}

static PyObject *programs_decoder(ProgramsObject *self, PyObject *args) {
    PyObject *name, *pure;
    if (!PyArg_ParseTuple(args, "UO:decoder", &name, &pure))
        return NULL;
    const Program *program = compile_named(self, name);
    if (program == NULL)
        return NULL;
    DecoderObject *d = PyObject_New(DecoderObject, &DecoderType);
    if (d == NULL)
        return NULL;
    d->vectorcall = decoder_vectorcall;
    d->program = program;
    Py_INCREF(self);
    Py_INCREF(pure);
    Py_INCREF(name);
    d->owner = (PyObject *)self;
    d->pure = pure;
    d->name = name;
    return (PyObject *)d;
}

static void decoder_dealloc(DecoderObject *self) {
    Py_XDECREF(self->owner);
    Py_XDECREF(self->pure);
    Py_XDECREF(self->name);
    PyObject_Free(self);
}

static PyObject *decoder_repr(DecoderObject *self) {
    return PyUnicode_FromFormat("<native decoder %U>", self->name);
}

static PyObject *encoder_vectorcall(PyObject *callable, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
    EncoderObject *self = (EncoderObject *)callable;
    if (PyVectorcall_NARGS(nargsf) != 1 || kwnames != NULL) {
        PyErr_SetString(PyExc_TypeError, "a native encoder takes one message");
        return NULL;
    }
    PyObject *result = kw_encode_program(self->program, args[0]);
    if (result == NULL) {
        PyErr_Clear();   /* the pure encoder writes it, or words the error */
        Py_RETURN_NONE;
    }
    return result;
}

static PyObject *programs_encoder(ProgramsObject *self, PyObject *args) {
    PyObject *name;
    if (!PyArg_ParseTuple(args, "U:encoder", &name))
        return NULL;
    const Program *program = compile_named(self, name);
    if (program == NULL)
        return NULL;
    EncoderObject *e = PyObject_New(EncoderObject, &EncoderType);
    if (e == NULL)
        return NULL;
    e->vectorcall = encoder_vectorcall;
    e->program = program;
    Py_INCREF(self);
    Py_INCREF(name);
    e->owner = (PyObject *)self;
    e->name = name;
    return (PyObject *)e;
}

static void encoder_dealloc(EncoderObject *self) {
    Py_XDECREF(self->owner);
    Py_XDECREF(self->name);
    PyObject_Free(self);
}

static PyObject *encoder_repr(EncoderObject *self) {
    return PyUnicode_FromFormat("<native encoder %U>", self->name);
}

const Program *kw_decoder_program(PyObject *obj) {
    return obj != NULL && Py_IS_TYPE(obj, &DecoderType) ? ((DecoderObject *)obj)->program : NULL;
}

const Program *kw_encoder_program(PyObject *obj) {
    return obj != NULL && Py_IS_TYPE(obj, &EncoderType) ? ((EncoderObject *)obj)->program : NULL;
}

static PyObject *programs_class_decode(ProgramsObject *self, PyObject *args) {
    PyObject *cls, *decoders, *fallback;
    if (!PyArg_ParseTuple(args, "OO!O:class_decode", &cls, &PyDict_Type, &decoders, &fallback))
        return NULL;
    return kw_class_decode_new(cls, decoders, fallback);
}

static PyObject *programs_method_encode(ProgramsObject *self, PyObject *fallback) {
    return kw_method_encode_new(fallback);
}

static PyMethodDef programs_methods[] = {
    {"decoder", (PyCFunction)programs_decoder, METH_VARARGS,
     "decoder(name, pure) -> the MessageDecoder of the named program, falling back to pure"},
    {"class_decode", (PyCFunction)programs_class_decode, METH_VARARGS,
     "class_decode(cls, decoders, fallback) -> cls.decode in C, with fallback(cls, ...) for the rest"},
    {"method_encode", (PyCFunction)programs_method_encode, METH_O,
     "method_encode(fallback) -> Message.encode in C, with fallback(message, version) for the rest"},
    {"encoder", (PyCFunction)programs_encoder, METH_VARARGS,
     "encoder(name) -> the MessageEncoder of the named program: bytes, or None for the pure encoder"},
    {NULL, NULL, 0, NULL},
};

static PyMethodDef decoder_methods[] = {
    {"native", (PyCFunction)decoder_native, METH_VARARGS,
     "native(data, pos) -> (message, end) from the C code alone; ValueError where it falls back"},
    {NULL, NULL, 0, NULL},
};

static PyMemberDef decoder_members[] = {
    {"pure", T_OBJECT, offsetof(DecoderObject, pure), READONLY, "the generated Python decoder"},
    {"__name__", T_OBJECT, offsetof(DecoderObject, name), READONLY, "the generated decoder's name"},
    {NULL, 0, 0, 0, NULL},
};

static PyTypeObject ProgramsType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "kafkawire._native_records.MessagePrograms",
    .tp_basicsize = sizeof(ProgramsObject),
    .tp_dealloc = (destructor)programs_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "The compiled field programs of one generated message module.",
    .tp_methods = programs_methods,
    .tp_new = programs_new,
};

static PyTypeObject DecoderType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "kafkawire._native_records.MessageDecoder",
    .tp_basicsize = sizeof(DecoderObject),
    .tp_dealloc = (destructor)decoder_dealloc,
    .tp_vectorcall_offset = offsetof(DecoderObject, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_repr = (reprfunc)decoder_repr,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_doc = "decoder(data, pos) -> (message, end): a generated decoder run in C.",
    .tp_methods = decoder_methods,
    .tp_members = decoder_members,
};

static PyTypeObject EncoderType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "kafkawire._native_records.MessageEncoder",
    .tp_basicsize = sizeof(EncoderObject),
    .tp_dealloc = (destructor)encoder_dealloc,
    .tp_vectorcall_offset = offsetof(EncoderObject, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_repr = (reprfunc)encoder_repr,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_doc = "encoder(message) -> bytes, or None where the generated encoder must run.",
};

int kw_messages_init(PyObject *module) {
    if (kw_uuid_init() < 0 || kw_encode_messages_init() < 0 || PyType_Ready(&ProgramsType) < 0
        || PyType_Ready(&DecoderType) < 0 || PyType_Ready(&EncoderType) < 0 || kw_message_methods_init() < 0)
        return -1;
    Py_INCREF(&ProgramsType);
    if (PyModule_AddObject(module, "MessagePrograms", (PyObject *)&ProgramsType) < 0) {
        Py_DECREF(&ProgramsType);
        return -1;
    }
    return 0;
}
