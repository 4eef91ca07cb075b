/* The methods a generated message class gets from the native path (issue 26): cls.decode and
 * message.encode in C for their common calls, everything else handed to Message.decode and
 * Message.encode themselves (kafkawire/protocol/native_codec.py installs them). For a message
 * of a few fields the Python methods' own steps cost more than the decoding or encoding. */
#include "message.h"

#include <structmember.h>
#include <string.h>

/* cls.decode or message.encode of a generated message class: one layout for both. */
typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *fallback;   /* Message.decode's function (called as fallback(cls, ...)), or Message.encode's */
    PyObject *cls;        /* decode: the message class */
    PyObject *decoders;   /* decode: its _DECODERS dict, read on every call */
    /* decode: the last (version, decoder) found in decoders, both borrowed from it, valid while
     * the dict's version tag (changed by every change to the dict) is cached_tag. */
    uint64_t cached_tag;
    PyObject *cached_version, *cached_decoder;
} MethodObject;

/* decoders[version] (borrowed), from the cache when the same version object is asked again of
 * an unchanged dict (the dict look-up was a tenth of a small message's decode). Python 3.12
 * deprecated the dict's version tag: there every call looks up. */
static PyObject *find_decoder(MethodObject *self, PyObject *version) {
#if PY_VERSION_HEX < 0x030C0000
    uint64_t tag = ((PyDictObject *)self->decoders)->ma_version_tag;
    if (version == self->cached_version && tag == self->cached_tag)
        return self->cached_decoder;
    PyObject *decoder = PyDict_GetItemWithError(self->decoders, version);
    if (decoder != NULL) {
        self->cached_tag = tag;
        self->cached_version = version;
        self->cached_decoder = decoder;
    }
    return decoder;
#else
    return PyDict_GetItemWithError(self->decoders, version);
#endif
}

static PyTypeObject ClassDecodeType, MethodEncodeType;
static PyObject *native_encoders_name;   /* "_NATIVE_ENCODERS", interned */

/* decode(data, version, *, partial=False): a native decoder's message when data is bytes, the
 * version's decoder is native, partial is not asked for, and the message uses every byte;
 * anything else (errors above all) is Message.decode's own work, called as it always was. */
static PyObject *class_decode_vectorcall(PyObject *callable, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
    MethodObject *self = (MethodObject *)callable;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf), nkw = kwnames == NULL ? 0 : PyTuple_GET_SIZE(kwnames);
    if (nargs == 2 && nkw == 0 && PyBytes_CheckExact(args[0])) {
        PyObject *decoder = find_decoder(self, args[1]);   /* borrowed */
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
    MethodObject *self = (MethodObject *)callable;
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

static PyObject *method_new(PyTypeObject *type, vectorcallfunc call, PyObject *fallback, PyObject *cls,
                            PyObject *decoders) {
    MethodObject *m = PyObject_New(MethodObject, type);
    if (m == NULL)
        return NULL;
    m->vectorcall = call;
    Py_INCREF(fallback);
    Py_XINCREF(cls);
    Py_XINCREF(decoders);
    m->fallback = fallback;
    m->cls = cls;
    m->decoders = decoders;
    m->cached_tag = 0;
    m->cached_version = m->cached_decoder = NULL;
    return (PyObject *)m;
}

PyObject *kw_class_decode_new(PyObject *cls, PyObject *decoders, PyObject *fallback) {
    return method_new(&ClassDecodeType, class_decode_vectorcall, fallback, cls, decoders);
}

PyObject *kw_method_encode_new(PyObject *fallback) {
    return method_new(&MethodEncodeType, method_encode_vectorcall, fallback, NULL, NULL);
}

static void method_dealloc(MethodObject *self) {
    Py_XDECREF(self->fallback);
    Py_XDECREF(self->cls);
    Py_XDECREF(self->decoders);
    PyObject_Free(self);
}

static PyObject *method_doc(MethodObject *self, void *closure) {
    return PyObject_GetAttrString(self->fallback, "__doc__");
}

static PyGetSetDef method_getset[] = {
    {"__doc__", (getter)method_doc, NULL, NULL, NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMemberDef method_members[] = {
    {"__wrapped__", T_OBJECT, offsetof(MethodObject, fallback), READONLY, "Message.decode's or Message.encode's function"},
    {NULL, 0, 0, 0, NULL},
};

static PyTypeObject ClassDecodeType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "kafkawire._native_records.MessageClassDecode",
    .tp_basicsize = sizeof(MethodObject),
    .tp_dealloc = (destructor)method_dealloc,
    .tp_vectorcall_offset = offsetof(MethodObject, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_getset = method_getset,
    .tp_members = method_members,
};

/* The same, binding to the message as a function does. */
static PyTypeObject MethodEncodeType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "kafkawire._native_records.MessageMethodEncode",
    .tp_basicsize = sizeof(MethodObject),
    .tp_dealloc = (destructor)method_dealloc,
    .tp_vectorcall_offset = offsetof(MethodObject, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_descr_get = method_encode_get,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL | Py_TPFLAGS_METHOD_DESCRIPTOR,
    .tp_getset = method_getset,
    .tp_members = method_members,
};

int kw_message_methods_init(void) {
    if (PyType_Ready(&ClassDecodeType) < 0 || PyType_Ready(&MethodEncodeType) < 0)
        return -1;
    native_encoders_name = PyUnicode_InternFromString("_NATIVE_ENCODERS");
    return native_encoders_name == NULL ? -1 : 0;
}
