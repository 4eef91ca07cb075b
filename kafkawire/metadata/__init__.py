"""The __cluster_metadata log: framed metadata records and (later) the image they build."""
from .frame import MetadataRecordError, decode_metadata_record, encode_metadata_record

__all__ = ["MetadataRecordError", "decode_metadata_record", "encode_metadata_record"]
