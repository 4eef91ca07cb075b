"""StandardAuthorizer's decision (Kafka's StandardAuthorizerData) on ACLs as the metadata image
holds them, and the authorizer settings of server.properties."""
import pytest

from kafkawire.metadata.registrations import StandardAcl
from kafkawire.net.authorizer import (CLUSTER_NAME, AuthorizerNotReady, AuthorizerSettings, Op, StandardAuthorizer)
from kafkawire.net.config import ConfigError, parse_server_config

TOPIC, CLUSTER = 2, 4
LITERAL, PREFIXED = 3, 4
DENY, ALLOW = 2, 3


def acl(principal, operation, permission=ALLOW, resource_type=CLUSTER, name=CLUSTER_NAME, pattern=LITERAL, host="*"):
    return StandardAcl(resource_type, name, pattern, principal, host, operation, permission)


def authorizer(*acls, super_users=(), allow_if_none=False, loaded=True):
    return StandardAuthorizer(AuthorizerSettings(frozenset(super_users), allow_if_none), lambda: acls, lambda: loaded)


def allowed(a, principal, operation, resource_type=CLUSTER, name=CLUSTER_NAME, host="127.0.0.1"):
    return a.authorize(principal, host, operation, resource_type, name)


def test_super_users_are_allowed_everything_even_before_loading():
    a = authorizer(acl("User:admin", Op.ALL, DENY), super_users={"User:admin"}, loaded=False)
    assert allowed(a, "User:admin", Op.CLUSTER_ACTION)
    with pytest.raises(AuthorizerNotReady):
        allowed(a, "User:alice", Op.DESCRIBE)


def test_no_acls_for_the_resource_follow_allow_everyone_if_no_acl_found():
    assert not allowed(authorizer(), "User:alice", Op.CLUSTER_ACTION)
    assert allowed(authorizer(allow_if_none=True), "User:alice", Op.CLUSTER_ACTION)
    # an ACL for someone else on the same resource: the resource has ACLs, so DENIED
    assert not allowed(authorizer(acl("User:bob", Op.ALL), allow_if_none=True), "User:alice", Op.DESCRIBE)
    # an ACL on another resource type does not count
    assert allowed(authorizer(acl("User:bob", Op.ALL, resource_type=TOPIC, name="t"), allow_if_none=True),
                   "User:alice", Op.DESCRIBE)


def test_operations_and_implied_describe():
    a = authorizer(acl("User:alice", Op.ALTER), acl("User:bob", Op.CLUSTER_ACTION), acl("User:carol", Op.ALL),
                   acl("User:dave", Op.ALTER_CONFIGS))
    assert allowed(a, "User:alice", Op.ALTER) and allowed(a, "User:alice", Op.DESCRIBE)
    assert not allowed(a, "User:alice", Op.CLUSTER_ACTION)
    assert allowed(a, "User:bob", Op.CLUSTER_ACTION) and not allowed(a, "User:bob", Op.DESCRIBE)
    assert all(allowed(a, "User:carol", op) for op in (Op.ALTER, Op.DESCRIBE, Op.CLUSTER_ACTION, Op.CREATE))
    assert allowed(a, "User:dave", Op.DESCRIBE_CONFIGS) and not allowed(a, "User:dave", Op.DESCRIBE)


def test_deny_wins_and_a_deny_implies_nothing():
    a = authorizer(acl("User:alice", Op.ALL), acl("User:alice", Op.DESCRIBE, DENY),
                   acl("User:bob", Op.ALL), acl("User:bob", Op.ALTER, DENY))
    assert not allowed(a, "User:alice", Op.DESCRIBE) and allowed(a, "User:alice", Op.ALTER)
    assert not allowed(a, "User:bob", Op.ALTER)
    assert allowed(a, "User:bob", Op.DESCRIBE)          # a DENY of ALTER does not deny DESCRIBE


def test_wildcards_prefixes_and_hosts():
    a = authorizer(acl("User:*", Op.DESCRIBE, resource_type=TOPIC, name="__cluster", pattern=PREFIXED),
                   acl("User:alice", Op.CREATE, resource_type=TOPIC, name="*"),
                   acl("User:bob", Op.CLUSTER_ACTION, host="10.0.0.1"),
                   acl("User:eve", Op.DESCRIBE, resource_type=TOPIC, name="__cluster", pattern=LITERAL))
    assert allowed(a, "User:anyone", Op.DESCRIBE, TOPIC, "__cluster_metadata")
    assert allowed(a, "User:alice", Op.CREATE, TOPIC, "whatever")
    assert not allowed(a, "User:alice", Op.DELETE, TOPIC, "whatever")
    assert not allowed(a, "User:bob", Op.CLUSTER_ACTION)                     # from 127.0.0.1
    assert allowed(a, "User:bob", Op.CLUSTER_ACTION, host="10.0.0.1")
    # a LITERAL ACL whose name is only a prefix does not apply
    assert not allowed(a, "User:eve", Op.CREATE, TOPIC, "__cluster_metadata")


BASE = ("process.roles=controller\nnode.id=1\ncontroller.quorum.voters=1@127.0.0.1:9093\n"
        "listeners=CONTROLLER://127.0.0.1:9093\ncontroller.listener.names=CONTROLLER\n")


