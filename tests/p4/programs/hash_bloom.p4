// hash over tuples and structs (crc16, crc32, identity) and a register-based Bloom filter,
// as in the load-balancing and firewall exercises.
#include <core.p4>
#include <v1model.p4>

header ethernet_t { bit<48> dst; bit<48> src; bit<16> etherType; }
header flow_t { bit<32> src; bit<32> dst; bit<8> proto; bit<16> sport; bit<16> dport; }
header out_t { bit<16> h16; bit<32> h32; bit<16> ident; bit<8> bucket; bit<8> bloom_hit; }
struct pair_t { bit<32> src; bit<32> dst; }
struct headers { ethernet_t eth; flow_t f; out_t o; }
struct metadata { pair_t pair; bit<12> i0; bit<12> i1; }

parser P(packet_in pkt, out headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.eth);
        pkt.extract(hdr.f);
        pkt.extract(hdr.o);
        transition accept;
    }
}

control VC(inout headers hdr, inout metadata meta) { apply { } }

control I(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    register<bit<1>>(4096) bloom0;
    register<bit<1>>(4096) bloom1;
    apply {
        meta.pair.src = hdr.f.src;
        meta.pair.dst = hdr.f.dst;
        hash(hdr.o.h16, HashAlgorithm.crc16, 16w0,
             { hdr.f.src, hdr.f.dst, hdr.f.proto, hdr.f.sport, hdr.f.dport }, 32w65536);
        hash(hdr.o.h32, HashAlgorithm.crc32, 32w0, meta.pair, 64w4294967296);
        hash(hdr.o.ident, HashAlgorithm.identity, 16w0, { hdr.f.sport }, 32w65536);
        hash(hdr.o.bucket, HashAlgorithm.crc16, 8w10, { hdr.f.src, hdr.f.dst }, 8w4);
        hash(meta.i0, HashAlgorithm.crc16, 12w0, { hdr.f.src, hdr.f.dst }, 32w4096);
        hash(meta.i1, HashAlgorithm.crc32, 12w0, { hdr.f.src, hdr.f.dst }, 32w4096);
        if (hdr.f.proto == 1) {          // learn the pair
            bloom0.write((bit<32>)meta.i0, 1);
            bloom1.write((bit<32>)meta.i1, 1);
            hdr.o.bloom_hit = 0xAA;
        } else {                         // query it
            bit<1> v0;
            bit<1> v1;
            bloom0.read(v0, (bit<32>)meta.i0);
            bloom1.read(v1, (bit<32>)meta.i1);
            hdr.o.bloom_hit = (bit<8>)(v0 & v1);
        }
        sm.egress_spec = (bit<9>)hdr.o.bucket;
    }
}

control E(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout metadata meta) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr.eth); pkt.emit(hdr.f); pkt.emit(hdr.o); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
