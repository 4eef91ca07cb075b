"""UnregisterBroker (64) as Kafka 4.3.1's controller answers it (ReplicationControlManager.unregisterBroker;
issue 29): the broker leaves the ISRs (a partition it led elects another leader), then an
UnregisterBrokerRecord removes its registration; an id not registered is BROKER_ID_NOT_REGISTERED
with Kafka's message."""
from kafkawire.messages.unregister_broker_request import UnregisterBrokerRequest
from kafkawire.protocol.error_codes import Errors

from .harness import Ctx, run
from .test_alter_partition import three_brokers_one_partition
from .test_brokers import new_records


def test_a_registered_broker_leaves_the_isrs_then_its_registration_goes():
    async def go():
        quorum, leader, running, topic_id = await three_brokers_one_partition()
        async with running:
            gone = leader.image.topics_by_id[topic_id].partitions[0].leader
            mark = quorum.end_offset
            answer = await leader.handlers()[64].handle(Ctx(0), UnregisterBrokerRequest(broker_id=gone))
            assert (answer.error_code, answer.error_message) == (0, "")       # Kafka's default: ""
            names = [record.type_name for _, record in new_records(quorum, mark)]
            assert names == ["PartitionChangeRecord", "UnregisterBrokerRecord"]
            assert gone not in leader.image.brokers
            partition = leader.image.topics_by_id[topic_id].partitions[0]
            assert gone not in partition.isr and partition.leader not in (gone, -1)
            again = await leader.handlers()[64].handle(Ctx(0), UnregisterBrokerRequest(broker_id=gone))
            assert (again.error_code, again.error_message) == \
                (Errors.BROKER_ID_NOT_REGISTERED, f"Broker ID {gone} is not currently registered")
    run(go())
