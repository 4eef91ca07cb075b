"""What a Kafka 4.3.1 broker advertises in ApiVersions on its broker listener, and the one table of
the differences kafkawire's broker keeps on purpose (issue 29). Shared by the Java-free pin
(tests/broker/test_api_versions_features.py), which compares our broker with these tables, and
the judge (tests/interop/test_api_versions_vs_kafka.py test_on_a_kafka_broker), which compares both with a live
Kafka 4.3.1 broker. docs/broker.md ("What it serves", "What is not done yet") lists the same
ranges and gaps; test_the_docs_list_the_advertised_table keeps them consistent."""
from __future__ import annotations

__all__ = ["KAFKA_BROKER_APIS", "KAFKA_BROKER_SUPPORTED_FEATURES", "NOT_SERVED", "SERVED_FROM",
           "expected_kafkawire_apis"]

# API key -> (min, max) of a Kafka 4.3.1 broker (combined with a Kafka 4.3.1 controller, default
# settings, no unstable versions), read from its ApiVersions v4 answer. Produce's 0 is Kafka's
# KAFKA-18659 workaround: v0-2 are advertised for librdkafka but refused.
KAFKA_BROKER_APIS: dict[int, tuple[int, int]] = {
    0: (0, 13), 1: (4, 18), 2: (1, 11), 3: (0, 13), 8: (2, 10), 9: (1, 10), 10: (0, 6), 11: (0, 9), 12: (0, 4),
    13: (0, 5), 14: (0, 5), 15: (0, 6), 16: (0, 5), 17: (0, 1), 18: (0, 4), 19: (2, 7), 20: (1, 6), 21: (0, 2),
    22: (0, 5), 23: (2, 4), 24: (0, 5), 25: (0, 4), 26: (0, 5), 27: (1, 2), 28: (0, 5), 29: (1, 3), 30: (1, 3),
    31: (1, 3), 32: (1, 4), 33: (0, 2), 34: (1, 2), 35: (1, 5), 36: (0, 2), 37: (0, 3), 38: (1, 3), 39: (1, 2),
    40: (1, 2), 41: (1, 3), 42: (0, 2), 43: (0, 2), 44: (0, 1), 45: (0, 1), 46: (0, 0), 47: (0, 0), 48: (0, 1),
    49: (0, 1), 50: (0, 0), 51: (0, 0), 55: (0, 2), 57: (0, 2), 60: (0, 2), 61: (0, 0), 64: (0, 0), 65: (0, 0),
    66: (0, 2), 68: (0, 1), 69: (0, 1), 74: (0, 1), 75: (0, 0), 76: (1, 1), 77: (1, 1), 78: (1, 2), 79: (1, 2),
    80: (0, 1), 81: (0, 0), 83: (0, 0), 84: (0, 0), 85: (0, 1), 86: (0, 0), 87: (0, 1), 88: (0, 0), 89: (0, 0),
    90: (0, 1), 91: (0, 0), 92: (0, 0),
}

# BrokerFeatures.defaultSupportedFeatures of Kafka 4.3.1 (ApiVersions v4's SupportedFeatures; v3
# leaves out those with a minimum of 0): metadata.version from 3.3-IV3 to the latest production
# level, and each production feature whose latest production level is above 0.
KAFKA_BROKER_SUPPORTED_FEATURES = {
    "metadata.version": (7, 30), "kraft.version": (0, 1), "transaction.version": (0, 2), "group.version": (0, 1),
    "eligible.leader.replicas.version": (0, 1), "share.version": (0, 1), "streams.version": (0, 1)}

# API key -> the lowest version served where it is above the lowest advertised: Kafka's broker
# refuses Produce v0-2 (KIP-896) though it lists v0 (KAFKA-18659), and so does ours.
SERVED_FROM = {0: 3}

# The deliberate gaps: API key -> why kafkawire's broker does not advertise it. Every other
# difference from KAFKA_BROKER_APIS is a bug. (None now: the share coordinator's state APIs,
# 83-87, are served since issue 29's share coordinator.)
NOT_SERVED: dict[int, str] = {}


def expected_kafkawire_apis() -> dict[int, tuple[int, int]]:
    """What kafkawire's broker listener must advertise: Kafka's table without the gaps."""
    return {key: versions for key, versions in KAFKA_BROKER_APIS.items() if key not in NOT_SERVED}
