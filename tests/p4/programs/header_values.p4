// Headers and structs as values (P4_16 spec 8.11-8.13, 6.8): header and struct locals
// (uninitialised: invalid / 0), initialised from another value, `inout`/`out` header and
// struct arguments (copied in and out), list initialisers `{a, b}` (a header assigned one
// becomes valid), struct-valued initialisers `{b = x, a = y}`, `?:` over headers.
#include <core.p4>
#include <v1model.p4>

header ethernet_t { bit<48> dst; bit<48> src; bit<16> etherType; }
header v_t { bit<8> x; bit<8> y; }
struct pair_t { bit<8> a; bit<8> b; }
struct headers { ethernet_t eth; v_t p; v_t q; v_t r; }
struct metadata { pair_t m; }

void swap_hdr(inout v_t a, inout v_t b) {
    v_t t = a;
    a = b;
    b = t;
}

void fill(out pair_t o, in bit<8> v) {
    o = {v, v + 1};
}

parser P(packet_in pkt, out headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.eth);
        pkt.extract(hdr.p);
        pkt.extract(hdr.q);
        transition accept;
    }
}

control VC(inout headers hdr, inout metadata meta) { apply { } }

control I(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 2;
        swap_hdr(hdr.p, hdr.q);
        fill(meta.m, hdr.p.x);
        v_t loc;
        if (!loc.isValid()) {
            hdr.p.y = hdr.p.y | 0x80;
        }
        if (hdr.q.x != 0xff) {
            hdr.r = {meta.m.a, meta.m.b};
        }
        pair_t cp = { b = meta.m.b, a = meta.m.a };
        cp.a = 0;
        hdr.q.x = cp.b;
        hdr.q.y = meta.m.a + cp.a;
        v_t pick = hdr.q.x == 0x31 ? hdr.r : hdr.p;
        hdr.eth.etherType = (bit<16>)pick.y;
    }
}

control E(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout metadata meta) { apply { } }
control D(packet_out pkt, in headers hdr) {
    apply { pkt.emit(hdr.eth); pkt.emit(hdr.p); pkt.emit(hdr.q); pkt.emit(hdr.r); }
}
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
