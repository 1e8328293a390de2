// Parser value sets (P4_16 spec 12.11): value_set<bit<16>> on one select key and
// value_set<struct> on two, written by the control plane (bmv2's pvs_add/pvs_remove/pvs_clear).
#include <core.p4>
#include <v1model.p4>

header ethernet_t { bit<48> dst; bit<48> src; bit<16> etherType; }
header tag_t { bit<8> proto; bit<8> port; bit<8> seen; }
struct headers { ethernet_t eth; tag_t tag; }
struct metadata { bit<8> how; }
struct pair_t { bit<8> proto; bit<8> port; }

const bit<16> TYPE_IPV4 = 0x0800;

parser P(packet_in pkt, out headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    value_set<bit<16>>(4) tag_types;
    value_set<pair_t>(2) special;
    state start {
        pkt.extract(hdr.eth);
        transition select(hdr.eth.etherType) {
            TYPE_IPV4: accept;
            tag_types: parse_tag;
            default: accept;
        }
    }
    state parse_tag {
        pkt.extract(hdr.tag);
        transition select(hdr.tag.proto, hdr.tag.port) {
            (8w1, 8w1): one;
            special: marked;
            default: accept;
        }
    }
    state one { meta.how = 1; transition accept; }
    state marked { meta.how = 2; transition accept; }
}

control VC(inout headers hdr, inout metadata meta) { apply { } }

control I(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    apply {
        if (hdr.tag.isValid()) {
            hdr.tag.seen = 0x10 | meta.how;
            sm.egress_spec = 2;
        } else {
            sm.egress_spec = 1;
        }
    }
}

control E(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout metadata meta) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr.eth); pkt.emit(hdr.tag); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
