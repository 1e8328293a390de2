/* symphony-emu data plane (P4_16, v1model).
 *
 * Symphony (arXiv 2604.16880): the switch tracks each job's ring-step progress and
 * ECN-marks the DATA packets of flows that run ahead of the slowest flow, so that DCQCN
 * at their senders slows them down and the lagging flows catch up.
 * The algorithm is docs/DESIGN.md section 4; the wire format is docs/DESIGN.md section 3.
 *
 * Both switch targets run this file: the embedded software switch (emu/embedded) and
 * bmv2 (p4c --target bmv2 --arch v1model).
 */
#include <core.p4>
#include <v1model.p4>

#include "include/headers.p4"

/*************************************************************************
 *********************** P A R S E R  ************************************
 *************************************************************************/

parser MyParser(packet_in packet,
                out headers hdr,
                inout metadata meta,
                inout standard_metadata_t standard_metadata) {

    state start {
        transition parse_ethernet;
    }

    state parse_ethernet {
        packet.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) {
            TYPE_IPV4: parse_ipv4;
            default: accept;
        }
    }

    state parse_ipv4 {
        packet.extract(hdr.ipv4);
        verify(hdr.ipv4.version == 4, error.IPv4BadVersion);
        verify(hdr.ipv4.ihl == 5, error.IPv4OptionsNotSupported);
        transition select(hdr.ipv4.protocol) {
            PROTO_UDP: parse_udp;
            default: accept;
        }
    }

    state parse_udp {
        packet.extract(hdr.udp);
        transition select(hdr.udp.dstPort) {
            CTH_UDP_PORT: parse_cth;
            default: accept;
        }
    }

    state parse_cth {
        packet.extract(hdr.cth);
        transition accept;
    }
}

/*************************************************************************
 ************   C H E C K S U M    V E R I F I C A T I O N   *************
 *************************************************************************/

control MyVerifyChecksum(inout headers hdr, inout metadata meta) {
    apply {
        verify_checksum(
            hdr.ipv4.isValid(),
            { hdr.ipv4.version,
              hdr.ipv4.ihl,
              hdr.ipv4.dscp,
              hdr.ipv4.ecn,
              hdr.ipv4.totalLen,
              hdr.ipv4.identification,
              hdr.ipv4.flags,
              hdr.ipv4.fragOffset,
              hdr.ipv4.ttl,
              hdr.ipv4.protocol,
              hdr.ipv4.srcAddr,
              hdr.ipv4.dstAddr },
            hdr.ipv4.hdrChecksum,
            HashAlgorithm.csum16);
    }
}

/*************************************************************************
 **************  I N G R E S S   P R O C E S S I N G   *******************
 *************************************************************************/

control MyIngress(inout headers hdr,
                  inout metadata meta,
                  inout standard_metadata_t standard_metadata) {

    /* Symphony progress tracker (docs/DESIGN.md section 4). */
    register<bit<16>>(FLOW_SLOTS) flow_step;   /* [job * MAX_RANKS + rank]: newest step of the flow */
    register<bit<16>>(STEP_SLOTS) step_count;  /* [job * STEP_WINDOW + step % STEP_WINDOW]: flows in step */
    register<bit<16>>(MAX_JOBS)   frontier;    /* [job]: newest step every expected flow has entered */

    counter(MAX_PORTS, CounterType.packets) drops;          /* by ingress port: every ingress drop */
    counter(MAX_PORTS, CounterType.packets) parser_errors;  /* by ingress port: malformed headers */

    bit<16> expected_flows = 0;

    action drop() {
        drops.count((bit<32>)standard_metadata.ingress_port);
        mark_to_drop(standard_metadata);
    }

    action ipv4_forward(macAddr_t srcAddr, macAddr_t dstAddr, egressSpec_t port) {
        standard_metadata.egress_spec = port;
        hdr.ethernet.srcAddr = srcAddr;
        hdr.ethernet.dstAddr = dstAddr;
        hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
    }

    table ipv4_lpm {
        key = {
            hdr.ipv4.dstAddr: lpm;
        }
        actions = {
            ipv4_forward;
            drop;
        }
        size = 1024;
        default_action = drop();
    }

    action set_symphony_config(bit<16> flows, bit<16> lead_threshold, bit<32> slope,
                               bit<32> queue_gate, bit<8> mode) {
        meta.tracked = 1;
        expected_flows = flows;
        meta.lead_threshold = lead_threshold;
        meta.slope = slope;
        meta.queue_gate = queue_gate;
        meta.mode = mode;
        meta.job_index = (bit<32>)hdr.cth.job_id;
    }

    action untracked() {
        meta.tracked = 0;
    }

    table symphony_config {
        key = {
            hdr.cth.job_id: exact;
        }
        actions = {
            set_symphony_config;
            untracked;
        }
        size = MAX_JOBS;
        default_action = untracked();
    }

    apply {
        meta.tracked = 0;
        meta.lead = 0;
        if (standard_metadata.parser_error != error.NoError) {
            parser_errors.count((bit<32>)standard_metadata.ingress_port);
            drop();
        } else if (standard_metadata.checksum_error == 1) {
            parser_errors.count((bit<32>)standard_metadata.ingress_port);
            drop();
        } else if (!hdr.ipv4.isValid()) {
            drop();
        } else if (hdr.ipv4.ttl <= 1) {
            drop();
        } else {
            ipv4_lpm.apply();
            if (hdr.cth.isValid() && hdr.cth.type == CTH_TYPE_DATA
                    && hdr.cth.src_rank < MAX_RANKS) {
                symphony_config.apply();
            }
            if (meta.tracked == 1) {
                bit<32> flow_index = meta.job_index * MAX_RANKS + (bit<32>)hdr.cth.src_rank;
                bit<32> job_base = meta.job_index * STEP_WINDOW;
                bit<16> step = hdr.cth.step;
                bit<16> last_step;
                bit<16> front;
                bit<16> count;
                flow_step.read(last_step, flow_index);
                frontier.read(front, meta.job_index);

                /* 1. A newer step on this flow (RFC 1982 serial arithmetic). */
                bit<16> advance = step - last_step;
                if (advance != 0 && advance < 0x8000) {
                    flow_step.write(flow_index, step);
                    bit<32> slot = job_base + (bit<32>)(step & (STEP_WINDOW - 1));
                    step_count.read(count, slot);
                    step_count.write(slot, count + 1);
                }

                /* 2. Advance the frontier by one once every expected flow entered it. */
                bit<32> next_slot = job_base + (bit<32>)((front + 1) & (STEP_WINDOW - 1));
                step_count.read(count, next_slot);
                if (count >= expected_flows) {
                    step_count.write(job_base + (bit<32>)(front & (STEP_WINDOW - 1)), 0);
                    front = front + 1;
                    frontier.write(meta.job_index, front);
                }

                /* 3. Lead over the slowest flow, carried to egress. */
                meta.lead = step - front;
            }
        }
    }
}

