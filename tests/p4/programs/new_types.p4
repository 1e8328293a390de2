// Type declarations: `type` (P4_16 spec 7.6) over bit<N>, int<N> and a typedef, with
// @p4runtime_translation; a serializable enum (spec 8.3) as a header field; all as header
// fields, a table key, an action parameter, a constant and (cast to its bit<16>, as P4_16
// requires of select and of operators) a select key and a signed comparison.
#include <core.p4>
#include <v1model.p4>

type bit<16> ethertype_t;
typedef bit<8> byte_t;
type byte_t tag_t;                    // a new type over a typedef
type int<8> delta_t;                  // signed: its comparisons are signed
@p4runtime_translation("p4.org/psa/v1/PortId_t", 32)
type bit<9> port_id_t;
enum bit<8> Kind_t { A = 1, B = 2 }

header ethernet_t { bit<48> dst; bit<48> src; ethertype_t etherType; }
header t_t { tag_t tag; delta_t d; Kind_t kind; bit<8> r; }
struct headers { ethernet_t eth; t_t t; }
struct metadata { }

const ethertype_t TYPE_T = (ethertype_t)16w0x88b5;

parser P(packet_in pkt, out headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.eth);
        transition select((bit<16>)hdr.eth.etherType) {
            (bit<16>)TYPE_T: parse_t;
            default: accept;
        }
    }
    state parse_t { pkt.extract(hdr.t); transition accept; }
}

control VC(inout headers hdr, inout metadata meta) { apply { } }

control I(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    // the port is bit<9> action data: p4c gives a @p4runtime_translation type's action data the
    // translated width (32) in P4Info, which the embedded P4Info does not (see docs/p4-subset.md)
    action fwd(bit<9> p) { port_id_t q = (port_id_t)p; sm.egress_spec = (bit<9>)q; }
    action drop() { mark_to_drop(sm); }
    table by_tag {
        key = { hdr.t.tag: exact; }
        actions = { fwd; drop; }
        size = 4;
        default_action = drop();
    }
    apply {
        if (hdr.t.isValid()) {
            delta_t zero = (delta_t)8s0;
            if ((int<8>)hdr.t.d < (int<8>)zero) { hdr.t.r = 0x01; } else { hdr.t.r = 0x02; }
            if (hdr.t.kind == Kind_t.B) { hdr.t.r = hdr.t.r | 0x10; }
            by_tag.apply();
        } else {
            sm.egress_spec = 1;
        }
    }
}

control E(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout metadata meta) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr.eth); pkt.emit(hdr.t); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
