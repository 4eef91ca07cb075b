"""The inter-broker listener of a node's server.properties and the listener rules of Kafka 4.3.1's
KafkaConfig.validateValues on it, with Kafka's messages (kafkawire.net.config calls them when it
parses the file).

    name = inter_broker_listener_name(config, raw)      # AbstractKafkaConfig.interBrokerListenerName
    validate_broker_listeners(config, raw)              # raises ConfigError as Kafka's broker refuses

The inter-broker listener is ``inter.broker.listener.name`` when set (then
``security.inter.broker.protocol`` must not be set, and the name needs a security protocol), else
the listener named as ``security.inter.broker.protocol`` (default PLAINTEXT). A node with the
broker role needs a broker listener (one not in ``controller.listener.names``) in its advertised
listeners (``advertised.listeners``, else ``listeners``); the inter-broker listener must be one of
them, and their names must all appear in ``listeners``. A controller-only node's explicit
``inter.broker.listener.name`` must not be one of its controller listeners.
"""
from __future__ import annotations

from kafkawire.metadata.scala_text import scala_set_order

from .config_values import ConfigError

__all__ = ["inter_broker_listener_name", "validate_broker_listeners"]

NAME_KEY = "inter.broker.listener.name"
PROTOCOL_KEY = "security.inter.broker.protocol"


def inter_broker_listener_name(c, raw: dict) -> str:
    """AbstractKafkaConfig.interBrokerListenerNameAndSecurityProtocol's listener name; ``raw``:
    the key -> value text (the default when not in the file; None: unset)."""
    if c.inter_broker_listener_name is None:
        return c.security_inter_broker_protocol
    if PROTOCOL_KEY in dict(c.static_settings):         # Kafka: in the originals, even as its default
        raise ConfigError(NAME_KEY, raw[NAME_KEY], f"Only one of {NAME_KEY} and {PROTOCOL_KEY} should be set.")
    if c.inter_broker_listener_name not in dict(c.listener_security_protocol_map):
        raise ConfigError(NAME_KEY, raw[NAME_KEY], f"Listener with name {c.inter_broker_listener_name} defined in "
                                                   f"{NAME_KEY} not found in listener.security.protocol.map.")
    return c.inter_broker_listener_name


def validate_broker_listeners(c, raw: dict) -> None:
    """KafkaConfig.validateValues' rules on the inter-broker and advertised listeners."""
    if not c.is_broker:
        if c.inter_broker_listener_name is not None and \
                inter_broker_listener_name(c, raw) in c.controller_listener_names:
            raise ConfigError("controller.listener.names", raw["controller.listener.names"],
                              f"controller.listener.names must not contain an explicitly set {NAME_KEY} "
                              f"configuration value when process.roles=controller'")
        return
    advertised = scala_set_order([e.listener_name for e in c.advertised_listeners
                                  if e.listener_name not in c.controller_listener_names])
    if not advertised:
        raise ConfigError("advertised.listeners", raw["advertised.listeners"] or raw["listeners"],
                          "There must be at least one broker advertised listener. Perhaps all listeners appear "
                          "in controller.listener.names?")
    name = inter_broker_listener_name(c, raw)
    if name not in advertised:
        unset = "" if c.inter_broker_listener_name is not None else \
            f" (unset: the listener named as {PROTOCOL_KEY}, {name})"
        raise ConfigError(NAME_KEY, raw.get(NAME_KEY), f"{NAME_KEY} must be a listener name defined in "
                                                       f"advertised.listeners. The valid options based on currently "
                                                       f"configured listeners are {','.join(advertised)}{unset}")
    listener_names = scala_set_order([e.listener_name for e in c.listeners])
    if not set(advertised) <= set(listener_names):
        raise ConfigError("advertised.listeners", raw["advertised.listeners"],
                          f"advertised.listeners listener names must be equal to or a subset of the ones defined "
                          f"in listeners. Found {','.join(advertised)}. The valid options based on the current "
                          f"configuration are {','.join(listener_names)}")
