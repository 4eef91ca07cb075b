"""The generated classes' instances under the native path's own deallocator and free list
(kafkawire/_native_src/struct_alloc.c, issue 26): freeing and reusing their memory changes
nothing a user can see. Every slot's value is released when the instance goes, instances that
reuse memory are new, independent objects, the class's reference count stays balanced, and what
Python's generic deallocator did for subclasses, a __del__ added later and reference cycles is
still done."""
from __future__ import annotations

import gc
import sys
import weakref

import pytest

from kafkawire.messages.api_versions_response import ApiVersion, ApiVersionsResponse
from kafkawire.protocol import native_codec

pytestmark = pytest.mark.skipif(not native_codec.native_decoders_enabled(),
                                reason="the C extension is not built, or KAFKAWIRE_PURE=1")

DATA = ApiVersionsResponse(api_keys=[ApiVersion(api_key=1, min_version=0, max_version=17)]).encode(3)


class Value:
    """A slot value whose release a weak reference shows."""


def decoded() -> ApiVersionsResponse:
    return ApiVersionsResponse.decode(DATA, 3)


def test_instances_made_from_freed_memory_are_new_independent_equal_objects():
    first = decoded()
    first.api_keys.append(ApiVersion(api_key=99))
    first.api_keys[0].max_version = 5
    kept = [decoded() for _ in range(200)]
    del first
    for _ in range(3):
        again = [decoded() for _ in range(200)]   # much of it from the memory just freed
        assert all(m == kept[0] and m is not kept[0] for m in again)
        assert len({id(m.api_keys) for m in again}) == len(again)
        again[0].api_keys.append(ApiVersion())
        assert len(again[1].api_keys) == 1 and kept[0].api_keys[0].max_version == 17
        del again


def test_slot_values_are_released_and_the_class_reference_count_balances():
    before = sys.getrefcount(ApiVersionsResponse), sys.getrefcount(ApiVersion)
    value = Value()
    gone = weakref.ref(value)
    message = decoded()
    message.error_code = value
    del value, message
    assert gone() is None
    for _ in range(500):
        decoded()
    assert (sys.getrefcount(ApiVersionsResponse), sys.getrefcount(ApiVersion)) == before


def test_a_subclass_instance_releases_its_own_and_the_generated_slots():
    class Annotated(ApiVersion):   # a __dict__ and weak references of its own
        pass

    decoded()   # the classes are adopted once the decoder has run
    own, generated = Value(), Value()
    gone = weakref.ref(own), weakref.ref(generated)
    obj = Annotated(api_key=3)
    obj.note, obj.max_version = own, generated
    obj_ref = weakref.ref(obj)
    del own, generated, obj
    assert obj_ref() is None and gone[0]() is None and gone[1]() is None


def test_a_del_added_to_a_generated_class_runs_and_may_resurrect():
    decoded()
    saved = []
    ApiVersion.__del__ = lambda self: saved.append(self)
    try:
        value = Value()
        obj = ApiVersion(api_key=7)
        obj.min_version = value
        del obj
        assert len(saved) == 1 and saved[0].api_key == 7 and saved[0].min_version is value
    finally:
        del ApiVersion.__del__
    saved.clear()
    del value
    assert decoded().api_keys[0].api_key == 1


def test_reference_cycles_through_instances_are_collected():
    value = Value()
    gone = weakref.ref(value)
    message = decoded()
    message.api_keys.append(message)
    message.error_code = value
    del message, value
    gc.collect()
    assert gone() is None


def test_a_subclass_del_runs_once():
    decoded()
    calls = []

    class Noted(ApiVersion):
        __slots__ = ()

        def __del__(self):
            calls.append(self.api_key)

    Noted(api_key=4)
    assert calls == [4]
