/* The methods a generated message class gets from the native path (issue 26): cls.decode and
 * message.encode in C for their common calls, everything else handed to Message.decode and
 * Message.encode themselves (kafkawire/protocol/native_codec.py installs them). For a message
 * of a few fields the Python methods' own steps cost more than the decoding or encoding. */
#include "message.h"

#include <structmember.h>
#include <string.h>

/* cls.decode for a generated message class: the whole-buffer decode in one C call. */
typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *cls;        /* the message class */
    PyObject *decoders;   /* its _DECODERS dict, read on every call */
    PyObject *fallback;   /* Message.decode's function: called as fallback(cls, ...) */
} ClassDecodeObject;

/* message.encode for a generated message class: the native encoder's bytes in one C call. */
typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *fallback;   /* Message.encode's function: called as fallback(message, version) */
} MethodEncodeObject;

static PyTypeObject ClassDecodeType, MethodEncodeType;
static PyObject *native_encoders_name;   /* "_NATIVE_ENCODERS", interned */

/* decode(data, version, *, partial=False): a native decoder's message when data is bytes, the
 * version's decoder is native, partial is not asked for, and the message uses every byte;
 * anything else (errors above all) is Message.decode's own work, called as it always was. */
static PyObject *class_decode_vectorcall(PyObject *callable, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
    ClassDecodeObject *self = (ClassDecodeObject *)callable;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf), nkw = kwnames == NULL ? 0 : PyTuple_GET_SIZE(kwnames);
    if (nargs == 2 && nkw == 0 && PyBytes_CheckExact(args[0])) {
        PyObject *decoder = PyDict_GetItemWithError(self->decoders, args[1]);   /* borrowed */
        const Program *program = kw_decoder_program(decoder);
        if (program != NULL) {
            Py_ssize_t end = 0;
            PyObject *message = kw_read_message(program, args[0], &end);
            if (message != NULL && end == PyBytes_GET_SIZE(args[0]))
                return message;
            Py_XDECREF(message);
        }
        PyErr_Clear();
    }
    PyObject *stack[8];
    if (nargs + nkw > 7)
        return PyErr_Format(PyExc_TypeError, "decode() takes (data, version, *, partial=False)");
    stack[0] = self->cls;
    memcpy(stack + 1, args, (nargs + nkw) * sizeof(PyObject *));
    return PyObject_Vectorcall(self->fallback, stack, nargs + 1, kwnames);
}

/* encode(version) as a method: the bytes of the native encoder that the message's class has for
 * the version (its _NATIVE_ENCODERS, read on every call as Message.encode reads it) when it takes
 * the message on; every other call is Message.encode's own, which runs the pure encoder. */
static PyObject *method_encode_vectorcall(PyObject *callable, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
    MethodEncodeObject *self = (MethodEncodeObject *)callable;
    if (PyVectorcall_NARGS(nargsf) == 2 && kwnames == NULL) {
        PyObject *encoders = _PyType_Lookup(Py_TYPE(args[0]), native_encoders_name);   /* borrowed */
        PyObject *encoder = encoders != NULL && PyDict_CheckExact(encoders)
                            ? PyDict_GetItemWithError(encoders, args[1]) : NULL;
        const Program *program = kw_encoder_program(encoder);
        if (program != NULL) {
            PyObject *data = kw_encode_program(program, args[0]);
            if (data != NULL)
                return data;
        }
        PyErr_Clear();
    }
    return PyObject_Vectorcall(self->fallback, args, nargsf, kwnames);
}

/* message.encode binds as a function does (a method descriptor: no bound method is made for
 * message.encode(version)). */
static PyObject *method_encode_get(PyObject *self, PyObject *obj, PyObject *type) {
    if (obj == NULL || obj == Py_None) {
        Py_INCREF(self);
        return self;
    }
    return PyMethod_New(self, obj);
}

PyObject *kw_method_encode_new(PyObject *fallback) {
    MethodEncodeObject *e = PyObject_New(MethodEncodeObject, &MethodEncodeType);
    if (e == NULL)
        return NULL;
    e->vectorcall = method_encode_vectorcall;
    Py_INCREF(fallback);
    e->fallback = fallback;
    return (PyObject *)e;
}

static void method_encode_dealloc(MethodEncodeObject *self) {
    Py_XDECREF(self->fallback);
    PyObject_Free(self);
}

static PyObject *method_encode_doc(MethodEncodeObject *self, void *closure) {
    return PyObject_GetAttrString(self->fallback, "__doc__");
}

static PyGetSetDef method_encode_getset[] = {
    {"__doc__", (getter)method_encode_doc, NULL, NULL, NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMemberDef method_encode_members[] = {
    {"__wrapped__", T_OBJECT, offsetof(MethodEncodeObject, fallback), READONLY, "Message.encode's function"},
    {NULL, 0, 0, 0, NULL},
};

static PyTypeObject MethodEncodeType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "kafkawire._native_records.MessageMethodEncode",
    .tp_basicsize = sizeof(MethodEncodeObject),
    .tp_dealloc = (destructor)method_encode_dealloc,
    .tp_vectorcall_offset = offsetof(MethodEncodeObject, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_descr_get = method_encode_get,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL | Py_TPFLAGS_METHOD_DESCRIPTOR,
    .tp_getset = method_encode_getset,
    .tp_members = method_encode_members,
};

PyObject *kw_class_decode_new(PyObject *cls, PyObject *decoders, PyObject *fallback) {
    ClassDecodeObject *d = PyObject_New(ClassDecodeObject, &ClassDecodeType);
    if (d == NULL)
        return NULL;
    d->vectorcall = class_decode_vectorcall;
    Py_INCREF(cls);
    Py_INCREF(decoders);
    Py_INCREF(fallback);
    d->cls = cls;
    d->decoders = decoders;
    d->fallback = fallback;
    return (PyObject *)d;
}

static void class_decode_dealloc(ClassDecodeObject *self) {
    Py_XDECREF(self->cls);
    Py_XDECREF(self->decoders);
    Py_XDECREF(self->fallback);
    PyObject_Free(self);
}

static PyObject *class_decode_doc(ClassDecodeObject *self, void *closure) {
    return PyObject_GetAttrString(self->fallback, "__doc__");
}

static PyGetSetDef class_decode_getset[] = {
    {"__doc__", (getter)class_decode_doc, NULL, NULL, NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMemberDef class_decode_members[] = {
    {"__wrapped__", T_OBJECT, offsetof(ClassDecodeObject, fallback), READONLY, "Message.decode's function"},
    {NULL, 0, 0, 0, NULL},
};

static PyTypeObject ClassDecodeType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "kafkawire._native_records.MessageClassDecode",
    .tp_basicsize = sizeof(ClassDecodeObject),
    .tp_dealloc = (destructor)class_decode_dealloc,
    .tp_vectorcall_offset = offsetof(ClassDecodeObject, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_getset = class_decode_getset,
    .tp_members = class_decode_members,
};

int kw_message_methods_init(void) {
    if (PyType_Ready(&ClassDecodeType) < 0 || PyType_Ready(&MethodEncodeType) < 0)
        return -1;
    native_encoders_name = PyUnicode_InternFromString("_NATIVE_ENCODERS");
    return native_encoders_name == NULL ? -1 : 0;
}
