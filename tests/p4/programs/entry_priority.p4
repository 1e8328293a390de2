// `@priority(n)` on const entries (p4c's bmv2 back end: the smaller n wins, an entry without
// one gets its position 1, 2, ...; p4c testdata table-entries-priority-bmv2.p4), `@name` on a
// key (its control-plane name), and core.p4's include guard _CORE_P4_ as p4c defines it.
#include <core.p4>
#include <v1model.p4>

#ifdef _CORE_P4_
const bit<8> GUARD = 1;
#else
const bit<8> GUARD = 0;
#endif

header ethernet_t { bit<48> dst; bit<48> src; bit<16> etherType; }
header h_t { bit<16> t; bit<8> k; bit<8> n; bit<8> guard; }
struct headers { ethernet_t eth; h_t h; }
struct metadata { }

parser P(packet_in pkt, out headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.eth);
        pkt.extract(hdr.h);
        transition accept;
    }
}

control VC(inout headers hdr, inout metadata meta) { apply { } }

control I(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    action to(bit<9> port) { sm.egress_spec = port; }
    action set_n(bit<8> v) { hdr.h.n = v; }
    table t_ternary {
        key = { hdr.h.t : ternary; }
        actions = { to; }
        default_action = to(4);
        const entries = {
            0x1111 &&& 0xF    : to(1) @priority(3);
            0x1181            : to(2);
            0x1181 &&& 0xF00F : to(3) @priority(1);
        }
    }
    table named {
        key = { hdr.h.k : exact @name("kind"); }
        actions = { set_n; NoAction; }
        default_action = NoAction();
    }
    apply {
        t_ternary.apply();
        named.apply();
        hdr.h.guard = GUARD;
    }
}

control E(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout metadata meta) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr.eth); pkt.emit(hdr.h); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
