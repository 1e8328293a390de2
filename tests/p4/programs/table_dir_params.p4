// Directional parameters of table actions (P4_16 spec 14.2.1.2): bound in the table's
// actions list (`count_into(hdr.t.a)`), followed by the action data the control plane gives.
#include <core.p4>
#include <v1model.p4>

header ethernet_t { bit<48> dst; bit<48> src; bit<16> etherType; }
header t_t { bit<8> k; bit<8> a; bit<8> b; }
struct headers { ethernet_t eth; t_t t; }
struct metadata { }

parser P(packet_in pkt, out headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.eth);
        pkt.extract(hdr.t);
        transition accept;
    }
}

control VC(inout headers hdr, inout metadata meta) { apply { } }

control I(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    action count_into(inout bit<8> c, bit<8> step) { c = c + step; }
    action put(out bit<8> o) { o = 0x5a; }
    table t {
        key = { hdr.t.k: exact; }
        actions = { count_into(hdr.t.a); put(hdr.t.b); }
        default_action = count_into(hdr.t.a, 0x10);
    }
    apply {
        sm.egress_spec = 2;
        t.apply();
    }
}

control E(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout metadata meta) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr.eth); pkt.emit(hdr.t); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
