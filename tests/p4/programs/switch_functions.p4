// switch on action_run and on a value, functions with return, exit (P4_16 spec 12.7, 10, 12.5).
// Header op_t: op selects what ingress does; a and b are operands; r the result.
#include <core.p4>
#include <v1model.p4>

header ethernet_t { bit<48> dst; bit<48> src; bit<16> etherType; }
header op_t { bit<8> op; bit<8> a; bit<8> b; bit<8> r; bit<8> trace; }
struct headers { ethernet_t eth; op_t op; }
struct metadata { bit<8> m; }

const bit<8> OP_ADD = 1;
const bit<8> OP_MAX = 2;

bit<8> max8(in bit<8> x, in bit<8> y) {
    if (x > y) {
        return x;
    }
    return y;
}

bit<8> add_sat(in bit<8> x, in bit<8> y) {
    bit<9> s = (bit<9>)x + (bit<9>)y;
    if (s > 255) { return 255; }
    return s[7:0];
}

void mark(inout bit<8> t, in bit<8> bit_value) {
    t = t | bit_value;
}

parser P(packet_in pkt, out headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.eth);
        pkt.extract(hdr.op);
        transition accept;
    }
}

control VC(inout headers hdr, inout metadata meta) { apply { } }

control I(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    action to_port(bit<9> port) { sm.egress_spec = port; }
    action reflect() { sm.egress_spec = sm.ingress_port; }
    action stop() { sm.egress_spec = 9; exit; }
    table route {
        key = { hdr.eth.dst: exact; }
        actions = { to_port; reflect; stop; NoAction; }
        default_action = NoAction();
    }
    apply {
        switch (route.apply().action_run) {
            to_port: {
                mark(hdr.op.trace, 1);
            }
            reflect: {
                mark(hdr.op.trace, 2);
            }
            default: {
                mark(hdr.op.trace, 4);
                sm.egress_spec = 3;
            }
        }
        switch (hdr.op.op) {
            OP_ADD: { hdr.op.r = add_sat(hdr.op.a, hdr.op.b); }
            OP_MAX: { hdr.op.r = max8(hdr.op.a, hdr.op.b) + 1; }
            7:
            8: { hdr.op.r = 0x78; exit; }
            default: { hdr.op.r = 0xEE; }
        }
        mark(hdr.op.trace, 0x80);  // skipped after exit
    }
}

control E(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout metadata meta) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr.eth); pkt.emit(hdr.op); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
