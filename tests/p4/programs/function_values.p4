// Functions returning a header or a struct (P4_16 spec 10: a function returns a value of its
// return type; 6.8: an `in` header parameter is a copy): inlined by passes.InlineFunctions.
#include <core.p4>
#include <v1model.p4>

header h_t { bit<8> a; bit<8> b; bit<16> c; bit<8> d; bit<8> e; }
struct pair_t { bit<8> x; bit<8> y; }
struct headers { h_t h; }
struct metadata { }

// v with a and b swapped (r starts as a copy of v; v itself is a copy of the argument)
h_t swapped(in h_t v) {
    h_t r = v;
    r.a = v.b;
    r.b = v.a;
    return r;
}

// {x, x + 1}
pair_t successor(in bit<8> x) {
    pair_t p = { x, x + 1 };
    return p;
}

parser P(packet_in pkt, out headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}

control VC(inout headers hdr, inout metadata meta) { apply { } }

control I(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    bit<8> seven = successor(6).y;       // a call in a control-level initialiser
    apply {
        hdr.h = swapped(hdr.h);
        pair_t q = successor(hdr.h.d);
        hdr.h.e = q.y;
        if (hdr.h.c == 0) { hdr.h.c = (bit<16>)seven; }
        sm.egress_spec = 1;
    }
}

control E(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout metadata meta) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr.h); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
