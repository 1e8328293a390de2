// const entries (P4_16 spec 14.2.1.4), as in the calculator exercise: an exact table of
// operations, and a ternary/lpm/range table whose first matching entry wins.
#include <core.p4>
#include <v1model.p4>

header ethernet_t { bit<48> dst; bit<48> src; bit<16> etherType; }
header calc_t { bit<8> op; bit<32> a; bit<32> b; bit<32> res; bit<8> cls; }
struct headers { ethernet_t eth; calc_t c; }
struct metadata { }

const bit<8> OP_PLUS = 0x2b;   // '+'
const bit<8> OP_MINUS = 0x2d;  // '-'
const bit<8> OP_AND = 0x26;    // '&'

parser P(packet_in pkt, out headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.eth);
        pkt.extract(hdr.c);
        transition accept;
    }
}

control VC(inout headers hdr, inout metadata meta) { apply { } }

control I(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    action op_add() { hdr.c.res = hdr.c.a + hdr.c.b; }
    action op_sub() { hdr.c.res = hdr.c.a - hdr.c.b; }
    action op_and() { hdr.c.res = hdr.c.a & hdr.c.b; }
    action op_drop() { mark_to_drop(sm); }
    table calculate {
        key = { hdr.c.op: exact; }
        actions = { op_add; op_sub; op_and; op_drop; }
        const default_action = op_drop();
        const entries = {
            OP_PLUS : op_add();
            OP_MINUS : op_sub();
            OP_AND : op_and();
        }
    }
    action classify(bit<8> c) { hdr.c.cls = c; }
    table classes {
        key = { hdr.c.a: lpm; hdr.c.b: ternary; hdr.c.res: range; }
        actions = { classify; NoAction; }
        default_action = classify(0xFF);
        const entries = {
            (0x0A000000 &&& 0xFF000000, 1, _) : classify(1);     // a in 10/8, b == 1
            (0x0A000000 &&& 0xFF000000, _, 0 .. 100) : classify(2);
            (_, 0x10 &&& 0xF0, _) : classify(3);
        }
    }
    apply {
        sm.egress_spec = 2;
        calculate.apply();   // op_drop (the const default) drops the packet
        classes.apply();
    }
}

control E(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout metadata meta) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr.eth); pkt.emit(hdr.c); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
