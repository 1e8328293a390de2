// Copy-in/copy-out (P4_16 spec 6.8): an `in` parameter of header or struct type is a copy
// of the argument made at the call, so writing the argument's storage inside the action
// does not change what the parameter reads.
#include <core.p4>
#include <v1model.p4>

header ethernet_t { bit<48> dst; bit<48> src; bit<16> etherType; }
header t_t { bit<8> f; bit<8> g; bit<8> r1; bit<8> r2; bit<8> r3; }
struct pair_t { bit<8> a; bit<8> b; }
struct headers { ethernet_t eth; t_t t; }
struct metadata { pair_t p; }

// h.g as it was at the call, though the caller's field is written first
bit<8> old_g(in t_t h, inout bit<8> g) {
    g = 0x77;
    return h.g;
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
    action read_after_write(in t_t h) {
        hdr.t.f = 0x99;
        hdr.t.r1 = h.f;
    }
    action swap(in pair_t q) {
        meta.p.a = q.b;
        meta.p.b = q.a;
    }
    action mark_and_read(in t_t h) {
        hdr.t.setInvalid();
        hdr.t.r3 = h.isValid() ? h.g : 8w0xEE;
        hdr.t.setValid();
    }
    apply {
        sm.egress_spec = 2;
        meta.p.a = hdr.t.f;
        meta.p.b = hdr.t.g;
        read_after_write(hdr.t);
        swap(meta.p);
        hdr.t.r2 = meta.p.a;
        mark_and_read(hdr.t);
        hdr.t.g = meta.p.b;
    }
}

control E(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    apply {
        if (hdr.t.r1 == 0x00) {
            hdr.t.r1 = old_g(hdr.t, hdr.t.g);
        }
    }
}
control CC(inout headers hdr, inout metadata meta) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr.eth); pkt.emit(hdr.t); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
