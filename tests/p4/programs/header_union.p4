// header_union (P4_16 spec 8.20): at most one member valid; extract and setValid of a member
// make the others invalid; u.isValid() is true when a member is; emit(u) emits the valid one.
#include <core.p4>
#include <v1model.p4>

header ethernet_t { bit<48> dst; bit<48> src; bit<16> etherType; }
header res_t { bit<8> which; }
header v4_t { bit<8> kind; bit<32> addr; }
header v6_t { bit<8> kind; bit<64> addr; }
header_union ip_u { v4_t v4; v6_t v6; }
struct headers { ethernet_t eth; res_t res; ip_u ip; }
struct metadata { }

parser P(packet_in pkt, out headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.eth);
        pkt.extract(hdr.res);
        transition select(pkt.lookahead<bit<8>>()) {
            4: parse_v4;
            6: parse_v6;
            default: accept;
        }
    }
    state parse_v4 {
        pkt.extract(hdr.ip.v4);
        transition select(hdr.eth.etherType) {
            2: parse_v6;  // a second member extracted: v4 becomes invalid
            default: accept;
        }
    }
    state parse_v6 {
        pkt.extract(hdr.ip.v6);
        transition accept;
    }
}

control VC(inout headers hdr, inout metadata meta) { apply { } }

control I(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 2;
        hdr.res.which = hdr.ip.isValid() ? 8w1 : 8w0;
        if (hdr.ip.v4.isValid()) { hdr.res.which = hdr.res.which | 0x40; }
        if (hdr.ip.v6.isValid()) { hdr.res.which = hdr.res.which | 0x60; }
        if (hdr.eth.etherType == 0x0001 && hdr.ip.v4.isValid()) {
            // v4 -> v6: setValid of v6 makes v4 invalid
            hdr.ip.v6.setValid();
            hdr.ip.v6.kind = 6;
            hdr.ip.v6.addr = (bit<64>)hdr.ip.v4.addr;
        }
    }
}

control E(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout metadata meta) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr.eth); pkt.emit(hdr.res); pkt.emit(hdr.ip); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
