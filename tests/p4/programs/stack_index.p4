// A header stack indexed at run time (P4_16 spec 8.18): hs[i].f read and written,
// hs[i].isValid(), hs[i].setInvalid(), with i a header field.
#include <core.p4>
#include <v1model.p4>

header ethernet_t { bit<48> dst; bit<48> src; bit<16> etherType; }
header idx_t { bit<8> i; bit<8> j; bit<8> r; bit<8> v; }
header e_t { bit<8> x; }
struct headers { ethernet_t eth; idx_t idx; e_t[4] s; }
struct metadata { }

parser P(packet_in pkt, out headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.eth);
        pkt.extract(hdr.idx);
        pkt.extract(hdr.s.next);
        pkt.extract(hdr.s.next);
        pkt.extract(hdr.s.next);
        pkt.extract(hdr.s.next);
        transition accept;
    }
}

control VC(inout headers hdr, inout metadata meta) { apply { } }

control I(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 2;
        hdr.idx.r = hdr.s[hdr.idx.i].x;
        hdr.s[hdr.idx.j].x = hdr.idx.v;
        if (!hdr.s[hdr.idx.i + 1].isValid()) {
            hdr.idx.v = 0xEE;
        }
        if (hdr.idx.i == 3) {
            hdr.s[hdr.idx.j].setInvalid();
        }
    }
}

control E(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout metadata meta) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr.eth); pkt.emit(hdr.idx); pkt.emit(hdr.s); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
