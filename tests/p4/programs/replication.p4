// Packet replication as bmv2 simple_switch does it: multicast groups (mcast_grp through the
// packet replication engine, egress_rid), clone I2E and E2E with @field_list metadata,
// resubmit and recirculate with preserved fields. hdr.ctl.mode picks the case.
#include <core.p4>
#include <v1model.p4>

header ethernet_t { bit<48> dst; bit<48> src; bit<16> etherType; }
header ctl_t { bit<8> mode; bit<8> tag; bit<8> rid_seen; bit<8> itype_seen; bit<8> count; bit<8> keep_seen; }
struct headers { ethernet_t eth; ctl_t ctl; }
struct metadata {
    @field_list(1)
    bit<8> keep;
    bit<8> other;
}

parser P(packet_in pkt, out headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.eth);
        pkt.extract(hdr.ctl);
        transition accept;
    }
}

control VC(inout headers hdr, inout metadata meta) { apply { } }

control I(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    apply {
        if (hdr.ctl.mode == 1) {
            sm.mcast_grp = 5;
        } else if (hdr.ctl.mode == 2) {
            meta.keep = 0x99;
            meta.other = 0x12;
            clone_preserving_field_list(CloneType.I2E, 7, 1);
            hdr.ctl.count = 0x11;          // not seen by the clone: it is the packet as received
            sm.egress_spec = 2;
        } else if (hdr.ctl.mode == 3) {
            sm.egress_spec = 2;
        } else if (hdr.ctl.mode == 4) {
            if (sm.instance_type == 0) {
                meta.keep = 0x42;
                resubmit_preserving_field_list(1);
            } else {
                hdr.ctl.tag = meta.keep;   // preserved across the resubmission
                sm.egress_spec = 3;
            }
        } else if (hdr.ctl.mode == 5) {
            hdr.ctl.keep_seen = meta.keep;
            sm.egress_spec = 2;
        } else if (hdr.ctl.mode == 6) {
            sm.mcast_grp = 6;
        } else if (hdr.ctl.mode == 7) {
            resubmit_preserving_field_list(1);   // forever: the switch bounds it and drops the packet
        } else {
            mark_to_drop(sm);
        }
    }
}

control E(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    apply {
        hdr.ctl.itype_seen = (bit<8>)sm.instance_type;
        hdr.ctl.rid_seen = (bit<8>)sm.egress_rid;
        if (sm.instance_type == 1 || sm.instance_type == 2) {
            hdr.ctl.keep_seen = meta.keep;
            hdr.ctl.tag = hdr.ctl.tag | meta.other;   // other is not in the field list: 0 in a clone
        }
        if (hdr.ctl.mode == 3 && sm.instance_type == 0) {
            meta.keep = 0x77;
            hdr.ctl.tag = 0x55;
            clone_preserving_field_list(CloneType.E2E, 8, 1);
        }
        if (hdr.ctl.mode == 5 && hdr.ctl.count < 3) {
            hdr.ctl.count = hdr.ctl.count + 1;
            meta.keep = hdr.ctl.count << 4;
            recirculate_preserving_field_list(1);
        }
    }
}

control CC(inout headers hdr, inout metadata meta) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr.eth); pkt.emit(hdr.ctl); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
