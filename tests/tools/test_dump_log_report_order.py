"""dump-log's end-of-run reports come in the order of the Java HashMap DumpLogSegments keeps
them in, which it fills with computeIfAbsent (keyed by the file's absolute path), not put:
a new key goes to the FRONT of its bucket, and the table doubles only before an insertion
into a map already past 0.75 of its capacity (13 keys stay in 16 buckets; put makes 32) or
when a bucket reaches 8 keys in a table under 64 (treeifyBin). Before, the reports followed
the put order. Hand-derived expectations; tests/interop/test_dump_log_vs_kafka.py runs Kafka's
DumpLogSegments on the same files."""
from kafkawire.controller.java_order import (computed_hashmap_order, hashmap_order, int_hash,
                                             string_computed_hashmap_order, string_hash)

from dumplog_testlib import (PLUS_1_TO_8, PLUS_2_TO_THE_20, SAME_HASH, TREEIFYING_DIRECTORIES, dump, gapped_logs,
                             non_consecutive_files)

SUFFIX = "/00000000000000000000.log"


def computed(keys):
    return computed_hashmap_order(keys, int_hash)


def test_thirteen_keys_stay_in_sixteen_buckets_each_new_key_at_the_front_of_its_bucket():
    keys = [1, 17, 33, 2, 18, 3, 4, 5, 6, 7, 8, 9, 10]      # 1, 17, 33 share bucket 1 of 16; 2, 18 bucket 2
    assert computed(keys) == [33, 17, 1, 18, 2, 3, 4, 5, 6, 7, 8, 9, 10]
    assert hashmap_order(keys, int_hash, 32) == [1, 33, 2, 3, 4, 5, 6, 7, 8, 9, 10, 17, 18]   # put's


def test_the_fourteenth_key_doubles_the_table_first_and_the_split_keeps_each_chains_order():
    # chain of bucket 1 [33, 17, 1] splits into [33, 1] (bucket 1) and [17] (bucket 17)
    assert computed([1, 17, 33, 2, 18, 3, 4, 5, 6, 7, 8, 9, 10, 11]) == \
        [33, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 17, 18]


def test_an_eighth_key_in_one_bucket_doubles_a_table_under_64():
    keys = [0, 16, 32, 48, 64, 80, 96, 112]                  # all bucket 0 of 16
    assert computed(keys[:7]) == [96, 80, 64, 48, 32, 16, 0]
    # [112, 96, ..., 0] splits on bit 4: 96, 64, 32, 0 stay, 112, 80, 48, 16 go to bucket 16
    assert computed(keys) == [96, 64, 32, 0, 112, 80, 48, 16]


def test_the_directory_names_collide_as_the_test_files_need_whatever_the_parent():
    for parent in ("/tmp/a", "/var/tmp/pytest-of-someone/pytest-7/test_x0"):
        def h(name):
            return string_hash(f"{parent}/{name}{SUFFIX}")
        base = h(SAME_HASH[0])
        assert [(h(d) - base) % 2**32 for d in SAME_HASH] == [0] * 4
        assert [(h(d) - base) % 2**32 for d in PLUS_2_TO_THE_20] == [1 << 20] * 4
        assert [(h(d) - base) % 2**32 for d in PLUS_1_TO_8] == list(range(1, 9))


def reports(tmp_path, capsys, directories=None):
    """(the segments' paths in command-line order, the files of the reports as printed)."""
    paths = [str(p) for p in (gapped_logs(tmp_path) if directories is None else gapped_logs(tmp_path, directories))]
    status, _, err = dump(capsys, "--deep-iteration", "--files", ",".join(paths))
    assert status == 0
    printed = non_consecutive_files(err)
    assert sorted(printed) == sorted(paths)
    assert printed == string_computed_hashmap_order(paths)
    return paths, printed


def test_non_consecutive_reports_of_thirteen_files_come_in_kafkas_hashmap_order(tmp_path, capsys):
    paths, printed = reports(tmp_path, capsys)
    # The five files of one bucket of 16, contiguous, the last given first; the eight others
    # are each alone in a bucket (bits 0-3 of the hash differ).
    shared = [p for p in paths if p.split("/")[-2] in SAME_HASH + PLUS_2_TO_THE_20]
    start = printed.index(shared[-1])
    assert printed[start:start + 5] == shared[::-1]


def test_an_eighth_file_in_one_bucket_splits_the_reports_of_that_bucket(tmp_path, capsys):
    """The eight files of one bucket of 16 print as two runs of four (distance 0, distance 2**20
    from the first), each run the last given first: treeifyBin doubled the table."""
    paths, printed = reports(tmp_path, capsys, TREEIFYING_DIRECTORIES)
    for group in (SAME_HASH, PLUS_2_TO_THE_20):
        run = [p for p in paths if p.split("/")[-2] in group][::-1]
        start = printed.index(run[0])
        assert printed[start:start + 4] == run
