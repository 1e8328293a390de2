// Skipping bytes in a parser: advance with a run-time length, lookahead as a statement (a
// length check only) and extract<T>(_) (P4_16 spec 12.8.1-12.8.3). len.skip counts the bytes
// to skip; len.kind 1 skips an opt_t more, 2 advances by len.skip bits (not whole bytes:
// ParserInvalidArgument, port 4); PacketTooShort goes to port 3.
#include <core.p4>
#include <v1model.p4>

header ethernet_t { bit<48> dst; bit<48> src; bit<16> etherType; }
header len_t { bit<8> skip; bit<8> kind; }
header tail_t { bit<8> t; }
header opt_t { bit<16> o; }
struct headers { ethernet_t eth; len_t len; tail_t tail; }
struct metadata { }

parser P(packet_in pkt, out headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.eth);
        pkt.extract(hdr.len);
        transition select(hdr.len.kind) {
            2: bits;
            default: bytes;
        }
    }
    state bytes {
        pkt.advance((bit<32>)hdr.len.skip << 3);
        pkt.lookahead<tail_t>();
        transition select(hdr.len.kind) {
            1: skip_opt;
            default: take;
        }
    }
    state bits {
        pkt.advance((bit<32>)hdr.len.skip);
        transition take;
    }
    state skip_opt {
        pkt.extract<opt_t>(_);
        transition take;
    }
    state take {
        pkt.extract(hdr.tail);
        transition accept;
    }
}

control VC(inout headers hdr, inout metadata meta) { apply { } }

control I(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 2;
        if (sm.parser_error == error.PacketTooShort) {
            sm.egress_spec = 3;
        } else if (sm.parser_error == error.ParserInvalidArgument) {
            sm.egress_spec = 4;
        }
    }
}

control E(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout metadata meta) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr.eth); pkt.emit(hdr.len); pkt.emit(hdr.tail); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
