"""The code generator: reads Kafka's message JSON schemas (``schemas/``) and writes the Python
codecs of ``kafkawire/messages`` (``kafkawire codegen``). Nothing at run time imports it.

Modules: ``model`` (the dialect and Kafka's validation rules), ``emit`` with ``emit_decode``,
``emit_encode`` and ``emit_support`` (the generated code), ``generate`` (a package per schema
directory), ``union`` (our schemas as the union of Kafka 3.9's and 4.x's). Imported on first use.
"""
from kafkawire._lazy import lazy_exports

__all__ = ["find_schemas", "stale_files", "write_package", "main"]

__getattr__, __dir__ = lazy_exports(__name__, {
    "find_schemas": ".generate:find_schemas",
    "stale_files": ".generate:stale_files",
    "write_package": ".generate:write_package",
    "main": ".cli:main",
})
