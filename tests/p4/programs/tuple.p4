// tuple<T1, T2> (P4_16 spec 7.2.8, 8.12): tuple locals and struct members, list
// initialisers, constant indexing t[i] (read and write), as `in` arguments and as hash data.
#include <core.p4>
#include <v1model.p4>

header ethernet_t { bit<48> dst; bit<48> src; bit<16> etherType; }
header t_t { bit<8> a; bit<16> b; bit<8> r1; bit<16> r2; bit<32> h; }
struct headers { ethernet_t eth; t_t t; }
struct metadata { tuple<bit<8>, bit<16>> saved; }

bit<16> second(in tuple<bit<8>, bit<16>> x) {
    return x[1];
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
    apply {
        sm.egress_spec = 2;
        tuple<bit<8>, bit<16>> t = { hdr.t.a, hdr.t.b };
        meta.saved = t;
        t[0] = t[0] + 1;
        hdr.t.r1 = t[0];
        hdr.t.r2 = second(meta.saved) + 1;
        hash(hdr.t.h, HashAlgorithm.identity, 32w0, t, 32w0xffffffff);
    }
}

control E(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout metadata meta) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr.eth); pkt.emit(hdr.t); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
