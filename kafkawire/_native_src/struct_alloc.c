/* Making and freeing instances of the generated message classes (issue 26).
 *
 * A decoded small message is a handful of objects, and under perf making and freeing them was
 * most of its decode time: Python's generic deallocator for classes written in Python
 * (subtype_dealloc) walks the class's bases and their member tables, checks for finalizers,
 * weak references and a __dict__ on every instance, and the memory goes back to the allocator,
 * to be asked for again by the next decode. The generated classes have none of that: __slots__
 * only (every slot an object reference), bases with empty __slots__, no __del__.
 *
 * So a generated class the native decoder runs a program for is "adopted" (kw_struct_adopt) when
 * its layout is exactly that; its tp_dealloc becomes struct_dealloc, which clears the slots, and
 * keeps the memory of an instance of exactly that class in a small free list per instance size,
 * from which kw_struct_new makes the decoder's next instances (as lists and tuples keep theirs).
 * Everything visible stays as it was: the instance's type, slots, equality, gc tracking; a
 * subclass (its own deallocator runs first, then this one for the generated part), a __del__
 * added later (run as Python runs it, and the memory is then freed, not kept). */
#include "message.h"

#include <structmember.h>

/* Instances up to this many slots are kept; each size keeps at most FREE_MAX (enough for the
 * records of a typical batch, which are freed together and made again by the next). The generated
 * classes have 1 to about 20 slots. */
#define FREE_SLOTS 32
#define FREE_MAX 128

static PyObject *free_list[FREE_SLOTS + 1][FREE_MAX];
static int n_free[FREE_SLOTS + 1];
static destructor generic_dealloc;   /* the deallocator Python gave the classes (subtype_dealloc) */

static inline Py_ssize_t slot_count(PyTypeObject *cls) {
    return (cls->tp_basicsize - (Py_ssize_t)sizeof(PyObject)) / (Py_ssize_t)sizeof(PyObject *);
}

static void struct_dealloc(PyObject *self);

/* The adopted class whose slots self has: its own class, or the nearest adopted base of a
 * subclass (whose own deallocator cleared what it added, then called this one). */
static PyTypeObject *adopted_class(PyObject *self) {
    PyTypeObject *t = Py_TYPE(self);
    while (t->tp_dealloc != struct_dealloc)
        t = t->tp_base;
    return t;
}

static void struct_dealloc(PyObject *self) {
    PyTypeObject *type = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    Py_TRASHCAN_BEGIN(self, struct_dealloc)
    PyTypeObject *layout = adopted_class(self);
    /* A __del__ set on the class after it was adopted (a subclass's deallocator ran its own). */
    if (type == layout && type->tp_finalize != NULL) {
        PyObject_GC_Track(self);
        if (PyObject_CallFinalizerFromDealloc(self) < 0)
            goto done;                 /* resurrected */
        PyObject_GC_UnTrack(self);
    }
    Py_ssize_t n = slot_count(layout);
    PyObject **slots = (PyObject **)((char *)self + sizeof(PyObject));
    for (Py_ssize_t i = 0; i < n; i++)
        Py_CLEAR(slots[i]);
    if (type == layout && type->tp_finalize == NULL && n <= FREE_SLOTS && n_free[n] < FREE_MAX)
        free_list[n][n_free[n]++] = self;  /* untracked, every slot NULL */
    else
        type->tp_free(self);
    Py_DECREF(type);   /* a heap type: its instances hold a reference to it */
done:
    Py_TRASHCAN_END
}

/* A new instance of cls with every slot NULL, gc tracked, as cls->tp_alloc(cls, 0) makes it. */
PyObject *kw_struct_new(PyTypeObject *cls) {
    if (cls->tp_dealloc == struct_dealloc) {
        Py_ssize_t n = slot_count(cls);
        if (n <= FREE_SLOTS && n_free[n] > 0) {
            PyObject *obj = free_list[n][--n_free[n]];
            PyObject_Init(obj, cls);   /* its type (a reference to it) and a reference count of 1 */
            PyObject_GC_Track(obj);
            return obj;
        }
    }
    return cls->tp_alloc(cls, 0);
}

/* Every byte after the object header is a slot of cls itself (an object reference). */
static int slots_fill_layout(PyTypeObject *cls) {
    Py_ssize_t n = slot_count(cls), seen = 0;
    if (cls->tp_itemsize != 0 || cls->tp_basicsize != (Py_ssize_t)(sizeof(PyObject) + n * sizeof(PyObject *))
        || cls->tp_members == NULL)
        return 0;
    for (PyMemberDef *m = cls->tp_members; m->name != NULL; m++) {
        if (m->type != T_OBJECT_EX || m->offset < (Py_ssize_t)sizeof(PyObject) || m->offset >= cls->tp_basicsize
            || (m->offset - (Py_ssize_t)sizeof(PyObject)) % (Py_ssize_t)sizeof(PyObject *) != 0)
            return 0;
        seen++;
    }
    return seen == n;
}

int kw_struct_adopt(PyTypeObject *cls) {
    if (cls->tp_dealloc == struct_dealloc)
        return 0;
    PyTypeObject *base = cls->tp_base;
    int plain = (cls->tp_flags & Py_TPFLAGS_HEAPTYPE) && (cls->tp_flags & Py_TPFLAGS_HAVE_GC)
                && base != NULL && base->tp_basicsize == (Py_ssize_t)sizeof(PyObject) && base->tp_itemsize == 0
                && cls->tp_dictoffset == 0 && cls->tp_weaklistoffset == 0 && cls->tp_finalize == NULL
                && cls->tp_del == NULL && cls->tp_free == PyObject_GC_Del && slots_fill_layout(cls);
    if (!plain)
        return 0;
    if (generic_dealloc == NULL)
        generic_dealloc = cls->tp_dealloc;
    if (cls->tp_dealloc != generic_dealloc)   /* a deallocator of its own: left alone */
        return 0;
    cls->tp_dealloc = struct_dealloc;
    return 0;
}
