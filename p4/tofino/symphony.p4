/* symphony-emu data plane, Tofino2 build (P4_16, T2NA).
 *
 * The same Symphony algorithm as p4/symphony.p4 (v1model), step for step
 * (docs/DESIGN.md sections 4 and 10): each tracker register is one RegisterAction, so
 * one stateful-ALU read-modify-write per packet; register indices come from identity
 * hashes (no run-time multiplication); marking thresholds come from tables and are
 * compared with a Random draw. Headers, constants and the tables the controller
 * programs are shared with the v1model build through p4/include/, so one controller
 * (emu/routing.py, p4="tofino") programs both; queue depths are in 176-byte cells here.
 *
 * What differs from v1model, and why (docs/tofino.md): ingress metadata reaches egress
 * only in a bridged header; the IPv4 checksum is verified in the ingress parser and
 * recomputed in the egress deparser (Tofino's checksum units live there); IPv4 version
 * and options are rejected by the parser's select (no verify()); drops set drop_ctl.
 *
 * Built by the embedded switch (emu/embedded/t2na.py, `symphony-emu run --p4 tofino`) and,
 * where installed, by bf-p4c --target tofino2 --arch t2na (tests/p4/test_compile.py).
 */
#include <core.p4>
#include <t2na.p4>

#include "../include/headers.p4"

/* Register index widths: job ++ channel ++ rank, tracker << STEP_WINDOW_LOG2 | step and
 * tracker (the job id, or the per-(job, port) id of symphony_tracker). */
typedef bit<(MAX_JOBS_LOG2 + MAX_CHANNELS_LOG2 + MAX_RANKS_LOG2)> flow_index_t;
typedef bit<(MAX_TRACKERS_LOG2 + STEP_WINDOW_LOG2)> slot_index_t;
typedef bit<MAX_TRACKERS_LOG2>                  tracker_index_t;

/* Ingress -> egress: what the v1model build carries in user metadata (bridged header). */
header bridge_t {
    bit<7>  _pad0;
    bit<1>  tracked;
    bit<8>  mode;
    bit<16> lead;
    bit<5>  _pad1;
    bit<19> queue_gate;
}

struct switch_headers_t {
    bridge_t   bridge;
    ethernet_t ethernet;
    ipv4_t     ipv4;
    udp_t      udp;
    cth_t      cth;
}

/* A step_count cell: the step id and the flows that entered it (a paired 2 x 16-bit
 * register; read by the control plane as step << 16 | count, as on v1model). */
struct step_slot_t {
    bit<16> step;
    bit<16> count;
}

struct ingress_metadata_t {
    bit<1>       tracked;         /* 1: DATA packet of a job in symphony_config */
    bit<8>       mode;            /* MODE_BASELINE, MODE_SYMPHONY or MODE_PLACEBO */
    bit<16>      expected_flows;  /* the job's ring flows crossing this switch */
    bit<19>      queue_gate;      /* minimum enq_qdepth (cells) for a Symphony mark */
    bit<16>      lead;            /* step - frontier (serial, 0 if not newer) */
    bool         checksum_err;    /* the IPv4 header checksum is wrong */
    flow_index_t flow_index;
    slot_index_t slot_index;
    tracker_index_t tracker_index; /* the tracker's index in step_count and frontier */
    bit<16>      tracker;         /* job id, or symphony_tracker's (job, port) id */
    bit<9>       out_port;        /* ucast_egress_port after routing (symphony_tracker key) */
    bit<32>      slack_bytes;     /* from symphony_slack: offsets below it count one step less */
    bit<1>       entered;         /* DESIGN 4 step 1 */
    bit<16>      count;           /* DESIGN 4 step 2 */
    bit<1>       reached;         /* DESIGN 4 step 3 */
    bit<16>      front;           /* DESIGN 4 step 4 */
    bit<1>       ecmp;            /* 1: ipv4_lpm chose an ECMP group (p4/include/ecmp.p4) */
    bit<16>      ecmp_group;      /* the group, from ipv4_ecmp */
    bit<16>      ecmp_seed;       /* this switch's hash seed, from ipv4_ecmp */
    bit<16>      l4_src;          /* UDP source port, 0 without UDP (the 5-tuple hash) */
    bit<16>      l4_dst;          /* UDP destination port, 0 without UDP */
    bit<ECMP_BUCKET_BITS> ecmp_bucket; /* CRC-16 of the 5-tuple and seed, low bits */
}

