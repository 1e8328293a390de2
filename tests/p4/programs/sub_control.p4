// Controls instantiated inside another control (P4_16 spec 10.3, 13): `Route() r1;` then
// r1.apply(hdr, sm), arguments copied in and out (also after an exit inside, spec 12.5);
// the instance's tables are named under it (I.r1.fwd), as p4c names them.
#include <core.p4>
#include <v1model.p4>

header ethernet_t { bit<48> dst; bit<48> src; bit<16> etherType; }
header t_t { bit<8> k; bit<8> a; bit<8> b; bit<8> n; }
struct headers { ethernet_t eth; t_t t; }
struct metadata { }

control Count(inout bit<8> n, in bit<8> step) {
    apply { n = n + step; }
}

control Route(inout headers hdr, inout standard_metadata_t sm) {
    Count() cnt;
    action to(bit<9> port) { sm.egress_spec = port; }
    action stop() { hdr.t.b = 0xEE; exit; }
    table fwd {
        key = { hdr.t.k: exact; }
        actions = { to; stop; NoAction; }
        default_action = NoAction();
    }
    apply {
        cnt.apply(hdr.t.n, 1);
        fwd.apply();
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
    Route() r1;
    Count() c2;
    apply {
        sm.egress_spec = 9;
        r1.apply(hdr, sm);
        c2.apply(hdr.t.a, 0x10);
        hdr.t.b = 0x11;
    }
}

control E(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout metadata meta) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr.eth); pkt.emit(hdr.t); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
