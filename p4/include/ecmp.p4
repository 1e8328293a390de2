/* symphony-emu: ECMP and explicit paths, shared by every build.
 *
 * Included inside the ingress control (MyIngress) of p4/symphony.p4 (v1model) and
 * p4/tofino/symphony.p4 (T2NA) after the including control's `ipv4_forward` and `drop`
 * actions and before `ipv4_lpm` (whose action list names `ipv4_ecmp`). The including
 * control computes `meta.ecmp_bucket` from the 5-tuple and the seed with its build's hash
 * (v1model `hash`, T2NA `Hash`; both CRC-16/ARC over
 * {srcAddr, dstAddr, protocol, l4_src, l4_dst, seed}, the low ECMP_BUCKET_BITS bits), and
 * sets `meta.l4_src`/`meta.l4_dst` to the UDP ports (0 without UDP).
 *
 * - `path_pin` (src, dst) -> next hop: an explicit path of the topology, ahead of routing;
 * - `ipv4_lpm` -> `ipv4_ecmp(group, seed)` for a destination with several equal-cost next
 *   hops, then `ecmp_nhop` (group, bucket) -> next hop: a plain-table ECMP group (the
 *   controller fills every bucket of a group, bucket b -> member b mod k), since action
 *   selectors are not in the embedded compiler's subset. No register is touched.
 * emu/ecmp.py is the same hash in Python (the controller's model of where a flow goes).
 */
#ifndef SYMPHONY_ECMP_P4
#define SYMPHONY_ECMP_P4

    /* group: this switch's ECMP group of the destination; seed: this switch's hash seed. */
    action ipv4_ecmp(bit<16> group, bit<16> seed) {
        meta.ecmp = 1;
        meta.ecmp_group = group;
        meta.ecmp_seed = seed;
    }

    table ecmp_nhop {
        key = {
            meta.ecmp_group: exact;
            meta.ecmp_bucket: exact;
        }
        actions = {
            ipv4_forward;
            drop;
        }
        size = ECMP_ENTRIES;
        default_action = drop();
    }

    table path_pin {
        key = {
            hdr.ipv4.srcAddr: exact;
            hdr.ipv4.dstAddr: exact;
        }
        actions = {
            ipv4_forward;
            NoAction;
        }
        size = PATH_PIN_ENTRIES;
        default_action = NoAction();
    }

#endif