struct egress_metadata_t {
    bit<1>  tracked;
    bit<8>  mode;
    bit<19> queue_gate;
    bit<16> lead;
    bit<9>  egress_port;          /* eg_intr_md.egress_port (queue_ecn key) */
    bit<19> enq_qdepth;           /* eg_intr_md.enq_qdepth, cells (queue_ecn key) */
    bit<17> ecn_threshold;        /* from queue_ecn, 0 = no queue mark */
    bit<17> symphony_threshold;   /* from symphony_marking, 0 = no Symphony mark */
    bit<32> mark_gap;             /* from symphony_spacing: ns between a flow's marks */
    bit<1>  spaced;               /* 1 when symphony_spacing has the job */
    bit<32> now;                  /* global_tstamp, ns (low 32 bits) */
    bit<32> mark_cutoff;          /* now - mark_gap: a flow whose last mark is older is due */
    flow_index_t clock_index;     /* the flow's index: job ++ channel ++ rank */
}

/*************************************************************************
 **************  I N G R E S S   ****************************************
 *************************************************************************/

parser MyIngressParser(packet_in pkt,
                       out switch_headers_t hdr,
                       out ingress_metadata_t meta,
                       out ingress_intrinsic_metadata_t ig_intr_md) {
    Checksum() ipv4_checksum;

    state start {
        pkt.extract(ig_intr_md);
        pkt.advance(PORT_METADATA_SIZE);
        /* every field of the out parameter written here (p4test: "meta may be uninitialized") */
        meta.tracked = 0;
        meta.mode = 0;
        meta.expected_flows = 0;
        meta.queue_gate = 0;
        meta.lead = 0;
        meta.checksum_err = false;
        meta.flow_index = 0;
        meta.slot_index = 0;
        meta.tracker_index = 0;
        meta.tracker = 0;
        meta.out_port = 0;
        meta.slack_bytes = 0;
        meta.entered = 0;
        meta.count = 0;
        meta.reached = 0;
        meta.front = 0;
        meta.ecmp = 0;
        meta.ecmp_group = 0;
        meta.ecmp_seed = 0;
        meta.l4_src = 0;
        meta.l4_dst = 0;
        meta.ecmp_bucket = 0;
        transition parse_ethernet;
    }

    state parse_ethernet {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) {
            TYPE_IPV4: parse_ipv4;
            default: accept;
        }
    }

    state parse_ipv4 {
        pkt.extract(hdr.ipv4);
        ipv4_checksum.add(hdr.ipv4);
        meta.checksum_err = ipv4_checksum.verify();
        /* Another IP version or IPv4 options match no case: parser_err NO_MATCH (the
         * v1model build's verify() errors). */
        transition select(hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.protocol) {
            (4, 5, PROTO_UDP): parse_udp;
            (4, 5, _): accept;
        }
    }

    state parse_udp {
        pkt.extract(hdr.udp);
        transition select(hdr.udp.dstPort) {
            CTH_UDP_PORT: parse_cth;
            default: accept;
        }
    }

    state parse_cth {
        pkt.extract(hdr.cth);
        transition accept;
    }
}

