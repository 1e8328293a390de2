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

/* Egress queue (standard_metadata.priority) of ACK/NACK/CNP; DATA stays in queue 0. bmv2
 * runs with --priority-queues 2 (emu/targets/bmv2.py). */
const bit<3> CONTROL_PRIORITY = 1;

/* User metadata, ingress to egress. */
struct metadata {
    bit<1>  tracked;            /* 1: DATA packet of a job in symphony_config */
    bit<8>  mode;               /* MODE_BASELINE, MODE_SYMPHONY or MODE_PLACEBO */
    bit<16> expected_flows;     /* the job's ring flows crossing this switch */
    bit<19> queue_gate;         /* minimum enq_qdepth (packets) for a Symphony mark */
    bit<16> lead;               /* step - frontier (serial, 0 if not newer), DESIGN 4 step 5 */
    bit<16> tracker;            /* tracker instance: job id, or symphony_tracker's (job, port) id */
    bit<9>  out_port;           /* ingress: egress_spec after routing (symphony_tracker key) */
    bit<32> slack_bytes;        /* from symphony_slack: offsets below it count one step less */
    bit<32> mark_gap;           /* egress: from symphony_spacing, us between a flow's marks */
    bit<1>  spaced;             /* egress: 1 when symphony_spacing has the job */
    bit<9>  egress_port;        /* egress: standard_metadata.egress_port (queue_ecn key) */
    bit<19> enq_qdepth;         /* egress: standard_metadata.enq_qdepth, packets (queue_ecn key) */
    bit<17> ecn_threshold;      /* egress: from queue_ecn, 0 = no queue mark */
    bit<17> symphony_threshold; /* egress: from symphony_marking, 0 = no Symphony mark */
    bit<1>  ecmp;               /* 1: ipv4_lpm chose an ECMP group (p4/include/ecmp.p4) */
    bit<16> ecmp_group;         /* the group, from ipv4_ecmp */
    bit<16> ecmp_seed;          /* this switch's hash seed, from ipv4_ecmp */
    bit<16> l4_src;             /* UDP source port, 0 without UDP (the 5-tuple hash) */
    bit<16> l4_dst;             /* UDP destination port, 0 without UDP */
    bit<ECMP_BUCKET_BITS> ecmp_bucket; /* CRC-16 of the 5-tuple and seed, low bits */
}

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

    /* Symphony progress tracker (docs/DESIGN.md section 4). Each register is read and
     * written once per packet at one index (the v1model form of a Tofino RegisterAction). */
    register<bit<16>>(FLOW_SLOTS) flow_step;   /* [job | channel | rank, shifted]: newest step of the flow */
    register<bit<32>>(STEP_SLOTS) step_count;  /* [tracker << STEP_WINDOW_LOG2 | step % W]: step id ++ flows entered */
    register<bit<16>>(MAX_TRACKERS) frontier;  /* [tracker]: newest step every expected flow has entered */

    counter(MAX_PORTS, CounterType.packets) drops;          /* by ingress port: every ingress drop */
    counter(MAX_PORTS, CounterType.packets) parser_errors;  /* by ingress port: malformed headers */

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

#include "include/ecmp.p4"

    table ipv4_lpm {
        key = {
            hdr.ipv4.dstAddr: lpm;
        }
        actions = {
            ipv4_forward;
            ipv4_ecmp;
            drop;
        }
        size = 1024;
        default_action = drop();
    }

