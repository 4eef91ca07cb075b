"""The features part of an ApiVersions answer (KIP-584), shared by the controller listener and
the broker listener: SupportedFeatures (the node's ranges), FinalizedFeatures (the levels the
metadata image finalized, each as min = max = level, as Kafka's ApiVersionsResponse builds them)
and FinalizedFeaturesEpoch.

Kafka's broker (DefaultApiVersionManager over KRaftMetadataCache.features()) finalizes the
image's FeatureLevelRecords, metadata.version, and kraft.version when its level is above 0;
its epoch is the offset of the image (the last record applied). A level 0 is never listed.
"""
from __future__ import annotations

from typing import Mapping

from kafkawire.feature_versions import KRAFT_VERSION
from kafkawire.messages import api_versions_response as av

__all__ = ["METADATA_VERSION", "finalized_levels", "set_features"]

METADATA_VERSION = "metadata.version"


def finalized_levels(image, kraft_level: int) -> dict[str, int]:
    """KRaftMetadataCache.features(): the image's finalized levels (level > 0), metadata.version
    once the image has one, and kraft.version above 0 (it lives in the raft log, not the image)."""
    finalized: dict[str, int] = {}
    if kraft_level > 0:
        finalized[KRAFT_VERSION] = kraft_level
    if image is not None:
        if image.metadata_version is not None:
            finalized[METADATA_VERSION] = image.metadata_version
        finalized.update(image.finalized_features)
    return finalized


def set_features(response, supported: Mapping[str, tuple[int, int]], finalized: Mapping[str, int],
                 epoch: int) -> None:
    """Fill the response's SupportedFeatures, FinalizedFeatures (levels above 0) and epoch."""
    response.supported_features = [av.SupportedFeatureKey(name=name, min_version=low, max_version=high)
                                   for name, (low, high) in sorted(supported.items())]
    response.finalized_features = [av.FinalizedFeatureKey(name=name, max_version_level=level, min_version_level=level)
                                   for name, level in sorted(finalized.items()) if level != 0]
    response.finalized_features_epoch = epoch