control MyIngress(inout switch_headers_t hdr,
                  inout ingress_metadata_t meta,
                  in ingress_intrinsic_metadata_t ig_intr_md,
                  in ingress_intrinsic_metadata_from_parser_t ig_prsr_md,
                  inout ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md,
                  inout ingress_intrinsic_metadata_for_tm_t ig_tm_md) {

    /* Symphony progress tracker (docs/DESIGN.md section 4): one RegisterAction each. */
    Register<bit<16>, flow_index_t>(FLOW_SLOTS, 0) flow_step;  /* newest step of the flow */
    Register<step_slot_t, slot_index_t>(STEP_SLOTS) step_count; /* step id, flows entered */
    Register<bit<16>, tracker_index_t>(MAX_TRACKERS, 0) frontier; /* newest step all entered */

    Counter<bit<32>, PortId_t>(MAX_PORTS, CounterType_t.PACKETS) drops;          /* by ingress port */
    Counter<bit<32>, PortId_t>(MAX_PORTS, CounterType_t.PACKETS) parser_errors;  /* by ingress port */

    /* Register indices as the hash unit's identity function of the concatenated fields. */
    Hash<flow_index_t>(HashAlgorithm_t.IDENTITY) flow_index_hash;
    Hash<slot_index_t>(HashAlgorithm_t.IDENTITY) slot_index_hash;
    /* ECMP bucket: CRC-16 of the 5-tuple and the seed, as the v1model build's hash(). */
    Hash<bit<ECMP_BUCKET_BITS>>(HashAlgorithm_t.CRC16) ecmp_hash;

    /* 1. entered = newer(s, old) (RFC 1982: 0 < s - old < 2^15); if so old = s. */
    RegisterAction<bit<16>, flow_index_t, bit<1>>(flow_step) enter_step = {
        void apply(inout bit<16> value, out bit<1> entered) {
            if ((int<16>)(hdr.cth.step - value) > 0) {
                value = hdr.cth.step;
                entered = 1;
            } else {
                entered = 0;
            }
        }
    };

    /* 2. c = flows that entered s; a slot holding another step restarts at 1 (lazy reset). */
    RegisterAction<step_slot_t, slot_index_t, bit<16>>(step_count) count_step = {
        void apply(inout step_slot_t slot, out bit<16> count) {
            if (slot.step == hdr.cth.step) {
                slot.count = slot.count + 1;
            } else {
                slot.step = hdr.cth.step;
                slot.count = 1;
            }
            count = slot.count;
        }
    };

    /* 4. The frontier jumps to s when every expected flow has entered it and s is newer. */
    RegisterAction<bit<16>, tracker_index_t, bit<16>>(frontier) advance_frontier = {
        void apply(inout bit<16> value, out bit<16> front) {
            if (meta.reached == 1 && (int<16>)(hdr.cth.step - value) > 0) {
                value = hdr.cth.step;
            }
            front = value;
        }
    };

    action drop() {
        drops.count(ig_intr_md.ingress_port);
        ig_dprsr_md.drop_ctl = 1;
    }

    action ipv4_forward(macAddr_t srcAddr, macAddr_t dstAddr, egressSpec_t port) {
        ig_tm_md.ucast_egress_port = port;
        hdr.ethernet.srcAddr = srcAddr;
        hdr.ethernet.dstAddr = dstAddr;
        hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
    }

#include "../include/ecmp.p4"

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

#include "../include/ingress_tables.p4"

    apply {
        meta.tracked = 0;
        meta.mode = MODE_BASELINE;
        meta.expected_flows = 0;
        meta.queue_gate = 0;
        meta.lead = 0;
        meta.ecmp = 0;
        meta.slack_bytes = 0;
        if (ig_prsr_md.parser_err != PARSER_ERROR_OK) {
            parser_errors.count(ig_intr_md.ingress_port);
            drop();
        } else if (meta.checksum_err) {
            parser_errors.count(ig_intr_md.ingress_port);
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
                    meta.ecmp_bucket = ecmp_hash.get({ hdr.ipv4.srcAddr, hdr.ipv4.dstAddr,
                                                       hdr.ipv4.protocol, meta.l4_src,
                                                       meta.l4_dst, meta.ecmp_seed });
                    ecmp_nhop.apply();
                }
            }
            /* A job, channel or rank outside the register arrays is never tracked (on both
             * builds: v1model would index past the arrays, T2NA would alias job_id mod MAX_JOBS). */
            if (hdr.cth.isValid() && hdr.cth.type == CTH_TYPE_DATA && hdr.cth.job_id < MAX_JOBS
                    && hdr.cth.channel < MAX_CHANNELS && hdr.cth.src_rank < MAX_RANKS) {
                symphony_config.apply();
            }
            if (meta.tracked == 1) {
                /* The tracker instance: job-wide unless symphony_tracker has (job, port). */
                meta.out_port = ig_tm_md.ucast_egress_port;
                meta.tracker = (bit<16>)hdr.cth.job_id;
                symphony_tracker.apply();
                symphony_slack.apply();
                meta.tracker_index = meta.tracker[MAX_TRACKERS_LOG2 - 1:0];
                meta.flow_index = flow_index_hash.get({hdr.cth.job_id[MAX_JOBS_LOG2 - 1:0],
                                                       hdr.cth.channel[MAX_CHANNELS_LOG2 - 1:0],
                                                       hdr.cth.src_rank[MAX_RANKS_LOG2 - 1:0]});
                meta.slot_index = slot_index_hash.get({meta.tracker_index,
                                                       hdr.cth.step[STEP_WINDOW_LOG2 - 1:0]});
                /* 1. */
                meta.entered = enter_step.execute(meta.flow_index);
                /* 2. */
                meta.count = 0;
                if (meta.entered == 1) {
                    meta.count = count_step.execute(meta.slot_index);
                }
                /* 3. */
                meta.reached = 0;
                if (meta.entered == 1 && meta.count >= meta.expected_flows) {
                    meta.reached = 1;
                }
                /* 4. */
                meta.front = advance_frontier.execute(meta.tracker_index);
                /* 5. lead = s - f, 0 when s is not newer than f (sign bit of the difference);
                 *    the `slack` variant: the first slack_bytes of a step ahead count one less. */
                meta.lead = hdr.cth.step - meta.front;
                if (meta.lead[15:15] == 1) {
                    meta.lead = 0;
                }
                if (meta.lead != 0 && (bit<32>)hdr.cth.offset < meta.slack_bytes) {
                    meta.lead = meta.lead - 1;
                }
            }
        }
        hdr.bridge.setValid();
        hdr.bridge._pad0 = 0;
        hdr.bridge.tracked = meta.tracked;
        hdr.bridge.mode = meta.mode;
        hdr.bridge.lead = meta.lead;
        hdr.bridge._pad1 = 0;
        hdr.bridge.queue_gate = meta.queue_gate;
    }
}

