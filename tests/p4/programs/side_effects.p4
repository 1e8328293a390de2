// Evaluation order (P4_16 spec 8.1, 8.5.x): operands left to right, `&&`, `||` and `?:`
// short-circuit, so a call with side effects inside an expression runs exactly when, and
// after what, the language says. t.c selects the case; bump/yes count their calls in t.n.
#include <core.p4>
#include <v1model.p4>

header ethernet_t { bit<48> dst; bit<48> src; bit<16> etherType; }
header t_t { bit<8> c; bit<8> v; bit<8> w; bit<8> n; bit<8> r1; bit<8> r2; bit<8> r3; }
struct headers { ethernet_t eth; t_t t; }
struct metadata { }

// x + 1, written back to x; one call more in n
bit<8> bump(inout bit<8> x, inout bit<8> n) {
    x = x + 1;
    n = n + 1;
    return x;
}

// a + b
bit<8> add2(in bit<8> a, in bit<8> b) {
    return a + b;
}

// always true; 0x10 more in n
bool yes(inout bit<8> n) {
    n = n + 0x10;
    return true;
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
    action hit_mark() { hdr.t.r3 = 0xAA; }
    table probe {
        key = { hdr.t.c: exact; }
        actions = { hit_mark; NoAction; }
        default_action = NoAction();
        const entries = { 4: hit_mark(); }
    }
    apply {
        sm.egress_spec = 2;
        if (hdr.t.c == 1) {
            // the left operand is read before bump writes it
            hdr.t.r1 = hdr.t.v + bump(hdr.t.v, hdr.t.n);
            hdr.t.r2 = (hdr.t.w == bump(hdr.t.w, hdr.t.n)) ? 8w1 : 8w0;
        } else if (hdr.t.c == 2) {
            // the right operand runs only when the left one does not decide
            if (hdr.t.v == 0 || yes(hdr.t.n)) { hdr.t.r1 = 1; }
            if (hdr.t.v != 0 && yes(hdr.t.n)) { hdr.t.r2 = 1; }
        } else if (hdr.t.c == 3) {
            // only the chosen arm runs
            hdr.t.r1 = hdr.t.v == 0 ? bump(hdr.t.v, hdr.t.n) : bump(hdr.t.w, hdr.t.n);
        } else if (hdr.t.c == 5) {
            // an `in` argument is copied in before the argument after it runs (spec 6.8)
            hdr.t.r1 = add2(hdr.t.v, bump(hdr.t.v, hdr.t.n));
        } else {
            // a table applied in the right operand of || only when the left one is false
            if (hdr.t.v == 1 || probe.apply().hit) { hdr.t.r2 = 0x55; }
        }
    }
}

control E(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout metadata meta) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr.eth); pkt.emit(hdr.t); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
