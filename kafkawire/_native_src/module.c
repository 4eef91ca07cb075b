/* kafkawire._native_records: the native record-batch path (issue 26). The pure-Python code
 * (kafkawire/records/record_decoding.py, builder.py) is its oracle; see parse.c (the record
 * parser), decode.c (Record objects), encode.c (RecordBatchBuilder.append), columns.c and
 * columns_fast.c (Arrow buffers; buf_pool.c keeps big ones for reuse), dump_json.c and
 * dump_lines.c (dump-log's text), capture.c and reassemble.c (`kafkawire pcap`'s packets and TCP streams). */
#include "dump_text.h"

/* untrack_acyclic: a value the garbage collector need not walk (issue 28: at 1M partitions the
 * controller's PartitionRegistrations were nearly all a full collection walked). An object can
 * be part of a reference cycle only through what it refers to; one that refers only to atomic
 * values (exact ints, bool, str, bytes, float, None), exact tuples of them and its own class can
 * be in no cycle as long as it keeps those, which a frozen, slotted class does, and is untracked
 * as CPython untracks such tuples and dicts itself. Exact types only: a subclass's instance (an
 * int subclass's too) may carry a __dict__, and so a cycle back through the object, which
 * untracked would hide that cycle from the collector. Only instances of a Python class made
 * directly on object with __slots__ and no __dict__ (a container such as a list, empty now, may
 * hold anything later), and without a finalizer. */
static int kw_atomic(PyObject *v) {
    return v == Py_None || PyLong_CheckExact(v) || PyBool_Check(v) || PyUnicode_CheckExact(v)
           || PyBytes_CheckExact(v) || PyFloat_CheckExact(v);
}

static int kw_atomic_referent(PyObject *v, void *owner) {
    if (v == NULL || kw_atomic(v) || v == (PyObject *)Py_TYPE((PyObject *)owner))
        return 0;
    if (!PyTuple_CheckExact(v))
        return 1;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(v); i++)
        if (!kw_atomic(PyTuple_GET_ITEM(v, i)))
            return 1;
    return 0;
}

static PyObject *kw_untrack_acyclic(PyObject *module, PyObject *obj) {
    PyTypeObject *type = Py_TYPE(obj);
    if (!(type->tp_flags & Py_TPFLAGS_HEAPTYPE) || type->tp_base != &PyBaseObject_Type || type->tp_dictoffset != 0
        || !PyObject_IS_GC(obj) || !PyObject_GC_IsTracked(obj) || type->tp_traverse == NULL
        || type->tp_finalize != NULL || type->tp_del != NULL
        || type->tp_traverse(obj, kw_atomic_referent, obj) != 0)
        Py_RETURN_FALSE;
    PyObject_GC_UnTrack(obj);
    Py_RETURN_TRUE;
}