control MyIngressDeparser(packet_out pkt,
                          inout switch_headers_t hdr,
                          in ingress_metadata_t meta,
                          in ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md) {
    apply {
        pkt.emit(hdr.bridge);
        pkt.emit(hdr.ethernet);
        pkt.emit(hdr.ipv4);
        pkt.emit(hdr.udp);
        pkt.emit(hdr.cth);
    }
}

/*************************************************************************
 ****************  E G R E S S   ****************************************
 *************************************************************************/

parser MyEgressParser(packet_in pkt,
                      out switch_headers_t hdr,
                      out egress_metadata_t meta,
                      out egress_intrinsic_metadata_t eg_intr_md) {
    state start {
        pkt.extract(eg_intr_md);
        pkt.extract(hdr.bridge);
        meta.tracked = hdr.bridge.tracked;
        meta.mode = hdr.bridge.mode;
        meta.lead = hdr.bridge.lead;
        meta.queue_gate = hdr.bridge.queue_gate;
        meta.egress_port = 0;      /* set in MyEgress; written here so no field of the out */
        meta.enq_qdepth = 0;       /* parameter is left uninitialized (p4test) */
        meta.ecn_threshold = 0;
        meta.symphony_threshold = 0;
        meta.mark_gap = 0;
        meta.spaced = 0;
        meta.now = 0;
        meta.mark_cutoff = 0;
        meta.clock_index = 0;
        transition parse_ethernet;
    }

    state parse_ethernet {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) {
            TYPE_IPV4: parse_ipv4;
            default: accept;
        }
    }

    state parse_ipv4 {
        pkt.extract(hdr.ipv4);
        transition select(hdr.ipv4.protocol) {
            PROTO_UDP: parse_udp;
            default: accept;
        }
    }

    state parse_udp {
        pkt.extract(hdr.udp);
        transition select(hdr.udp.dstPort) {
            CTH_UDP_PORT: parse_cth;
            default: accept;
        }
    }

    state parse_cth {
        pkt.extract(hdr.cth);
        transition accept;
    }
}

