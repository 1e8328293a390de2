// Signed int<N> header fields (P4_16 spec 8.6): comparisons are signed, >> sign-extends,
// |+| and |-| saturate to [-2^(N-1), 2^(N-1) - 1]; results stored back as two's complement.
#include <core.p4>
#include <v1model.p4>

header ethernet_t { bit<48> dst; bit<48> src; bit<16> etherType; }
header s_t { int<8> a; int<8> b; int<16> c; int<16> d; }
header r_t { bit<8> flags; int<8> shr; int<8> sadd; int<8> ssub; int<16> sadd16; int<16> ssub16; }
struct headers { ethernet_t eth; s_t s; r_t r; }
struct metadata { int<8> m; }

parser P(packet_in pkt, out headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.eth);
        pkt.extract(hdr.s);
        pkt.extract(hdr.r);
        transition accept;
    }
}

control VC(inout headers hdr, inout metadata meta) { apply { } }

control I(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 2;
        bit<8> f = 0;
        if (hdr.s.a < hdr.s.b) { f = f | 1; }
        if (hdr.s.a < 0) { f = f | 2; }
        if (hdr.s.c <= hdr.s.d) { f = f | 4; }
        meta.m = hdr.s.a;
        if (meta.m >= -8s2) { f = f | 8; }
        hdr.r.flags = f;
        hdr.r.shr = hdr.s.a >> 1;
        hdr.r.sadd = hdr.s.a |+| hdr.s.b;
        hdr.r.ssub = hdr.s.a |-| hdr.s.b;
        hdr.r.sadd16 = hdr.s.c |+| hdr.s.d;
        hdr.r.ssub16 = hdr.s.c |-| hdr.s.d;
    }
}

control E(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout metadata meta) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr.eth); pkt.emit(hdr.s); pkt.emit(hdr.r); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
