"""kafka.network's RequestMetrics (kafkawire.net.request_metrics) of a known sequence of requests
to a KafkaServer on 127.0.0.1: counts by version, error codes, and the timers' moments."""
import asyncio

from prometheus_client.parser import text_string_to_metric_families

from kafkawire.messages.api_versions_request import ApiVersionsRequest
from kafkawire.messages.metadata_request import MetadataRequest, MetadataRequestTopic
from kafkawire.messages.metadata_response import MetadataResponse, MetadataResponsePartition, MetadataResponseTopic
from kafkawire.net.metrics_http import exposition
from kafkawire.net.request_metrics import local_work_done
from kafkawire.net.server import KafkaServer
from kafkawire.protocol.error_codes import Errors
from kafkawire.protocol.framing import encode_request

from .netlib import RawConnection, run

METADATA, API_VERSIONS = 3, 18
WAIT_MS = 30


async def metadata(ctx, request):
    """A topic per name asked: "missing" is UNKNOWN_TOPIC_OR_PARTITION, others have one partition;
    "slow" waits WAIT_MS after its local work, as a request in a purgatory does."""
    if any(t.name == "slow" for t in request.topics):
        local_work_done(ctx)
        await asyncio.sleep(WAIT_MS / 1000)
    return MetadataResponse(topics=[
        MetadataResponseTopic(name=t.name, error_code=Errors.UNKNOWN_TOPIC_OR_PARTITION) if t.name == "missing" else
        MetadataResponseTopic(name=t.name, partitions=[MetadataResponsePartition(partition_index=0)])
        for t in request.topics])


def scraped(server) -> dict:
    text = exposition(lambda: list(server.request_metrics.families()))().decode()
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def test_the_request_metrics_of_a_known_sequence_of_requests():
    """Two Metadata v9 and one v12 (one topic missing, one slow), one ApiVersions v3: each
    counted by version; the error codes of every level counted; the slow one's wait is
    RemoteTimeMs, inside TotalTimeMs."""
    def request(version, correlation_id, *topics):
        return encode_request(MetadataRequest(topics=[MetadataRequestTopic(name=n) for n in topics]),
                              version, correlation_id)

    async def main():
        async with KafkaServer({METADATA: metadata}) as server:
            conn = await RawConnection.open(server.port)
            await conn.write(encode_request(ApiVersionsRequest(client_software_name="t",
                                                               client_software_version="1"), 3, 1))
            await conn.read_response(API_VERSIONS, 3)
            for version, cid, topics in [(9, 2, ["a", "missing"]), (9, 3, ["b"]), (12, 4, ["slow"])]:
                await conn.write(request(version, cid, *topics))
                await conn.read_response(METADATA, version)
            conn.close()
            async with asyncio.timeout(5):      # the last answer is counted once drained
                while sum(sum(s.versions.values()) for s in server.request_metrics.apis.values()) < 4:
                    await asyncio.sleep(0.001)
            return scraped(server)

    m = run(main())
    requests = "kafka_network_requestmetrics_requests_total"
    assert m[(requests, (("request", "Metadata"), ("version", "9")))] == 2
    assert m[(requests, (("request", "Metadata"), ("version", "12")))] == 1
    assert m[(requests, (("request", "ApiVersions"), ("version", "3")))] == 1
    errors = "kafka_network_requestmetrics_errors_total"
    # topics a, b, slow and their partitions are NONE (6; no top-level code before v13); missing's
    # topic error; ApiVersions' NONE
    assert m[(errors, (("error", "NONE"), ("request", "Metadata")))] == 6
    assert m[(errors, (("error", "UNKNOWN_TOPIC_OR_PARTITION"), ("request", "Metadata")))] == 1
    assert m[(errors, (("error", "NONE"), ("request", "ApiVersions")))] == 1
    metadata_labels = (("request", "Metadata"),)
    for timer in ("totaltimems", "requestqueuetimems", "localtimems", "remotetimems", "responsequeuetimems",
                  "responsesendtimems"):
        assert m[(f"kafka_network_requestmetrics_{timer}_count", metadata_labels)] == 3, timer
    top = (("quantile", "0.999"), ("request", "Metadata"))
    assert m[("kafka_network_requestmetrics_remotetimems", top)] >= WAIT_MS
    assert m[("kafka_network_requestmetrics_totaltimems", top)] >= WAIT_MS
    assert m[("kafka_network_requestmetrics_remotetimems", (("quantile", "0.50"), ("request", "Metadata")))] == 0
