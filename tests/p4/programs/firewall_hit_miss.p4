// t.apply().hit / .miss in conditions (P4_16 spec 14.2.2), as in the firewall exercise:
// the lookup and the chosen action run before the condition is tested, hit and miss both.
#include <core.p4>
#include <v1model.p4>

header ethernet_t { bit<48> dst; bit<48> src; bit<16> etherType; }
header fw_t { bit<8> verdict; bit<8> tag; bit<8> trace; }
struct headers { ethernet_t eth; fw_t fw; }
struct metadata { bit<8> hits; }

parser P(packet_in pkt, out headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.eth);
        pkt.extract(hdr.fw);
        transition accept;
    }
}

control VC(inout headers hdr, inout metadata meta) { apply { } }

control I(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    action allow(bit<9> port) {
        sm.egress_spec = port;             // the first statement of the first action
        hdr.fw.verdict = 0x01;
        meta.hits = meta.hits + 1;
    }
    action deny() { mark_to_drop(sm); }
    table acl {
        key = { hdr.eth.src: exact; }
        actions = { allow; deny; NoAction; }
        default_action = NoAction();
    }
    action tag(bit<8> v) { hdr.fw.tag = v; }
    table known_dst {
        key = { hdr.eth.dst: exact; sm.ingress_port: exact; }
        actions = { tag; NoAction; }
        default_action = tag(0xE0);
    }
    apply {
        if (acl.apply().hit) {
            hdr.fw.trace = hdr.fw.trace | 0x10;
        } else {
            sm.egress_spec = 3;            // unknown source: to the inspection port
            hdr.fw.verdict = 0xFF;
        }
        if (known_dst.apply().miss) {
            hdr.fw.tag = hdr.fw.tag + 1;   // after the default action: 0xE1
        } else if (meta.hits == 1 && !known_dst.apply().miss) {
            hdr.fw.trace = hdr.fw.trace | 0x02;  // a second apply, a hit again
        }
    }
}

control E(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout metadata meta) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr.eth); pkt.emit(hdr.fw); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
