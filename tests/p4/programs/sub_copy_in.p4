// Arguments of a sub-control's or sub-parser's apply are copies (P4_16 spec 6.8): an `in`
// parameter of struct or header type keeps the value its argument had at the call, though the
// block first writes that argument's storage through an `inout` parameter; `out`/`inout`
// arguments are copied back at the end, also when `exit` leaves the block (spec 12.5).
// Were a parameter an alias of its argument, every vector below would fail.
#include <core.p4>
#include <v1model.p4>

header ethernet_t { bit<48> dst; bit<48> src; bit<16> etherType; }
header t_t { bit<8> a; bit<8> b; bit<8> c; bit<8> d; bit<8> e; }
struct pair_t { bit<8> x; bit<8> y; }
struct headers { ethernet_t eth; t_t t; }
struct metadata { pair_t p; }

// d = the etherType's low byte as the caller had it (an alias would read 0x88)
parser SubP(packet_in pkt, in headers snap, inout headers h) {
    state start {
        h.eth.etherType = 0x8888;
        pkt.extract(h.t);
        h.t.d = snap.eth.etherType[7:0];
        transition accept;
    }
}

parser P(packet_in pkt, out headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    SubP() subp;
    state start {
        pkt.extract(hdr.eth);
        subp.apply(pkt, hdr, hdr);
        transition accept;
    }
}

control VC(inout headers hdr, inout metadata meta) { apply { } }

// b = a as it was at the call (an alias would read 0x55)
control Snap(in headers snap, inout headers h) {
    apply {
        h.t.a = 0x55;
        h.t.b = snap.t.a;
    }
}

// r = x as it was at the call (an alias would read x + 1)
control Pair(in pair_t old, inout pair_t p, out bit<8> r) {
    apply {
        p.x = p.x + 1;
        r = old.x;
    }
}

// a = 0xEE always (copied out after exit too); b = a as it was at the call, unless b was 7
control Ex(in t_t old, inout t_t t) {
    apply {
        t.a = 0xEE;
        if (old.b == 7) {
            exit;
        }
        t.b = old.a;
    }
}

control I(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    Snap() snap;
    Pair() pair;
    Ex() ex;
    apply {
        sm.egress_spec = 2;
        snap.apply(hdr, hdr);
        meta.p.x = hdr.t.c;
        pair.apply(meta.p, meta.p, hdr.t.e);
        hdr.t.c = meta.p.x;
        ex.apply(hdr.t, hdr.t);
        hdr.t.c = hdr.t.c + 0x10;  // not reached after the exit
    }
}

control E(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout metadata meta) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr.eth); pkt.emit(hdr.t); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
