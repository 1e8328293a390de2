// Header stacks (P4_16 spec 8.18), as in the MRI / source-routing exercises:
// - etherType 0x1234: a stack of up to 3 hops, parsed with .next until .last.bos == 1;
//   the parser records lastIndex after each hop (lastIndex is defined in a parser only, spec
//   8.18), ingress pushes one hop at the front (push_front), writes the lastIndex after the push
//   (one more, at most size - 1) and a validity mask, forwards to port 2;
// - etherType 0x1235: source routing, hs[0].port is the egress port, then pop_front(1).
#include <core.p4>
#include <v1model.p4>

header ethernet_t { bit<48> dst; bit<48> src; bit<16> etherType; }
header hop_t { bit<7> id; bit<1> bos; }
header count_t { bit<8> last_index; bit<8> valid_mask; }
struct headers { ethernet_t eth; count_t count; hop_t[3] hops; }
struct metadata { bit<8> last_index; }

parser P(packet_in pkt, out headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.eth);
        transition select(hdr.eth.etherType) {
            0x1234: parse_count;
            0x1235: parse_hop;
            default: accept;
        }
    }
    state parse_count {
        pkt.extract(hdr.count);
        transition parse_hop;
    }
    state parse_hop {
        pkt.extract(hdr.hops.next);
        meta.last_index = (bit<8>)hdr.hops.lastIndex;
        transition select(hdr.hops.last.bos) {
            1: accept;
            default: parse_hop;
        }
    }
}

control VC(inout headers hdr, inout metadata meta) { apply { } }

control I(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    apply {
        if (hdr.eth.etherType == 0x1234) {
            hdr.hops.push_front(1);
            hdr.hops[0].setValid();
            hdr.hops[0].id = 42;
            hdr.hops[0].bos = hdr.hops[1].isValid() ? 1w0 : 1w1;
            hdr.count.last_index = meta.last_index == 2 ? 8w2 : meta.last_index + 1;
            hdr.count.valid_mask = (hdr.hops[0].isValid() ? 8w1 : 8w0) | (hdr.hops[1].isValid() ? 8w2 : 8w0)
                                 | (hdr.hops[2].isValid() ? 8w4 : 8w0);
            sm.egress_spec = 2;
        } else if (hdr.eth.etherType == 0x1235 && hdr.hops[0].isValid()) {
            sm.egress_spec = (bit<9>)hdr.hops[0].id;
            hdr.hops.pop_front(1);
        } else {
            mark_to_drop(sm);
        }
    }
}

control E(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout metadata meta) { apply { } }
control D(packet_out pkt, in headers hdr) {
    apply { pkt.emit(hdr.eth); pkt.emit(hdr.count); pkt.emit(hdr.hops); }
}
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
