"""Reading Kafka traffic from packet captures (kafkawire pcap)."""
