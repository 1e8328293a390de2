// `exit` inside an action (P4_16 spec 12.5): the copy-out of the `out`/`inout` arguments of
// the action and of every action calling it still happens; nothing after the exit runs.
#include <core.p4>
#include <v1model.p4>

header ethernet_t { bit<48> dst; bit<48> src; bit<16> etherType; }
header t_t { bit<8> op; bit<8> a; bit<8> b; bit<8> c; bit<8> r; }
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
    action set_and_exit(inout bit<8> x, out bit<8> y) {
        x = x + 1;
        y = 0x42;
        exit;
    }
    action outer(inout bit<8> z) {
        z = 0x10;
        set_and_exit(hdr.t.b, hdr.t.c);
        z = 0xEE;
    }
    action maybe_exit(inout bit<8> x) {
        x = 0x33;
        if (x == hdr.t.r) {
            exit;
        }
        x = 0x44;
    }
    apply {
        sm.egress_spec = 2;
        if (hdr.t.op == 1) {
            set_and_exit(hdr.t.a, hdr.t.b);
        } else if (hdr.t.op == 2) {
            outer(hdr.t.a);
        } else {
            maybe_exit(hdr.t.a);
        }
        hdr.t.r = 0xFF;
    }
}

control E(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout metadata meta) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr.eth); pkt.emit(hdr.t); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
