/* v1model.p4 of the symphony-emu embedded switch.
 *
 * The v1model architecture (the one simple_switch/bmv2 implements) as far as the
 * embedded runtime supports it; written for this project from the P4_16 specification
 * and bmv2's documented behaviour. Semantics live in emu/embedded/v1model.py; see
 * docs/p4-subset.md.
 */
#ifndef _V1_MODEL_P4_
#define _V1_MODEL_P4_

#include <core.p4>

match_kind {
    range,
    optional,
    selector
}

typedef bit<9>  PortId_t;
typedef bit<48> EgressInstance_t;
typedef bit<16> MulticastGroup_t;
typedef bit<16> ReplicationId_t;

/* Per-packet intrinsic metadata. Timestamps in microseconds, queue depths in packets. */
struct standard_metadata_t {
    PortId_t ingress_port;
    PortId_t egress_spec;           /* set in ingress; 511 drops the packet */
    PortId_t egress_port;           /* read-only in egress */
    bit<32>  instance_type;
    bit<32>  packet_length;         /* bytes of the received frame */
    bit<32>  enq_timestamp;         /* us, when the packet entered its egress queue */
    bit<19>  enq_qdepth;            /* packets queued when this one was enqueued */
    bit<32>  deq_timedelta;         /* us spent in the queue */
    bit<19>  deq_qdepth;            /* packets queued when this one left */
    bit<48>  ingress_global_timestamp;  /* us */
    bit<48>  egress_global_timestamp;   /* us */
    MulticastGroup_t mcast_grp;
    ReplicationId_t  egress_rid;
    bit<1>   checksum_error;        /* 1: verify_checksum found a mismatch */
    error    parser_error;          /* error of the parser, NoError if none */
    bit<3>   priority;
}

enum CounterType {
    packets,
    bytes,
    packets_and_bytes
}

enum MeterType {
    packets,
    bytes
}

enum CloneType {
    I2E,
    E2E
}

enum HashAlgorithm {
    crc32,
    crc32_custom,
    crc16,
    crc16_custom,
    random,
    identity,
    csum16,
    xor16
}

extern counter<I> {
    counter(bit<32> size, CounterType type);
    void count(in I index);
}

extern register<T> {
    register(bit<32> size);
    void read(out T result, in bit<32> index);
    void write(in bit<32> index, in T value);
}

/* Declared so that programs using them get a clear "unsupported" error. */
extern direct_counter {
    direct_counter(CounterType type);
    void count();
}

extern meter<I> {
    meter(bit<32> size, MeterType type);
    void execute_meter<T>(in I index, out T result);
}

extern direct_meter<T> {
    direct_meter(MeterType type);
    void read(out T result);
}

extern action_profile {
    action_profile(bit<32> size);
}

extern action_selector {
    action_selector(HashAlgorithm algorithm, bit<32> size, bit<32> outputWidth);
}

extern void random<T>(out T result, in T lo, in T hi);
extern void hash<O, T, D, M>(out O result, in HashAlgorithm algo, in T base, in D data, in M max);
extern void mark_to_drop(inout standard_metadata_t standard_metadata);
extern void verify_checksum<T, O>(in bool condition, in T data, in O checksum, HashAlgorithm algo);
extern void update_checksum<T, O>(in bool condition, in T data, inout O checksum, HashAlgorithm algo);

/* Packet copies (bmv2 simple_switch semantics; mirroring sessions and multicast groups are
 * configured through the control API). index selects the @field_list(index) metadata
 * fields that the copy keeps. */
extern void clone(in CloneType type, in bit<32> session);
extern void clone_preserving_field_list(in CloneType type, in bit<32> session, bit<8> index);
extern void resubmit_preserving_field_list(bit<8> index);
extern void recirculate_preserving_field_list(bit<8> index);

parser Parser<H, M>(packet_in b,
                    out H parsedHdr,
                    inout M meta,
                    inout standard_metadata_t standard_metadata);
control VerifyChecksum<H, M>(inout H hdr, inout M meta);
control Ingress<H, M>(inout H hdr, inout M meta, inout standard_metadata_t standard_metadata);
control Egress<H, M>(inout H hdr, inout M meta, inout standard_metadata_t standard_metadata);
control ComputeChecksum<H, M>(inout H hdr, inout M meta);
control Deparser<H>(packet_out b, in H hdr);

package V1Switch<H, M>(Parser<H, M> p,
                       VerifyChecksum<H, M> vr,
                       Ingress<H, M> ig,
                       Egress<H, M> eg,
                       ComputeChecksum<H, M> ck,
                       Deparser<H> dep);

#endif
