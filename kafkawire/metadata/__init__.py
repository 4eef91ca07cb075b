"""The __cluster_metadata log: framed metadata records, the metadata image they build and its
replay (kafka-metadata-shell's view).

    from kafkawire.metadata import read_metadata_image, read_metadata_records
    replay = read_metadata_image("/var/lib/kafka/meta/__cluster_metadata-0")   # read-only
    replay.image.topics, replay.problems
    for offset, record in read_metadata_records(".../00000000000000012345-0000000007.checkpoint"):
        record.type_name, record.message

Modules: ``frame`` (the record frame), ``image`` (MetadataImage), ``replay`` (snapshot + log into
an image), ``files`` (the two readers above), ``shell`` (metadata-shell's commands). The reading
names are imported on first use.
"""
from kafkawire._lazy import lazy_exports

from .frame import MetadataRecord, MetadataRecordError, decode_metadata_record, encode_metadata_record

__all__ = ["MetadataRecord", "MetadataRecordError", "decode_metadata_record", "encode_metadata_record",
           "read_metadata_records", "read_metadata_image", "MetadataImage", "Replay", "replay_files",
           "replay_directory"]

__getattr__, __dir__ = lazy_exports(__name__, {
    "read_metadata_records": ".files:read_metadata_records",
    "read_metadata_image": ".files:read_metadata_image",
    "MetadataImage": ".image:MetadataImage",
    "Replay": ".replay:Replay",
    "replay_files": ".replay:replay_files",
    "replay_directory": ".replay:replay_directory",
})
