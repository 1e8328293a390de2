// Meters as bmv2 computes them (two-rate three-colour, colour-blind): an indexed meter,
// a direct meter and a direct counter of tables (tests/p4/test_runtime.py drives the
// direct ones with explicit times; meters.stf the indexed one on the STF clock).
#include <core.p4>
#include <v1model.p4>

header ethernet_t { bit<48> dst; bit<48> src; bit<16> etherType; }
header m_t { bit<8> idx; bit<8> key; bit<8> colour; bit<8> dcolour; }
struct headers { ethernet_t eth; m_t m; }
struct metadata { bit<8> colour; }

parser P(packet_in pkt, out headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.eth);
        pkt.extract(hdr.m);
        transition accept;
    }
}

control VC(inout headers hdr, inout metadata meta) { apply { } }

control I(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    meter(4, MeterType.packets) pmeter;
    direct_meter<bit<8>>(MeterType.bytes) dmeter;
    direct_counter(CounterType.packets_and_bytes) dcount;

    action metered() { dmeter.read(hdr.m.dcolour); }
    action counted() { dcount.count(); }
    table by_key {
        key = { hdr.m.key: exact; }
        actions = { metered; NoAction; }
        meters = dmeter;
        default_action = NoAction();
    }
    table count_key {
        key = { hdr.m.key: exact; }
        actions = { counted; NoAction; }
        counters = dcount;
        default_action = NoAction();
    }
    apply {
        pmeter.execute_meter((bit<32>)hdr.m.idx, meta.colour);
        hdr.m.colour = meta.colour;
        by_key.apply();
        count_key.apply();
        if (hdr.m.colour == 2) {
            mark_to_drop(sm);            // red: dropped
        } else {
            sm.egress_spec = 2;
        }
    }
}

control E(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout metadata meta) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr.eth); pkt.emit(hdr.m); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
