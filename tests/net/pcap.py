"""Record a test's TCP traffic through a relay and write it as a pcap of IPv4/TCP packets, for
tshark to dissect where capturing on the loopback interface needs privileges we lack.

The relay sits between the clients and the server; every chunk either side sends is kept in
order with its direction, and ``write_pcap`` lays each connection out as a TCP handshake, the
chunks as PSH/ACK segments with correct sequence numbers and checksums, and a FIN exchange
(LINKTYPE_RAW: each packet is an IPv4 datagram).
"""
from __future__ import annotations

import asyncio
import struct
import time

LINKTYPE_RAW = 101
_MAX_SEGMENT = 65535 - 40
_CLIENT_ISN, _SERVER_ISN = 1000, 5000000


class Recorder:
    def __init__(self):
        self.connections: list[dict] = []       # {"client_port", "chunks": [(time, to_server, bytes)]}
        self._server = None
        self._tasks: set = set()

    async def start(self, target_port: int) -> int:
        async def relay(reader, writer):
            conn = {"client_port": writer.get_extra_info("peername")[1], "chunks": [], "start": time.time()}
            self.connections.append(conn)
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", target_port)

            async def pump(src, dst, to_server):
                try:
                    while data := await src.read(65536):
                        conn["chunks"].append((time.time(), to_server, data))
                        dst.write(data)
                        await dst.drain()
                except (ConnectionError, OSError):
                    pass
                finally:
                    dst.close()

            tasks = [asyncio.create_task(pump(reader, up_writer, True)),
                     asyncio.create_task(pump(up_reader, writer, False))]
            self._tasks.update(tasks)
            await asyncio.gather(*tasks)

        self._server = await asyncio.start_server(relay, "127.0.0.1", 0)
        self.server_port = target_port
        return self._server.sockets[0].getsockname()[1]

    async def stop(self):
        self._server.close()
        for t in self._tasks:
            t.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)


def _checksum(data: bytes) -> int:
    if len(data) % 2:
        data += b"\0"
    total = sum(struct.unpack(f">{len(data) // 2}H", data))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


def _packet(src_port, dst_port, seq, ack, flags, payload=b"") -> bytes:
    src = dst = bytes([127, 0, 0, 1])
    tcp = struct.pack(">HHIIBBHHH", src_port, dst_port, seq & 0xFFFFFFFF, ack & 0xFFFFFFFF, 5 << 4, flags, 65535, 0, 0)
    pseudo = src + dst + struct.pack(">BBH", 0, 6, len(tcp) + len(payload))
    tcp = tcp[:16] + struct.pack(">H", _checksum(pseudo + tcp + payload)) + tcp[18:]
    ip = struct.pack(">BBHHHBBH4s4s", 0x45, 0, 20 + len(tcp) + len(payload), 0, 0x4000, 64, 6, 0, src, dst)
    ip = ip[:10] + struct.pack(">H", _checksum(ip)) + ip[12:]
    return ip + tcp + payload


SYN, FIN, PSH, ACK = 0x02, 0x01, 0x08, 0x10


def write_pcap(path, recorder: Recorder) -> int:
    """Write every recorded connection; returns the number of packets."""
    records = []
    for conn in recorder.connections:
        cport, sport = conn["client_port"], recorder.server_port
        cseq, sseq = _CLIENT_ISN, _SERVER_ISN
        t = conn["start"]
        records.append((t, _packet(cport, sport, cseq, 0, SYN)))
        records.append((t, _packet(sport, cport, sseq, cseq + 1, SYN | ACK)))
        cseq, sseq = cseq + 1, sseq + 1
        records.append((t, _packet(cport, sport, cseq, sseq, ACK)))
        for when, to_server, data in conn["chunks"]:
            t = max(t, when)
            for i in range(0, len(data), _MAX_SEGMENT):
                part = data[i:i + _MAX_SEGMENT]
                if to_server:
                    records.append((t, _packet(cport, sport, cseq, sseq, PSH | ACK, part)))
                    cseq += len(part)
                else:
                    records.append((t, _packet(sport, cport, sseq, cseq, PSH | ACK, part)))
                    sseq += len(part)
        records.append((t, _packet(cport, sport, cseq, sseq, FIN | ACK)))
        records.append((t, _packet(sport, cport, sseq, cseq + 1, FIN | ACK)))
        records.append((t, _packet(cport, sport, cseq + 1, sseq + 1, ACK)))
    records.sort(key=lambda r: r[0])
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 262144, LINKTYPE_RAW))
        for when, packet in records:
            sec = int(when)
            f.write(struct.pack("<IIII", sec, int((when - sec) * 1e6), len(packet), len(packet)))
            f.write(packet)
    return len(records)
