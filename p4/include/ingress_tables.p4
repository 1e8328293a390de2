/* symphony-emu: the per-job Symphony configuration table, shared by every build.
 *
 * Included inside the ingress control (MyIngress) of p4/symphony.p4 (v1model) and
 * p4/tofino/symphony.p4 (T2NA), so that the table, its key, its actions and their
 * parameters have the same names and widths on both builds and one controller
 * (emu/routing.py) programs either. The including control names its user metadata
 * `meta` and gives it the fields set below. docs/DESIGN.md section 4.
 */
#ifndef SYMPHONY_INGRESS_TABLES_P4
#define SYMPHONY_INGRESS_TABLES_P4

    /* flows: expected_flows, the job's ring flows that cross this switch;
     * queue_gate: minimum egress queue depth for a Symphony mark (packets on v1model,
     * cells on T2NA); mode: MODE_BASELINE or MODE_SYMPHONY. */
    action set_symphony_config(bit<16> flows, bit<19> queue_gate, bit<8> mode) {
        meta.tracked = 1;
        meta.expected_flows = flows;
        meta.queue_gate = queue_gate;
        meta.mode = mode;
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

    /* Tracker variant (docs/DESIGN.md section 4): which tracker instance (step_count slots and
     * frontier) a packet counts in and how many flows that instance expects. A miss keeps the
     * job-wide tracker (tracker = job id, flows from symphony_config); the controller's `port`
     * variant installs one entry per (job, egress port) with a tracker id >= MAX_JOBS and the
     * job's ring flows that leave this switch on that port. meta.out_port is the egress port
     * routing chose (egress_spec on v1model, ucast_egress_port on T2NA). */
    action set_tracker(bit<16> tracker, bit<16> flows) {
        meta.tracker = tracker;
        meta.expected_flows = flows;
    }

    table symphony_tracker {
        key = {
            hdr.cth.job_id: exact;
            meta.out_port: exact;
        }
        actions = {
            set_tracker;
            NoAction;
        }
        size = MAX_TRACKERS;
        default_action = NoAction();
    }

    /* Lead variant `slack`: the first `bytes` of a step a flow is ahead in are pipelining, so
     * while hdr.cth.offset < bytes the lead counts one step less. No entry: bytes = 0, the
     * lead is the step lead. */
    action set_slack(bit<32> bytes) {
        meta.slack_bytes = bytes;
    }

    table symphony_slack {
        key = {
            hdr.cth.job_id: exact;
        }
        actions = {
            set_slack;
            NoAction;
        }
        size = MAX_JOBS;
        default_action = NoAction();
    }

#endif
