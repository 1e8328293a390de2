// The lvalue of an out/inout argument is evaluated once, before the call, left to right with
// the other arguments, and the copy-out writes that location (P4_16 spec 6.8), though the
// callee changes the run-time index it was chosen by: each call below passes an index
// hdr.idx.X as its first inout argument, increments it, and adds to s[X].x (the sub-control:
// to its high nibble, a slice), the second inout argument. Were the lvalue evaluated again at copy-out, each
// addition would land in s[X + 1] (past the end: nowhere).
#include <core.p4>
#include <v1model.p4>

header ethernet_t { bit<48> dst; bit<48> src; bit<16> etherType; }
header idx_t { bit<8> i; bit<8> j; bit<8> k; bit<8> m; }
header e_t { bit<8> x; }
struct headers { ethernet_t eth; idx_t idx; e_t[4] s; }
struct metadata { }

parser P(packet_in pkt, out headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.eth);
        pkt.extract(hdr.idx);
        pkt.extract(hdr.s.next);
        pkt.extract(hdr.s.next);
        pkt.extract(hdr.s.next);
        pkt.extract(hdr.s.next);
        transition accept;
    }
}

control VC(inout headers hdr, inout metadata meta) { apply { } }

// a function: s[j].x + 1
void add_one(inout bit<8> j, inout bit<8> v) {
    j = j + 1;
    v = v + 1;
}

// a sub-control: the high nibble of s[k].x + 4 (s[k].x + 0x40)
control Sub(inout bit<8> k, inout bit<4> v) {
    apply {
        k = k + 1;
        v = v + 4;
    }
}

control I(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    Sub() sub;
    // called directly: s[i].x + 0x10
    action bump(inout bit<8> i, inout bit<8> v) {
        i = i + 1;
        v = v + 0x10;
    }
    // a table's action, its directional arguments bound in the actions list: s[m].x + 0x80
    action tbump(inout bit<8> m, inout bit<8> v) {
        m = m + 1;
        v = v + 0x80;
    }
    table t {
        actions = { tbump(hdr.idx.m, hdr.s[hdr.idx.m].x); }
        default_action = tbump(hdr.idx.m, hdr.s[hdr.idx.m].x);
    }
    apply {
        sm.egress_spec = 2;
        bump(hdr.idx.i, hdr.s[hdr.idx.i].x);
        add_one(hdr.idx.j, hdr.s[hdr.idx.j].x);
        sub.apply(hdr.idx.k, hdr.s[hdr.idx.k].x[7:4]);
        t.apply();
    }
}

control E(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout metadata meta) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr.eth); pkt.emit(hdr.idx); pkt.emit(hdr.s); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