#include "include/ingress_tables.p4"

    apply {
        meta.tracked = 0;
        meta.lead = 0;
        meta.ecmp = 0;
        meta.tracker = 0;
        meta.slack_bytes = 0;
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
            meta.l4_src = 0;
            meta.l4_dst = 0;
            if (hdr.udp.isValid()) {
                meta.l4_src = hdr.udp.srcPort;
                meta.l4_dst = hdr.udp.dstPort;
            }
            /* An explicit path first, else the destination's route or ECMP group. */
            if (!path_pin.apply().hit) {
                ipv4_lpm.apply();
                if (meta.ecmp == 1) {
                    hash(meta.ecmp_bucket, HashAlgorithm.crc16, (bit<ECMP_BUCKET_BITS>)0,
                         { hdr.ipv4.srcAddr, hdr.ipv4.dstAddr, hdr.ipv4.protocol,
                           meta.l4_src, meta.l4_dst, meta.ecmp_seed },
                         (bit<32>)ECMP_BUCKETS);
                    ecmp_nhop.apply();
                }
            }
            /* ACK, NACK and CNP go to egress queue CONTROL_PRIORITY: bmv2 paces each of its
             * queues in packets/s, so a 58-byte ACK in the data queue would cost a 1514-byte
             * frame's slot (docs/bmv2.md). One FIFO per port on the embedded switch: no effect. */
            if (hdr.cth.isValid() && hdr.cth.type != CTH_TYPE_DATA) {
                standard_metadata.priority = CONTROL_PRIORITY;
            }
            /* A job, channel or rank outside the register arrays is never tracked (on both
             * builds: v1model would index past the arrays, T2NA would alias job_id mod MAX_JOBS). */
            if (hdr.cth.isValid() && hdr.cth.type == CTH_TYPE_DATA && hdr.cth.job_id < MAX_JOBS
                    && hdr.cth.channel < MAX_CHANNELS && hdr.cth.src_rank < MAX_RANKS) {
                symphony_config.apply();
            }
            if (meta.tracked == 1) {
                /* The tracker instance: job-wide unless symphony_tracker has (job, port). */
                meta.out_port = standard_metadata.egress_spec;
                meta.tracker = (bit<16>)hdr.cth.job_id;
                symphony_tracker.apply();
                symphony_slack.apply();
                bit<16> step = hdr.cth.step;
                bit<32> job = (bit<32>)hdr.cth.job_id;
                bit<32> tracker = (bit<32>)(meta.tracker & (MAX_TRACKERS - 1));

                /* 1. flow_step[j, c, r]: entered = newer(s, old); if so old = s. A flow is
                 *    (job, channel, rank); the step counts and the frontier are per job. */
                bit<32> flow_index = (job << (MAX_CHANNELS_LOG2 + MAX_RANKS_LOG2))
                                     | ((bit<32>)hdr.cth.channel << MAX_RANKS_LOG2)
                                     | (bit<32>)hdr.cth.src_rank;
                bit<16> last_step;
                flow_step.read(last_step, flow_index);
                bit<16> advance = step - last_step;
                bool entered = advance != 0 && advance < SERIAL_HALF;
                flow_step.write(flow_index, entered ? step : last_step);

                /* 2. step_count[j, s mod W] = step id ++ count, reset lazily when the slot
                 *    holds another step: c = flows that entered s. */
                bit<16> count = 0;
                if (entered) {
                    bit<32> slot_index = (tracker << STEP_WINDOW_LOG2)
                                         | (bit<32>)(step & (STEP_WINDOW - 1));
                    bit<32> slot;
                    step_count.read(slot, slot_index);
                    if (slot[31:16] == step) {
                        count = slot[15:0] + 1;
                    } else {
                        count = 1;
                    }
                    step_count.write(slot_index, step ++ count);
                }

                /* 3. Every expected flow has entered s. */
                bool reached = entered && count >= meta.expected_flows;

                /* 4. frontier[t] jumps to s when s is reached and newer. */
                bit<16> front;
                frontier.read(front, tracker);
                bit<16> ahead = step - front;
                if (reached && ahead != 0 && ahead < SERIAL_HALF) {
                    front = step;
                }
                frontier.write(tracker, front);

                /* 5. Lead over the slowest flow (0 when s is not newer), carried to egress;
                 *    the `slack` variant: the first slack_bytes of a step ahead count one less. */
                bit<16> lead = step - front;
                meta.lead = lead < SERIAL_HALF ? lead : 0;
                if (meta.lead != 0 && (bit<32>)hdr.cth.offset < meta.slack_bytes) {
                    meta.lead = meta.lead - 1;
                }
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
    counter(MAX_JOBS, CounterType.packets) symphony_eligible;  /* [job]: packets at the Symphony/placebo decision */
    register<bit<32>>(FLOW_SLOTS) mark_clock;  /* [job | channel | rank, shifted]: time (us) of the flow's last mark */

#include "include/egress_tables.p4"

    action mark_ce() {
        hdr.ipv4.ecn = ECN_CE;
    }

    apply {
        if (hdr.ipv4.isValid() && (hdr.ipv4.ecn == ECN_ECT0 || hdr.ipv4.ecn == ECN_ECT1)) {
            meta.egress_port = standard_metadata.egress_port;
            meta.enq_qdepth = standard_metadata.enq_qdepth;
            meta.ecn_threshold = 0;
            meta.symphony_threshold = 0;
            meta.mark_gap = 0;
            meta.spaced = 0;
            bool queue_marked = false;

            /* Queue-depth ECN (both modes): the RED-like ramp of queue_ecn. */
            queue_ecn.apply();
            if (meta.ecn_threshold != 0) {
                bit<16> draw;
                random(draw, 0, 0xFFFF);
                if ((bit<17>)draw < meta.ecn_threshold) {
                    mark_ce();
                    queue_marked = true;
                    if (meta.tracked == 1) {
                        queue_marks.count((bit<32>)hdr.cth.job_id);
                    }
                }
            }

            /* 6. Symphony (symphony mode; the placebo in placebo mode), not already marked,
             *    queue at the gate. symphony_eligible counts the packets that get here, so the
             *    runner can give the placebo the mark fraction Symphony had. */
            if (!queue_marked && meta.tracked == 1 && meta.mode != MODE_BASELINE
                    && meta.enq_qdepth >= meta.queue_gate) {
                symphony_eligible.count((bit<32>)hdr.cth.job_id);
                if (meta.mode == MODE_PLACEBO) {
                    placebo_marking.apply();
                } else {
                    symphony_marking.apply();
                }
                symphony_spacing.apply();
                if (meta.symphony_threshold != 0) {
                    bit<16> draw;
                    random(draw, 0, 0xFFFF);
                    bool hit = (bit<17>)draw < meta.symphony_threshold;
                    /* `spaced`: mark_clock[j, r] is read and written once, only for a hit. */
                    if (hit && meta.spaced == 1) {
                        bit<32> clock_index = ((bit<32>)hdr.cth.job_id << (MAX_CHANNELS_LOG2 + MAX_RANKS_LOG2))
                                              | ((bit<32>)hdr.cth.channel << MAX_RANKS_LOG2)
                                              | (bit<32>)hdr.cth.src_rank;
                        bit<32> now = (bit<32>)standard_metadata.egress_global_timestamp;
                        bit<32> cutoff = now - meta.mark_gap;
                        bit<32> last;
                        mark_clock.read(last, clock_index);
                        /* due iff now - last >= gap (serial: the difference below 2^31) */
                        bit<32> since = cutoff - last;
                        hit = since < 0x80000000;
                        mark_clock.write(clock_index, hit ? now : last);
                    }
                    if (hit) {
                        mark_ce();
                        symphony_marks.count((bit<32>)hdr.cth.job_id);
                    }
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
