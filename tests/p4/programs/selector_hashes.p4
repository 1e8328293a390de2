// action_selector with each hash bmv2 offers for it: crc32, csum16, xor16 (vectors in
// selector_hashes.stf), random (tests/p4/test_action_profile.py); crc16 and identity are in
// action_selector.p4. Every table selects on src ++ sport (6 bytes).
#include <core.p4>
#include <v1model.p4>

header ethernet_t { bit<48> dst; bit<48> src; bit<16> etherType; }
header f_t { bit<32> src; bit<16> sport; bit<8> p1; bit<8> p2; bit<8> p3; bit<8> p4; }
struct headers { ethernet_t eth; f_t f; }
struct metadata { }

parser P(packet_in pkt, out headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.eth);
        pkt.extract(hdr.f);
        transition accept;
    }
}

control VC(inout headers hdr, inout metadata meta) { apply { } }

control I(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    action_selector(HashAlgorithm.crc32, 32w4, 32w16) s_crc32;
    action_selector(HashAlgorithm.csum16, 32w4, 32w16) s_csum16;
    action_selector(HashAlgorithm.xor16, 32w4, 32w16) s_xor16;
    action_selector(HashAlgorithm.random, 32w4, 32w16) s_random;
    action set1(bit<8> v) { hdr.f.p1 = v; }
    action set2(bit<8> v) { hdr.f.p2 = v; }
    action set3(bit<8> v) { hdr.f.p3 = v; }
    action set4(bit<8> v) { hdr.f.p4 = v; }
    table t_crc32 {
        key = { hdr.eth.etherType: exact; hdr.f.src: selector; hdr.f.sport: selector; }
        actions = { set1; }
        implementation = s_crc32;
    }
    table t_csum16 {
        key = { hdr.eth.etherType: exact; hdr.f.src: selector; hdr.f.sport: selector; }
        actions = { set2; }
        implementation = s_csum16;
    }
    table t_xor16 {
        key = { hdr.eth.etherType: exact; hdr.f.src: selector; hdr.f.sport: selector; }
        actions = { set3; }
        implementation = s_xor16;
    }
    table t_random {
        key = { hdr.eth.etherType: exact; hdr.f.src: selector; hdr.f.sport: selector; }
        actions = { set4; }
        implementation = s_random;
    }
    apply {
        sm.egress_spec = 2;
        t_crc32.apply();
        t_csum16.apply();
        t_xor16.apply();
        t_random.apply();
    }
}

control E(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout metadata meta) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr.eth); pkt.emit(hdr.f); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
