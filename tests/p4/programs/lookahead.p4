// packet_in.lookahead<T>() (P4_16 spec 12.8.3), as in the calculator exercise: the parser
// peeks at the next bits (a bit<N> or a header's field) without consuming them.
#include <core.p4>
#include <v1model.p4>

header ethernet_t { bit<48> dst; bit<48> src; bit<16> etherType; }
header tag_t { bit<8> magic; bit<4> ver; bit<4> kind; bit<16> value; }
struct headers { ethernet_t eth; tag_t tag; }
struct metadata { bit<8> peeked; }

parser P(packet_in pkt, out headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.eth);
        meta.peeked = pkt.lookahead<bit<8>>();
        transition select(pkt.lookahead<tag_t>().magic, pkt.lookahead<tag_t>().kind) {
            (0x50, 1): parse_tag;
            default: accept;
        }
    }
    state parse_tag {
        pkt.extract(hdr.tag);
        transition accept;
    }
}

control VC(inout headers hdr, inout metadata meta) { apply { } }

control I(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    apply {
        if (sm.parser_error == error.PacketTooShort) {
            sm.egress_spec = 9;
        } else if (hdr.tag.isValid()) {
            hdr.tag.value = hdr.tag.value + (bit<16>)meta.peeked;
            sm.egress_spec = 2;
        } else {
            sm.egress_spec = 3;
        }
    }
}

control E(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout metadata meta) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr.eth); pkt.emit(hdr.tag); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
