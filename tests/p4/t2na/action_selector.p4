/* T2NA ActionProfile and ActionSelector (tests/p4/test_t2na.py, action_selector.stf): an
 * ECMP table whose selector hashes (src, sport) with a CRC16 Hash<bit<16>>, built on an
 * ActionProfile with group limits, and a lane table with the deprecated form
 * ActionSelector(size, hash, mode) and an IDENTITY Hash<bit<4>> (the hash keeps 4 bits). */
#include <core.p4>
#include <t2na.p4>

header ethernet_t {
    bit<48> dstAddr;
    bit<48> srcAddr;
    bit<16> etherType;
}

header flow_t {
    bit<32> src;
    bit<32> dst;
    bit<16> sport;
    bit<8>  port;
    bit<8>  lane;
}

struct headers_t {
    ethernet_t eth;
    flow_t     f;
}

struct meta_t {
}

parser IgParser(packet_in pkt, out headers_t hdr, out meta_t meta,
                out ingress_intrinsic_metadata_t ig_intr_md) {
    state start {
        pkt.extract(ig_intr_md);
        pkt.advance(PORT_METADATA_SIZE);
        pkt.extract(hdr.eth);
        pkt.extract(hdr.f);
        transition accept;
    }
}

control Ig(inout headers_t hdr, inout meta_t meta,
           in ingress_intrinsic_metadata_t ig_intr_md,
           in ingress_intrinsic_metadata_from_parser_t ig_prsr_md,
           inout ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md,
           inout ingress_intrinsic_metadata_for_tm_t ig_tm_md) {
    Hash<bit<16>>(HashAlgorithm_t.CRC16) path_hash;
    ActionProfile(16) paths_ap;
    ActionSelector(paths_ap, path_hash, SelectorMode_t.FAIR, 4, 2) paths;
    Hash<bit<4>>(HashAlgorithm_t.IDENTITY) lane_hash;
    ActionSelector(8, lane_hash, SelectorMode_t.RESILIENT) lanes;

    action set_port(PortId_t p) {
        ig_tm_md.ucast_egress_port = p;
        hdr.f.port = (bit<8>)p;
    }
    action set_lane(bit<8> l) {
        hdr.f.lane = l;
    }
    table ecmp {
        key = {
            hdr.f.dst   : exact;
            hdr.f.src   : selector;
            hdr.f.sport : selector;
        }
        actions = { set_port; }
        size = 8;
        implementation = paths;
    }
    table lane_t {
        key = {
            hdr.f.dst   : exact;
            hdr.f.sport : selector;
        }
        actions = { set_lane; }
        size = 8;
        implementation = lanes;
    }
    apply {
        ig_tm_md.ucast_egress_port = 1;
        ecmp.apply();
        lane_t.apply();
    }
}

control IgDeparser(packet_out pkt, inout headers_t hdr, in meta_t meta,
                   in ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md) {
    apply {
        pkt.emit(hdr.eth);
        pkt.emit(hdr.f);
    }
}

parser EgParser(packet_in pkt, out headers_t hdr, out meta_t meta,
                out egress_intrinsic_metadata_t eg_intr_md) {
    state start {
        pkt.extract(eg_intr_md);
        transition accept;
    }
}

control Eg(inout headers_t hdr, inout meta_t meta,
           in egress_intrinsic_metadata_t eg_intr_md,
           in egress_intrinsic_metadata_from_parser_t eg_prsr_md,
           inout egress_intrinsic_metadata_for_deparser_t eg_dprsr_md,
           inout egress_intrinsic_metadata_for_output_port_t eg_oport_md) {
    apply { }
}

control EgDeparser(packet_out pkt, inout headers_t hdr, in meta_t meta,
                   in egress_intrinsic_metadata_for_deparser_t eg_dprsr_md) {
    apply { }
}

Pipeline(IgParser(), Ig(), IgDeparser(), EgParser(), Eg(), EgDeparser()) pipe;
Switch(pipe) main;