static PyMethodDef methods[] = {
    {"untrack_acyclic", kw_untrack_acyclic, METH_O,
     "untrack_acyclic(obj) -> whether obj was untracked by the garbage collector: only an instance of a slotted "
     "class made on object, without a finalizer, that refers to nothing but exact ints, bool, str, bytes, float, "
     "None, exact tuples of those and its class"},
    {"decode_records", (PyCFunction)(void (*)(void))kw_decode_records, METH_FASTCALL,
     "decode_records(data, start, end, count, base_offset, base_timestamp, log_append_time, batch, "
     "record_cls) -> (records, None | (reason, position))"},
    {"decode_values", (PyCFunction)(void (*)(void))kw_decode_values, METH_FASTCALL,
     "decode_values(data, start, end, count, base_offset, base_timestamp, log_append_time) -> (values, None | (reason, position)): decode_records' walk, each record as its value's bytes "
     "(None: null)"},
    {"check_records", (PyCFunction)(void (*)(void))kw_check_records, METH_FASTCALL,
     "check_records(data, start, end, count, base_offset, base_timestamp, log_append_time) -> None | "
     "(reason, position): decode_records' verdict on the records, without making them (parse.c)"},
    {"scan_packets", (PyCFunction)(void (*)(void))kw_scan_packets, METH_FASTCALL,
     "scan_packets(data, pos, count, first_time, form, link, divisor, tsoffset, segment_cls, endpoints, segments) "
     "-> (pos, count, first_time): `kafkawire pcap`'s plain packets (capture.c)"},
    {"reassemble_direction", (PyCFunction)(void (*)(void))kw_reassemble_direction, METH_FASTCALL,
     "reassemble_direction(segments, run_cls, segment_cls) -> None | (runs, gaps, retransmitted, saw_syn, syn_ack): "
     "one TCP direction's runs, as kafkawire/capture/streams.py makes them (reassemble.c)"},
    {"int64_bounds", kw_int64_bounds, METH_O, "int64_bounds(column) -> (min, max) of native int64s, None if empty."},
    {"crc32c", kw_crc32c_py, METH_O, "crc32c(data) -> the CRC-32C of the bytes (as the batch header stores it)."},
    {"dump_records", (PyCFunction)(void (*)(void))kw_dump_records, METH_FASTCALL,
     "dump_records(data, start, end, count, base_offset, base_timestamp, log_append_time, previous_offset, "
     "timestamp_name, base_sequence, mode, metadata_table, batch_buffer, batch_position) -> None | (text, "
     "last_offset): dump-log's batch and record lines (dump_lines.c)"},
    {"dump_run", (PyCFunction)(void (*)(void))kw_dump_run, METH_FASTCALL,
     "dump_run(data, position, previous_offset, mode, metadata_table, max_chars) -> (text, last_offset, position, "
     "more): dump-log's lines of the batches from position on, up to one for the pure loop (dump_lines.c)"},
    {"repeat_binary", (PyCFunction)(void (*)(void))kw_repeat_binary, METH_FASTCALL,
     "repeat_binary(value, n) -> (offsets, data): the buffers of an Arrow binary column of n copies of value"},
    {"decompress", (PyCFunction)(void (*)(void))kw_decompress_py, METH_FASTCALL,
     "decompress(codec, data, max_size, magic) -> bytes, or None when the pure codec must decide (decompress.c)"},
    {"build_compressed", (PyCFunction)(void (*)(void))kw_build_compressed_py, METH_FASTCALL,
     "build_compressed(codec, level, records, base_offset, partition_leader_epoch, post) -> a compressed v2 "
     "batch's bytes, or None when the pure encoder must write it (compress.c)"},
    {"use_codecs", kw_use_codecs, METH_O,
     "use_codecs(ids) -> the ids on before: only these compiled-in codecs decompress in C (benchmarks, tests)"},
    {"set_pure_append", kw_set_pure_append, METH_O, "The pure append RecordWriter.append hands odd calls to."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "kafkawire._native_records",
    "The v2 record loop in C (issue 26); the pure-Python code is its oracle.", -1, methods,
};

/* The digest of the sources this was built from (setup.py; kafkawire._native_digest): kafkawire
 * refuses an extension built from other sources than the ones beside it. */
#ifndef KW_SOURCE_DIGEST
#define KW_SOURCE_DIGEST ""
#endif

PyMODINIT_FUNC PyInit__native_records(void) {
    PyObject *m = PyModule_Create(&module_def);
    if (m == NULL)
        return NULL;
    kw_crc32c_init();
    if (kw_decode_init(m) < 0 || kw_encode_init(m) < 0 || kw_columns_init(m) < 0
        || kw_messages_init(m) < 0 || PyType_Ready(&kw_JsonFormatType) < 0
        || PyModule_AddObjectRef(m, "JsonFormat", (PyObject *)&kw_JsonFormatType) < 0
        || kw_decompress_init(m) < 0
        || PyModule_AddStringConstant(m, "SOURCE_DIGEST", KW_SOURCE_DIGEST) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
