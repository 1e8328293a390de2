// varbit header fields (P4_16 spec 7.1.6.3, 12.8.2, 15.2): two-argument extract with a
// run-time length, emit of the field at its current length, a varbit header copied, and
// minSizeInBytes(). o = len data tail, data is len bytes (at most 8).
#include <core.p4>
#include <v1model.p4>

header ethernet_t { bit<48> dst; bit<48> src; bit<16> etherType; }
header m_t { bit<8> min; }
header opt_t { bit<8> len; varbit<64> data; bit<8> tail; }
struct headers { ethernet_t eth; m_t m; opt_t o; opt_t o2; }
struct metadata { }

parser P(packet_in pkt, out headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.eth);
        pkt.extract(hdr.m);
        pkt.extract(hdr.o, (bit<32>)pkt.lookahead<bit<8>>() * 8);
        transition accept;
    }
}

control VC(inout headers hdr, inout metadata meta) { apply { } }

control I(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 2;
        if (sm.parser_error == error.HeaderTooShort) {
            sm.egress_spec = 3;
        } else if (sm.parser_error == error.PacketTooShort) {
            sm.egress_spec = 4;
        }
        hdr.m.min = (bit<8>)hdr.o.minSizeInBytes();
        if (hdr.o.len == 2) {
            hdr.o2 = hdr.o;
            hdr.o2.tail = 0x77;
        }
    }
}

control E(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout metadata meta) { apply { } }
control D(packet_out pkt, in headers hdr) {
    apply { pkt.emit(hdr.eth); pkt.emit(hdr.m); pkt.emit(hdr.o); pkt.emit(hdr.o2); }
}
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
