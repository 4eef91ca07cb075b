"""A 3-voter kafkawire quorum whose controller listener is SASL_PLAINTEXT with GSSAPI only, Kafka's
default mechanism (issue 29): the voters log in as kafka/localhost with the listener's keytab,
authenticate to each other (sasl.mechanism.controller.protocol=GSSAPI), elect a leader and commit;
an admin client logs in as alice and is User:alice under the authorizer. Against a throwaway MIT
KDC (tests/net/kdc.py), whose environment (KRB5_CONFIG) the node processes inherit."""
from __future__ import annotations

import asyncio

import pytest

from kafkawire.messages.describe_quorum_request import DescribeQuorumRequest, PartitionData, TopicData
from kafkawire.net.client import NetworkClient
from kafkawire.net.security import client_options_from_properties
from kafkawire.protocol.error_codes import Errors
from kafkawire.raft.node.local_quorum import LocalQuorum
from tests.conftest import unavailable
from tests.node.test_secure_quorum import ten_more_commits_on_three_voters
from tests.net.kdc import REALM, Kdc, kdc_binaries_missing, running_kdc

# The module takes about 40 s at load 20 on the shared 2-core machine (a 3-voter quorum's start and
# ten commits); tests/net/test_sasl_gssapi.py covers the node's GSSAPI client in under a second.
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def quorum(tmp_path_factory):
    base = tmp_path_factory.mktemp("gssapi-quorum")
    with running_kdc(base / "kdc") as kdc:
        server_keytab = kdc.keytab("kafka/localhost")
        alice = kdc.keytab("alice")
        q = LocalQuorum(base, voters=3, client_options=logged_in_as(f"kafka/localhost@{REALM}", server_keytab),
                        properties={
            "listener.security.protocol.map": "CONTROLLER:SASL_PLAINTEXT",
            "sasl.enabled.mechanisms": "GSSAPI",
            "sasl.mechanism.controller.protocol": "GSSAPI",
            "sasl.kerberos.service.name": "kafka",
            "listener.name.controller.gssapi.sasl.jaas.config":
                "com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true storeKey=true "
                f'keyTab="{server_keytab}" principal="kafka/localhost@{REALM}";',
            "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
            "super.users": "User:kafka",
        })
        q.alice = alice
        q.format()
        q.start_all()
        try:
            yield q
        finally:
            q.kill_all()


def logged_in_as(principal: str, keytab) -> dict:
    """NetworkClient options of an admin client that logs in as ``principal`` with ``keytab``."""
    return client_options_from_properties({
        "security.protocol": "SASL_PLAINTEXT", "sasl.kerberos.service.name": "kafka",
        "sasl.jaas.config": "com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true "
                            f'keyTab="{keytab}" principal="{principal}";'})


def test_voters_authenticate_with_kerberos_elect_a_leader_and_commit(quorum):
    """The test's own client is User:kafka (a super user) too, so DescribeQuorum is answered."""
    ten_more_commits_on_three_voters(quorum)
    for node_id in quorum.voter_ids:
        text = open(quorum.log_path(node_id)).read()
        assert "Traceback" not in text and "failed authentication" not in text, quorum.log_tail(node_id)


def test_an_admin_logs_in_as_alice_and_the_authorizer_sees_user_alice(quorum):
    leader = quorum.wait_for_leader(60, among=quorum.voter_ids)
    options = logged_in_as(f"alice@{REALM}", quorum.alice)
    request = DescribeQuorumRequest(topics=[TopicData(topic_name="__cluster_metadata",
                                                      partitions=[PartitionData(partition_index=0)])])

    async def describe():
        async with NetworkClient(request_timeout_ms=10000, **options) as client:
            return await client.send(quorum.address(leader.leader_id), request)
    # authenticated as alice, who is no super user and has no ACL: refused by the authorizer
    assert asyncio.run(describe()).error_code == Errors.CLUSTER_AUTHORIZATION_FAILED