def test_settings_from_server_properties():
    assert parse_server_config(BASE).authorizer_settings() is None
    config = parse_server_config(BASE + "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer\n"
                                        "super.users=User:admin; User:controller\n"
                                        "allow.everyone.if.no.acl.found=TRUE\n")
    assert config.authorizer_settings() == AuthorizerSettings(frozenset({"User:admin", "User:controller"}), True)
    assert config.unknown_keys == ()


@pytest.mark.parametrize("extra, key", [
    ("authorizer.class.name=kafka.security.authorizer.AclAuthorizer\n", "authorizer.class.name"),
    ("authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer\nsuper.users=admin\n",
     "super.users"),
    ("authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer\n"
     "allow.everyone.if.no.acl.found=yes\n", "allow.everyone.if.no.acl.found"),
])
def test_bad_settings_are_refused_naming_the_key(extra, key):
    config = parse_server_config(BASE + extra)       # checked when the node starts, as Kafka's
    with pytest.raises(ConfigError) as info:
        config.authorizer_settings()
    assert info.value.key == key


def test_a_cluster_refusal_names_the_request_as_kafka_4_3_does():
    """ClusterAuthorizationException's text is RequestChannel.Request.toString in Kafka 4.3.1: the
    Session is shown by Object.toString (class name @ hex hash), and the receive buffer only for an
    API that keeps it (forwardable, or with bytes fields) as a HeapByteBuffer read to the frame's
    end; DescribeCluster's is released once parsed (null)."""
    import asyncio
    import re

    from kafkawire.messages.create_acls_request import AclCreation, CreateAclsRequest
    from kafkawire.messages.describe_cluster_request import DescribeClusterRequest
    from kafkawire.net.authorizer import authorizing_handler
    from kafkawire.net.server import ApiHandler, RequestContext

    async def unreachable(ctx, request):
        raise AssertionError("a refused request reached the controller")

    def refusal(api_key, request, operation, size):
        ctx = RequestContext(api_key, 3, 1, "c", ("10.0.0.1", 5), "CONTROLLER", "127.0.0.1:9093-10.0.0.1:5-0",
                             principal="User:mallory", security_protocol="SASL_PLAINTEXT", request_size=size)
        handler = authorizing_handler(api_key, ApiHandler(unreachable), authorizer(), operation)
        return asyncio.run(handler.handle(ctx, request))

    acls = refusal(30, CreateAclsRequest(creations=[AclCreation(resource_type=TOPIC, resource_name="t",
                                                                resource_pattern_type=LITERAL, principal="User:x",
                                                                host="*", operation=3, permission_type=ALLOW)]),
                   Op.ALTER, 198932)
    request_text = (r"Request Request\(processor=0, connectionId=127\.0\.0\.1:9093-10\.0\.0\.1:5-0, "
                    r"session=org\.apache\.kafka\.network\.Session@[0-9a-f]+, listenerName=ListenerName\(CONTROLLER\), "
                    r"securityProtocol=SASL_PLAINTEXT, buffer={}, envelope=None\) needs ALTER permission\.")
    assert [r.error_code for r in acls.results] == [31]
    assert re.fullmatch(request_text.format(r"java\.nio\.HeapByteBuffer\[pos=198932 lim=198932 cap=198932\]"),
                        acls.results[0].error_message), acls.results[0].error_message
    cluster = refusal(60, DescribeClusterRequest(), Op.ALTER, 40)
    assert re.fullmatch(request_text.format("null"), cluster.error_message), cluster.error_message


def by_type(a, principal, operation=Op.WRITE, resource_type=TOPIC, host="127.0.0.1"):
    return a.authorize_by_resource_type(principal, host, operation, resource_type)


def test_authorize_by_resource_type_follows_kafkas_default_rule():
    """Authorizer.authorizeByResourceType (InitProducerId without a transactional id, KIP-679):
    some ALLOW of the operation on a topic pattern not dominated by a DENY."""
    assert by_type(authorizer(acl("User:bob", Op.WRITE, resource_type=TOPIC, name="orders")), "User:bob")
    assert by_type(authorizer(acl("User:bob", Op.ALL, resource_type=TOPIC, name="o", pattern=PREFIXED)), "User:bob")
    assert not by_type(authorizer(acl("User:bob", Op.READ, resource_type=TOPIC, name="orders")), "User:bob")
    assert not by_type(authorizer(acl("User:bob", Op.WRITE, resource_type=TOPIC, name="orders"),
                                  acl("User:bob", Op.WRITE, DENY, resource_type=TOPIC, name="orders")), "User:bob")
    assert not by_type(authorizer(acl("User:bob", Op.WRITE, resource_type=TOPIC, name="orders"),
                                  acl("User:bob", Op.WRITE, DENY, resource_type=TOPIC, name="ord", pattern=PREFIXED)),
                       "User:bob")
    assert not by_type(authorizer(acl("User:bob", Op.WRITE, resource_type=TOPIC, name="*", pattern=LITERAL),
                                  acl("User:*", Op.WRITE, DENY, resource_type=TOPIC, name="*")), "User:bob")
    assert by_type(authorizer(acl("User:*", Op.WRITE, resource_type=TOPIC, name="*")), "User:bob")
    assert not by_type(authorizer(acl("User:bob", Op.WRITE, resource_type=TOPIC, name="x", host="10.0.0.1")), "User:bob")
    assert by_type(authorizer(super_users=("User:admin",)), "User:admin")          # super users: always
    assert by_type(authorizer(allow_if_none=True), "User:bob")                      # no ACLs at all
    assert not by_type(authorizer(), "User:bob")
