/* T2NA egress intrinsic metadata reaches egress with Tofino2's widths: the egress control
 * copies enq_tstamp, deq_timedelta (32 bits each), egress_qid, enq_qdepth and pkt_length
 * into a header after Ethernet (tests/p4/test_t2na.py). */
#include <core.p4>
#include <t2na.p4>

header ethernet_t {
    bit<48> dstAddr;
    bit<48> srcAddr;
    bit<16> etherType;
}

header stamp_t {
    bit<32> enq_tstamp;
    bit<32> deq_timedelta;
    bit<32> enq_qdepth;
    bit<16> pkt_length;
    bit<16> egress_qid;
}

struct headers_t {
    ethernet_t ethernet;
    stamp_t    stamp;
}

struct meta_t {
}

parser IgParser(packet_in pkt, out headers_t hdr, out meta_t meta,
                out ingress_intrinsic_metadata_t ig_intr_md) {
    state start {
        pkt.extract(ig_intr_md);
        pkt.advance(PORT_METADATA_SIZE);
        pkt.extract(hdr.ethernet);
        pkt.extract(hdr.stamp);
        transition accept;
    }
}

control Ig(inout headers_t hdr, inout meta_t meta,
           in ingress_intrinsic_metadata_t ig_intr_md,
           in ingress_intrinsic_metadata_from_parser_t ig_prsr_md,
           inout ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md,
           inout ingress_intrinsic_metadata_for_tm_t ig_tm_md) {
    apply {
        ig_tm_md.ucast_egress_port = 2;
    }
}

control IgDeparser(packet_out pkt, inout headers_t hdr, in meta_t meta,
                   in ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md) {
    apply {
        pkt.emit(hdr.ethernet);
        pkt.emit(hdr.stamp);
    }
}

parser EgParser(packet_in pkt, out headers_t hdr, out meta_t meta,
                out egress_intrinsic_metadata_t eg_intr_md) {
    state start {
        pkt.extract(eg_intr_md);
        pkt.extract(hdr.ethernet);
        pkt.extract(hdr.stamp);
        transition accept;
    }
}

control Eg(inout headers_t hdr, inout meta_t meta,
           in egress_intrinsic_metadata_t eg_intr_md,
           in egress_intrinsic_metadata_from_parser_t eg_prsr_md,
           inout egress_intrinsic_metadata_for_deparser_t eg_dprsr_md,
           inout egress_intrinsic_metadata_for_output_port_t eg_oport_md) {
    apply {
        hdr.stamp.enq_tstamp = eg_intr_md.enq_tstamp;
        hdr.stamp.deq_timedelta = eg_intr_md.deq_timedelta;
        hdr.stamp.enq_qdepth = (bit<32>)eg_intr_md.enq_qdepth;
        hdr.stamp.pkt_length = eg_intr_md.pkt_length;
        hdr.stamp.egress_qid = (bit<16>)eg_intr_md.egress_qid;
    }
}

control EgDeparser(packet_out pkt, inout headers_t hdr, in meta_t meta,
                   in egress_intrinsic_metadata_for_deparser_t eg_dprsr_md) {
    apply {
        pkt.emit(hdr.ethernet);
        pkt.emit(hdr.stamp);
    }
}

Pipeline(IgParser(), Ig(), IgDeparser(), EgParser(), Eg(), EgDeparser()) pipe;

Switch(pipe) main;
