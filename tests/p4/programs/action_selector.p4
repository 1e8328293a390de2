// action_profile and action_selector (v1model): a table whose entries name a member, an
// ECMP-like table whose entries name a group and pick its member by the crc16 of the
// selector keys, and an inline action_selector with the identity hash, as bmv2 computes it.
#include <core.p4>
#include <v1model.p4>

header ethernet_t { bit<48> dst; bit<48> src; bit<16> etherType; }
header flow_t { bit<32> src; bit<32> dst; bit<8> proto; bit<16> sport; bit<16> dport; }
header out_t { bit<8> tag; bit<8> lane; }
struct headers { ethernet_t eth; flow_t f; out_t o; }
struct metadata { }

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
    action_profile(32w4) tags;
    action_selector(HashAlgorithm.crc16, 32w16, 32w14) paths;

    action set_tag(bit<8> t) { hdr.o.tag = t; }
    action set_port(bit<9> p) { sm.egress_spec = p; }
    action set_lane(bit<8> l) { hdr.o.lane = l; }
    action drop() { mark_to_drop(sm); }

    table tag_t {
        key = { hdr.f.proto: exact; }
        actions = { set_tag; NoAction; }
        implementation = tags;
        default_action = NoAction();
    }
    table ecmp {
        key = { hdr.f.dst: lpm; hdr.f.src: selector; hdr.f.sport: selector; }
        actions = { set_port; drop; }
        implementation = paths;
        default_action = drop();
    }
    table lanes {
        key = { hdr.eth.etherType: exact; hdr.f.dport: selector; }
        actions = { set_lane; NoAction; }
        implementation = action_selector(HashAlgorithm.identity, 32w8, 32w16);
        default_action = NoAction();
    }
    apply {
        tag_t.apply();
        if (ecmp.apply().hit) {
            lanes.apply();
        }
    }
}

control E(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout metadata meta) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr.eth); pkt.emit(hdr.f); pkt.emit(hdr.o); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
