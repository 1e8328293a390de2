// Packet-in / packet-out through the CPU port, as the P4 tutorials' controller exercises do
// it (P4Runtime section 16.1): a frame from the CPU port (255) starts with the packet_out
// header, which names the egress port and is removed; any other frame goes to the CPU port
// with a packet_in header naming the port it came in on.
#include <core.p4>
#include <v1model.p4>

#define CPU_PORT 255

@controller_header("packet_out")
header packet_out_header_t { bit<9> egress_port; bit<7> _pad; }

@controller_header("packet_in")
header packet_in_header_t { bit<9> ingress_port; bit<7> _pad; }

header ethernet_t { bit<48> dst; bit<48> src; bit<16> etherType; }
struct headers { packet_out_header_t packet_out; packet_in_header_t packet_in; ethernet_t eth; }
struct metadata { }

parser P(packet_in pkt, out headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    state start {
        transition select(sm.ingress_port) {
            CPU_PORT: parse_packet_out;
            default: parse_ethernet;
        }
    }
    state parse_packet_out {
        pkt.extract(hdr.packet_out);
        transition parse_ethernet;
    }
    state parse_ethernet {
        pkt.extract(hdr.eth);
        transition accept;
    }
}

control VC(inout headers hdr, inout metadata meta) { apply { } }

control I(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    apply {
        if (hdr.packet_out.isValid()) {
            sm.egress_spec = hdr.packet_out.egress_port;
            hdr.packet_out.setInvalid();
        } else {
            hdr.packet_in.setValid();
            hdr.packet_in.ingress_port = sm.ingress_port;
            hdr.packet_in._pad = 0;
            sm.egress_spec = CPU_PORT;
        }
    }
}

control E(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout metadata meta) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr.packet_in); pkt.emit(hdr.eth); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
