// A parser instantiated inside another (P4_16 spec 13.x, "invoking parsers"): `L3() l3p;`
// then l3p.apply(pkt, hdr.l3, etherType) in two states; arguments copied in and out; when
// the sub-parser rejects or sets an error the calling parser stops there too.
#include <core.p4>
#include <v1model.p4>

error { TtlZero }

header ethernet_t { bit<48> dst; bit<48> src; bit<16> etherType; }
header vlan_t { bit<16> tci; bit<16> etherType; }
header ip_t { bit<8> proto; bit<8> ttl; }
struct l3_t { ip_t ip; }
struct headers { ethernet_t eth; vlan_t vlan; l3_t l3; }
struct metadata { }

parser L3(packet_in pkt, inout l3_t l3, in bit<16> etype) {
    state start {
        transition select(etype) {
            0x0800: parse_ip;
            0x0bad: reject;
            default: accept;
        }
    }
    state parse_ip {
        pkt.extract(l3.ip);
        verify(l3.ip.ttl != 0, error.TtlZero);
        transition accept;
    }
}

parser P(packet_in pkt, out headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    L3() l3p;
    state start {
        pkt.extract(hdr.eth);
        transition select(hdr.eth.etherType) {
            0x8100: parse_vlan;
            default: parse_l3;
        }
    }
    state parse_vlan {
        pkt.extract(hdr.vlan);
        l3p.apply(pkt, hdr.l3, hdr.vlan.etherType);
        hdr.vlan.tci = 0x0abc;  // not reached when l3p rejects
        transition accept;
    }
    state parse_l3 {
        l3p.apply(pkt, hdr.l3, hdr.eth.etherType);
        transition accept;
    }
}

control VC(inout headers hdr, inout metadata meta) { apply { } }

control I(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 2;
        if (sm.parser_error == error.TtlZero) {
            sm.egress_spec = 3;
        } else if (hdr.l3.ip.isValid()) {
            hdr.l3.ip.ttl = hdr.l3.ip.ttl - 1;
        }
    }
}

control E(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout metadata meta) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr.eth); pkt.emit(hdr.vlan); pkt.emit(hdr.l3); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
