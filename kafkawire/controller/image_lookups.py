"""The lookups a write over many partitions makes once against the image it is generated from
(ElectLeaders' walk, a reassignment request), not per partition: each broker's acceptability,
the directories online, the metadata version, ELR, each topic's min ISR and unclean election
setting, each broker's default directory. Kafka makes them per partition; per partition here
they were most of an ElectLeaders walk's CPU and 5-10% of a reassignment cancel's at 100k
partitions (issue 28)."""
from __future__ import annotations

from .replication import (_OnlineDirectories, is_active, min_isr_default, topic_min_isr, topic_unclean_election,
                          unclean_election_default)
from .topics import _default_dir
from .versions import elr_enabled


class ImageLookups:
    """One write's lookups against ``image`` (the image does not change under a write's generate)."""

    def __init__(self, image, node_configs):
        self.image = image
        self.min_isr_default = min_isr_default(image, node_configs)
        self.unclean_default = unclean_election_default(image, node_configs)
        self.mv = image.metadata_version or 0
        self.elr = elr_enabled(image.metadata_version, image.finalized_features)
        self.active = {b: is_active(image, b) for b in image.brokers}.get      # an unknown id: None
        self.has_online_dir = _OnlineDirectories(image).has_online_dir
        self._min_isr: dict = {}
        self._default_dirs: dict = {}
        self._unclean: dict = {}
        self._topic_arguments: dict = {}

    # (each topic's by its name, unique in an image: a str keeps its hash, a UUID computes it anew)

    def min_isr(self, topic) -> int:
        try:
            return self._min_isr[topic.name]
        except KeyError:
            found = self._min_isr[topic.name] = topic_min_isr(self.image, topic, self.min_isr_default)
            return found

    def acceptable(self, partition):
        """leader_acceptor(image, partition, is_active) over the lookups."""
        active, online = self.active, self.has_online_dir
        return lambda r: bool(active(r)) and online(r, partition)

    def default_dir(self, broker_id: int):
        try:
            return self._default_dirs[broker_id]
        except KeyError:
            found = self._default_dirs[broker_id] = _default_dir(self.image, broker_id)
            return found

    def unclean_enabled(self, topic) -> bool:
        """unclean_election_enabled(image, topic, node_configs), once a topic."""
        try:
            return self._unclean[topic.name]
        except KeyError:
            found = self._unclean[topic.name] = topic_unclean_election(self.image, topic, self.unclean_default)
            return found

    def build_arguments(self, topic, partition) -> dict:
        """build_change's arguments that come from the image (all but the leader acceptor once a topic)."""
        common = self._topic_arguments.get(topic.name)
        if common is None:
            common = self._topic_arguments[topic.name] = dict(
                min_isr=self.min_isr(topic), elr_enabled=self.elr, metadata_version=self.mv,
                default_dir=self.default_dir)
        return dict(common, acceptable_leader=self.acceptable(partition))
