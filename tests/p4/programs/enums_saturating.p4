// Serializable enums (enum bit<8> E { A = 1 }), unsized int constants and saturating
// arithmetic |+| |-| (P4_16 spec 8.3, 7.1.6.5, 8.6), as in the flowcache exercise.
#include <core.p4>
#include <v1model.p4>

header ethernet_t { bit<48> dst; bit<48> src; bit<16> etherType; }
header s_t { bit<8> op; bit<8> a; bit<8> b; bit<8> r; bit<8> sa; bit<8> sr; }
struct headers { ethernet_t eth; s_t s; }
struct metadata { }

enum bit<8> Op_t {
    SADD = 0x10,
    SSUB = 0x20
}
const int OUT_PORT = 2;

parser P(packet_in pkt, out headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.eth);
        pkt.extract(hdr.s);
        transition select(hdr.s.op) {
            Op_t.SADD: accept;
            Op_t.SSUB: accept;
        }
    }
}

control VC(inout headers hdr, inout metadata meta) { apply { } }

control I(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    apply {
        int<8> x = (int<8>)hdr.s.sa;     // signed view of the byte
        if (hdr.s.op == Op_t.SADD) {
            hdr.s.r = hdr.s.a |+| hdr.s.b;
            x = x |+| 8s100;
        } else {
            hdr.s.r = hdr.s.a |-| hdr.s.b;
            x = x |-| 8s100;
        }
        hdr.s.sr = (bit<8>)x;
        sm.egress_spec = OUT_PORT;
        if (sm.parser_error != error.NoError) { mark_to_drop(sm); }
    }
}

control E(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout metadata meta) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr.eth); pkt.emit(hdr.s); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
