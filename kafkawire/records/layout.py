"""What every entry of a Kafka log starts with, whatever its magic: the base offset (int64) and
the size of the rest (int32). The one definition the readers share."""

LOG_OVERHEAD = 12          # Kafka's Records.LOG_OVERHEAD: offset (8) + size (4)