/*************************************************************************
 ****************  E G R E S S   P R O C E S S I N G   *******************
 *************************************************************************/

control MyEgress(inout headers hdr,
                 inout metadata meta,
                 inout standard_metadata_t standard_metadata) {

    counter(MAX_JOBS, CounterType.packets) symphony_marks;  /* [job]: CE set by Symphony */
    counter(MAX_JOBS, CounterType.packets) queue_marks;     /* [job]: CE set on queue depth */

    bit<1>  ecn_enabled = 0;
    bit<19> ecn_threshold = 0;

    /* Queue-depth ECN marking threshold (packets) per egress port, as a switch
     * configured for DCQCN marks on queue length (DCQCN, SIGCOMM 2015, section 3). */
    action set_ecn_threshold(bit<19> threshold) {
        ecn_enabled = 1;
        ecn_threshold = threshold;
    }

    table queue_ecn {
        key = {
            standard_metadata.egress_port: exact;
        }
        actions = {
            set_ecn_threshold;
            NoAction;
        }
        size = MAX_PORTS;
        default_action = NoAction();
    }

    apply {
        if (hdr.ipv4.isValid()) {
            queue_ecn.apply();
            bool ect = hdr.ipv4.ecn == ECN_ECT0 || hdr.ipv4.ecn == ECN_ECT1;
            if (ect && ecn_enabled == 1 && standard_metadata.enq_qdepth >= ecn_threshold) {
                hdr.ipv4.ecn = ECN_CE;
                if (meta.tracked == 1) {
                    queue_marks.count(meta.job_index);
                }
            } else if (ect && meta.tracked == 1 && meta.mode == MODE_SYMPHONY
                       && meta.lead < 0x8000 && meta.lead > meta.lead_threshold
                       && (bit<32>)standard_metadata.enq_qdepth >= meta.queue_gate) {
                /* 4. Mark with probability min(1, (lead - T) * slope). */
                bit<32> probability = (bit<32>)(meta.lead - meta.lead_threshold) * meta.slope;
                bit<16> draw;
                random(draw, 0, 0xFFFF);
                if ((bit<32>)draw < probability) {
                    hdr.ipv4.ecn = ECN_CE;
                    symphony_marks.count(meta.job_index);
                }
            }
        }
    }
}

/*************************************************************************
 *************   C H E C K S U M    C O M P U T A T I O N   **************
 *************************************************************************/

control MyComputeChecksum(inout headers hdr, inout metadata meta) {
    apply {
        update_checksum(
            hdr.ipv4.isValid(),
            { hdr.ipv4.version,
              hdr.ipv4.ihl,
              hdr.ipv4.dscp,
              hdr.ipv4.ecn,
              hdr.ipv4.totalLen,
              hdr.ipv4.identification,
              hdr.ipv4.flags,
              hdr.ipv4.fragOffset,
              hdr.ipv4.ttl,
              hdr.ipv4.protocol,
              hdr.ipv4.srcAddr,
              hdr.ipv4.dstAddr },
            hdr.ipv4.hdrChecksum,
            HashAlgorithm.csum16);
    }
}

/*************************************************************************
 ***********************  D E P A R S E R  *******************************
 *************************************************************************/

control MyDeparser(packet_out packet, in headers hdr) {
    apply {
        packet.emit(hdr.ethernet);
        packet.emit(hdr.ipv4);
        packet.emit(hdr.udp);
        packet.emit(hdr.cth);
    }
}

/*************************************************************************
 ***********************  S W I T C H  *******************************
 *************************************************************************/

V1Switch(
    MyParser(),
    MyVerifyChecksum(),
    MyIngress(),
    MyEgress(),
    MyComputeChecksum(),
    MyDeparser()
) main;
