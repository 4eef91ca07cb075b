"""Kafka's wire protocol: primitives, the message base class, headers and framing."""
