/* symphony-emu: the egress marking tables, shared by every build.
 *
 * Included inside the egress control (MyEgress) of p4/symphony.p4 (v1model) and
 * p4/tofino/symphony.p4 (T2NA): same table, key, action and parameter names and widths
 * on both builds, so one controller (emu/routing.py) programs either. The including
 * control names its user metadata `meta` and copies the egress port and the queue depth
 * at enqueue into `meta.egress_port` and `meta.enq_qdepth` before applying the tables
 * (packets on v1model, cells on T2NA).
 *
 * Both tables give a 17-bit threshold; the packet is marked when a 16-bit random draw is
 * below it (0 never, PROB_ONE = 65536 always), so no probability is multiplied at run time:
 * the controller computes every threshold. docs/DESIGN.md section 4.
 */
#ifndef SYMPHONY_EGRESS_TABLES_P4
#define SYMPHONY_EGRESS_TABLES_P4

    /* Queue-depth ECN marking as a data-centre switch configures it for DCQCN (RED-like
     * ramp: no mark below kmin, probability rising to pmax at kmax, always at or above
     * kmax; DCQCN, SIGCOMM 2015, section 3): one entry per (egress port, depth range). */
    action set_ecn_mark(bit<17> threshold) {
        meta.ecn_threshold = threshold;
    }

    table queue_ecn {
        key = {
            meta.egress_port: exact;
            meta.enq_qdepth: range;
        }
        actions = {
            set_ecn_mark;
            NoAction;
        }
        size = QUEUE_ECN_ENTRIES;
        default_action = NoAction();
    }

    /* Symphony's marking curve: one entry per (job, lead), leads 1..MAX_RANKS-1;
     * no entry = never marked. */
    action set_symphony_mark(bit<17> threshold) {
        meta.symphony_threshold = threshold;
    }

    table symphony_marking {
        key = {
            hdr.cth.job_id: exact;
            meta.lead: exact;
        }
        actions = {
            set_symphony_mark;
            NoAction;
        }
        size = MARKING_ENTRIES;
        default_action = NoAction();
    }

    /* The placebo's marking probability: one entry per job (MODE_PLACEBO), the same
     * threshold whatever the lead; no entry = never marked. */
    table placebo_marking {
        key = {
            hdr.cth.job_id: exact;
        }
        actions = {
            set_symphony_mark;
            NoAction;
        }
        size = MAX_JOBS;
        default_action = NoAction();
    }

    /* Marking variant `spaced`: a flow gets at most one Symphony (or placebo) mark per `gap`
     * (microseconds on v1model, nanoseconds on T2NA: the egress timestamp's unit), the curve
     * still deciding which packets may be marked; the per-flow register mark_clock holds the
     * time of the flow's last mark. No entry: every packet the curve draws is marked. */
    action set_mark_gap(bit<32> gap) {
        meta.mark_gap = gap;
        meta.spaced = 1;
    }

    table symphony_spacing {
        key = {
            hdr.cth.job_id: exact;
        }
        actions = {
            set_mark_gap;
            NoAction;
        }
        size = MAX_JOBS;
        default_action = NoAction();
    }

#endif