control MyEgress(inout switch_headers_t hdr,
                 inout egress_metadata_t meta,
                 in egress_intrinsic_metadata_t eg_intr_md,
                 in egress_intrinsic_metadata_from_parser_t eg_prsr_md,
                 inout egress_intrinsic_metadata_for_deparser_t eg_dprsr_md,
                 inout egress_intrinsic_metadata_for_output_port_t eg_oport_md) {

    Counter<bit<32>, bit<8>>(MAX_JOBS, CounterType_t.PACKETS) symphony_marks;  /* [job]: CE by Symphony */
    Counter<bit<32>, bit<8>>(MAX_JOBS, CounterType_t.PACKETS) queue_marks;     /* [job]: CE on queue depth */
    Counter<bit<32>, bit<8>>(MAX_JOBS, CounterType_t.PACKETS) symphony_eligible;  /* [job]: at the mark decision */

    Random<bit<16>>() ecn_random;
    Random<bit<16>>() symphony_random;

    /* `spaced` marking: the time of each flow's last mark, one RegisterAction per packet the
     * curve draws (docs/DESIGN.md section 4). */
    Register<bit<32>, flow_index_t>(FLOW_SLOTS, 0) mark_clock;
    Hash<flow_index_t>(HashAlgorithm_t.IDENTITY) clock_index_hash;
    RegisterAction<bit<32>, flow_index_t, bit<1>>(mark_clock) space_mark = {
        void apply(inout bit<32> value, out bit<1> due) {
            if ((int<32>)(meta.mark_cutoff - value) >= 0) {
                value = meta.now;
                due = 1;
            } else {
                due = 0;
            }
        }
    };

#include "../include/egress_tables.p4"

    action mark_ce() {
        hdr.ipv4.ecn = ECN_CE;
    }

    apply {
        if (hdr.ipv4.isValid() && (hdr.ipv4.ecn == ECN_ECT0 || hdr.ipv4.ecn == ECN_ECT1)) {
            meta.egress_port = eg_intr_md.egress_port;
            meta.enq_qdepth = eg_intr_md.enq_qdepth;
            meta.ecn_threshold = 0;
            meta.symphony_threshold = 0;
            meta.mark_gap = 0;
            meta.spaced = 0;
            bool queue_marked = false;

            /* Queue-depth ECN (both modes): the RED-like ramp of queue_ecn. */
            queue_ecn.apply();
            if (meta.ecn_threshold != 0) {
                bit<16> draw = ecn_random.get();
                if ((bit<17>)draw < meta.ecn_threshold) {
                    mark_ce();
                    queue_marked = true;
                    if (meta.tracked == 1) {
                        queue_marks.count(hdr.cth.job_id);
                    }
                }
            }

            /* 6. Symphony (symphony mode; the placebo in placebo mode), not already marked,
             *    queue at the gate. symphony_eligible counts the packets that get here, so the
             *    runner can give the placebo the mark fraction Symphony had. */
            if (!queue_marked && meta.tracked == 1 && meta.mode != MODE_BASELINE
                    && meta.enq_qdepth >= meta.queue_gate) {
                symphony_eligible.count(hdr.cth.job_id);
                if (meta.mode == MODE_PLACEBO) {
                    placebo_marking.apply();
                } else {
                    symphony_marking.apply();
                }
                symphony_spacing.apply();
                if (meta.symphony_threshold != 0) {
                    bit<16> draw = symphony_random.get();
                    bit<1> hit = 0;
                    if ((bit<17>)draw < meta.symphony_threshold) {
                        hit = 1;
                    }
                    /* `spaced`: at most one mark per flow per mark_gap. */
                    if (hit == 1 && meta.spaced == 1) {
                        meta.now = eg_prsr_md.global_tstamp[31:0];
                        meta.mark_cutoff = meta.now - meta.mark_gap;
                        meta.clock_index = clock_index_hash.get({hdr.cth.job_id[MAX_JOBS_LOG2 - 1:0],
                                                                 hdr.cth.channel[MAX_CHANNELS_LOG2 - 1:0],
                                                                 hdr.cth.src_rank[MAX_RANKS_LOG2 - 1:0]});
                        hit = space_mark.execute(meta.clock_index);
                    }
                    if (hit == 1) {
                        mark_ce();
                        symphony_marks.count(hdr.cth.job_id);
                    }
                }
            }
        }
    }
}

control MyEgressDeparser(packet_out pkt,
                         inout switch_headers_t hdr,
                         in egress_metadata_t meta,
                         in egress_intrinsic_metadata_for_deparser_t eg_dprsr_md) {
    Checksum() ipv4_checksum;

    apply {
        if (hdr.ipv4.isValid()) {
            hdr.ipv4.hdrChecksum = ipv4_checksum.update({
                hdr.ipv4.version,
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
                hdr.ipv4.dstAddr});
        }
        pkt.emit(hdr.ethernet);
        pkt.emit(hdr.ipv4);
        pkt.emit(hdr.udp);
        pkt.emit(hdr.cth);
    }
}

Pipeline(MyIngressParser(),
         MyIngress(),
         MyIngressDeparser(),
         MyEgressParser(),
         MyEgress(),
         MyEgressDeparser()) pipe;

Switch(pipe) main;
