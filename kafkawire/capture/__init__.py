"""Kafka traffic in pcap/pcapng captures: TCP reassembly, request/response pairing, decoding and
the byte-exact conformance check (``kafkawire pcap`` formats what this package reads).

    from kafkawire.capture import read_capture
    capture = read_capture("traffic.pcapng")
    for exchange in capture.exchanges():
        exchange.request.api_name, exchange.request.body, exchange.response and exchange.response.body

Modules: ``packets`` (TCP segments out of the file, with dpkt), ``streams`` (reassembly, gaps),
``kafka`` (frames, roles, decoding), ``check`` (re-encoding), ``records`` (the record batches
inside Produce and Fetch), ``read`` (``read_capture``). The names below are imported on first use,
so importing this package does not load dpkt or the codecs.
"""
from kafkawire._lazy import lazy_exports

__all__ = ["read_capture", "Capture", "Exchange", "Frame", "CaptureError", "DEFAULT_PORTS"]

__getattr__, __dir__ = lazy_exports(__name__, {
    "read_capture": ".read:read_capture",
    "Capture": ".read:Capture",
    "Exchange": ".read:Exchange",
    "Frame": ".kafka:Frame",
    "CaptureError": ".packets:CaptureError",
    "DEFAULT_PORTS": ".kafka:DEFAULT_PORTS",
})
