"""``transaction.partition.verification.enable`` as a Kafka 4.3.1 broker reads it: a dynamic
broker config (DynamicBrokerConfig's DYNAMIC_PRODUCER_STATE_MANAGER_CONFIGS), so its value is the
one set dynamically for this broker's id, else for every broker (the cluster default), else in
server.properties, else true; read again when the metadata image changes. A dynamic value that
is not a boolean keeps the value below it (logged; the controller validates what it accepts).

    enabled = VerificationSetting(broker)    # broker: config, image()
    if enabled(): ...

Who follows it: kafkawire.broker.txn_verify_routing (no check-only verification is sent when
false) and kafkawire.broker.txn_verification (no guard is started for Produce v11 and older, and
no appended batch needs one: Kafka's UnifiedLog.batchMissingRequiredVerification).
"""
from __future__ import annotations

import logging

from kafkawire.metadata.topic_config_synonyms import dynamic_broker_configs, image_version

__all__ = ["VerificationSetting", "VERIFICATION_ENABLE"]

log = logging.getLogger(__name__)

VERIFICATION_ENABLE = "transaction.partition.verification.enable"


class VerificationSetting:
    def __init__(self, broker):
        self.broker = broker
        self._version: tuple | None = None
        self._value = True

    def __call__(self) -> bool:
        image = self.broker.image()
        version = image_version(image)
        if version != self._version:
            self._version = version
            self._value = self._resolve(image)
        return self._value

    def _static(self) -> bool:
        return bool(getattr(getattr(self.broker, "config", None), "transaction_partition_verification_enable", True))

    def _resolve(self, image) -> bool:
        value = self._static()
        if getattr(image, "configs", None) is None:
            return value
        for name in ("", str(self.broker.node_id)):          # the broker's own value wins
            text = dynamic_broker_configs(image, name).get(VERIFICATION_ENABLE)
            if text is None:
                continue
            parsed = text.strip().lower()
            if parsed in ("true", "false"):
                value = parsed == "true"
            else:
                log.warning("%s=%r set dynamically is not a boolean; the value below it applies",
                            VERIFICATION_ENABLE, text)
        return value
