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

#endif
