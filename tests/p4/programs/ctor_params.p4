// Control constructor parameters (P4_16 spec 14.1): `control Add(inout bit<8> x)(bit<8> k)`,
// instantiated twice with different compile-time values, `Add(8w1) inc; Add(8w16) inc16;`.
#include <core.p4>
#include <v1model.p4>

header ethernet_t { bit<48> dst; bit<48> src; bit<16> etherType; }
header t_t { bit<8> a; bit<8> b; bit<8> c; }
struct headers { ethernet_t eth; t_t t; }
struct metadata { }

control Add(inout bit<8> x)(bit<8> k, bool twice) {
    apply {
        x = x + k;
        if (twice) {
            x = x + k;
        }
    }
}

parser P(packet_in pkt, out headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.eth);
        pkt.extract(hdr.t);
        transition accept;
    }
}

control VC(inout headers hdr, inout metadata meta) { apply { } }

control I(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    Add(8w1, false) inc;
    Add(8w16, true) inc32;
    apply {
        sm.egress_spec = 2;
        inc.apply(hdr.t.a);
        inc32.apply(hdr.t.b);
        inc.apply(hdr.t.c);
        inc32.apply(hdr.t.c);
    }
}

control E(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout metadata meta) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr.eth); pkt.emit(hdr.t); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
