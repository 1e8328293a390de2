/* t2na.p4 of the symphony-emu embedded switch: the Tofino2 Native Architecture (T2NA),
 * the subset that p4/tofino/symphony.p4 uses.
 *
 * Written for this project from the public description of TNA/T2NA (Intel's open
 * Tofino Native Architecture documentation and the architecture headers that p4c's
 * backends/tofino ships): the names, the order and the widths of the intrinsic metadata
 * fields below follow those documents, so a program written against this file also
 * compiles against the real t2na.p4. Only declarations live here; the embedded runtime
 * (emu/embedded/t2na.py) gives them their meaning. docs/tofino.md lists what differs
 * from the hardware.
 */
#ifndef EMU_T2NA_P4
#define EMU_T2NA_P4

#include <core.p4>

/* ------------------------------------------------------------------ common types */

typedef bit<9>  PortId_t;            /* ingress or egress port */
typedef bit<16> MulticastGroupId_t;
typedef bit<7>  QueueId_t;           /* Tofino2: 128 queues per port */
typedef bit<4>  MirrorType_t;        /* Tofino2: 4 bits */
typedef bit<8>  MirrorId_t;
typedef bit<16> ReplicationId_t;

match_kind {
    range,
    selector
}

enum CounterType_t {
    PACKETS,
    BYTES,
    PACKETS_AND_BYTES
}

enum HashAlgorithm_t {
    IDENTITY,
    RANDOM,
    CRC8,
    CRC16,
    CRC32,
    CRC64,
    CUSTOM
}

/* Bits of the port metadata that the ingress buffer puts between the ingress intrinsic
 * metadata and the packet on Tofino2 (the parser skips or unpacks them). */
const bit<32> PORT_METADATA_SIZE = 32w192;

/* Flags of ig_intr_md_from_prsr.parser_err / eg_intr_md_from_prsr.parser_err. */
const bit<16> PARSER_ERROR_OK         = 16w0x0000;
const bit<16> PARSER_ERROR_NO_MATCH   = 16w0x0001;   /* no select case matched */
const bit<16> PARSER_ERROR_PARTIAL_HDR = 16w0x0002;  /* extract past the end of the packet */

/* ------------------------------------------------------------------ ingress metadata */

/* Prepended to every packet by the ingress buffer; the ingress parser extracts it first. */
header ingress_intrinsic_metadata_t {
    bit<1>   resubmit_flag;
    bit<1>   _pad1;
    bit<2>   packet_version;
    bit<3>   _pad2;
    PortId_t ingress_port;
    bit<48>  ingress_mac_tstamp;     /* ns */
}

/* Set by the ingress control for the traffic manager. */
struct ingress_intrinsic_metadata_for_tm_t {
    PortId_t  ucast_egress_port;     /* unicast destination */
    bit<1>    bypass_egress;
    bit<1>    deflect_on_drop;
    bit<3>    ingress_cos;
    QueueId_t qid;
    bit<3>    icos_for_copy_to_cpu;
    bit<1>    copy_to_cpu;
    bit<2>    packet_color;
    bit<1>    disable_ucast_cutthru;
    bit<1>    enable_mcast_cutthru;
    MulticastGroupId_t mcast_grp_a;
    MulticastGroupId_t mcast_grp_b;
    bit<13>   level1_mcast_hash;
    bit<13>   level2_mcast_hash;
    bit<16>   level1_exclusion_id;
    bit<9>    level2_exclusion_id;
    ReplicationId_t rid;
}

/* Produced by the ingress parser. */
struct ingress_intrinsic_metadata_from_parser_t {
    bit<48> global_tstamp;           /* ns, at arrival in ingress */
    bit<32> global_ver;
    bit<16> parser_err;              /* PARSER_ERROR_* flags */
}

/* Set by the ingress control for the ingress deparser. */
struct ingress_intrinsic_metadata_for_deparser_t {
    bit<3>       drop_ctl;           /* bit 0: drop the packet */
    bit<3>       digest_type;
    bit<3>       resubmit_type;
    MirrorType_t mirror_type;
}

/* ------------------------------------------------------------------ egress metadata */

/* Prepended by the traffic manager; the egress parser extracts it first. Queue depths
 * are in buffer cells (176 bytes on Tofino2). The Tofino2 layout: 32-bit enq_tstamp and
 * deq_timedelta (Tofino1 has 18), a 7-bit queue id and a trailing byte of padding that
 * keeps the header a whole number of 32-bit words (28 bytes). */
header egress_intrinsic_metadata_t {
    bit<7>    _pad0;
    PortId_t  egress_port;
    bit<5>    _pad1;
    bit<19>   enq_qdepth;            /* cells queued ahead when this packet was enqueued */
    bit<6>    _pad2;
    bit<2>    enq_congest_stat;
    bit<32>   enq_tstamp;            /* ns, when the packet was enqueued */
    bit<5>    _pad3;
    bit<19>   deq_qdepth;            /* cells queued when this packet was dequeued */
    bit<6>    _pad4;
    bit<2>    deq_congest_stat;
    bit<8>    app_pool_congest_stat;
    bit<32>   deq_timedelta;         /* ns spent in the queue */
    ReplicationId_t egress_rid;
    bit<7>    _pad5;
    bit<1>    egress_rid_first;
    bit<1>    _pad6;                 /* 8 - width of QueueId_t */
    QueueId_t egress_qid;
    bit<5>    _pad7;
    bit<3>    egress_cos;
    bit<7>    _pad8;
    bit<1>    deflection_flag;
    bit<16>   pkt_length;            /* bytes */
    bit<8>    _pad9;                 /* to a 4-byte boundary */
}

struct egress_intrinsic_metadata_from_parser_t {
    bit<48> global_tstamp;           /* ns, at arrival in egress */
    bit<32> global_ver;
    bit<16> parser_err;
}

struct egress_intrinsic_metadata_for_deparser_t {
    bit<3>       drop_ctl;           /* bit 0: drop the packet */
    MirrorType_t mirror_type;
    bit<1>       coalesce_flush;
    bit<7>       coalesce_length;
}

struct egress_intrinsic_metadata_for_output_port_t {
    bit<1> capture_tstamp_on_tx;
    bit<1> update_delay_on_tx;
    bit<1> force_tx_error;
}

/* ------------------------------------------------------------------ externs */

/* Ones'-complement 16-bit checksum unit of a parser or deparser (RFC 1071). */
extern Checksum {
    Checksum();
    void add<T>(in T data);
    void subtract<T>(in T data);
    /* true when the data added do not sum to 0xffff, i.e. the checksum is wrong */
    bool verify();
    bit<16> get();
    bit<16> update<T>(in T data);
}

/* Hash unit; IDENTITY passes the data through (truncated to W bits). */
extern Hash<W> {
    Hash(HashAlgorithm_t algo);
    W get<D>(in D data);
}

/* Uniform random number generator: get() returns 0 .. 2^W - 1. */
extern Random<W> {
    Random();
    W get();
}

/* Indexed packet/byte counter. W, the width of the counter value, appears in no method: it is
 * kept because TNA/T2NA declare Counter<W, I> so (Intel's tna.p4, p4c's open tofino backend), and
 * programs written for Tofino instantiate Counter<bit<32>, I>; dropping it would refuse them.
 * The embedded target keeps unbounded packet and byte counts whatever W says (P4Runtime reads
 * them as CounterData int64 fields, p4runtime.proto). */
extern Counter<W, I> {
    Counter(bit<32> size, CounterType_t type);
    void count(in I index);
}

/* Register array of `size` cells of type T (bit<W>, or a struct of two equal fields). */
extern Register<T, I> {
    Register(bit<32> size);
    Register(bit<32> size, T initial_value);
    T read(in I index);
    void write(in I index, in T value);
}

/* One read-modify-write of a Register cell per packet, run by a stateful ALU: execute()
 * reads cell `index` into `value`, runs apply, writes `value` back and returns `rv`. */
extern RegisterAction<T, I, U> {
    RegisterAction(Register<T, I> reg);
    U execute(in I index);
    @synchronous(execute) abstract void apply(inout T value, @optional out U rv);
}

/* Action profiles and selectors (a table's `implementation`). The selector hashes the
 * table's `selector` keys with `hash` (Hash<W>: IDENTITY, CRC16 or CRC32, W bits) and picks
 * member hash % group size of a group (members in ascending id order); FAIR and RESILIENT
 * pick alike here (docs/tofino.md). The real t2na.p4 types `hash` as Hash<_>. */
enum SelectorMode_t {
    FAIR,
    RESILIENT
}

extern ActionProfile {
    ActionProfile(bit<32> size);
}

extern ActionSelector {
    ActionSelector(ActionProfile action_profile, Hash<_> hash, SelectorMode_t mode,
                   bit<32> max_group_size, bit<32> num_groups);
    /* deprecated in TNA: the selector makes its own profile of `size` members */
    ActionSelector(bit<32> size, Hash<_> hash, SelectorMode_t mode);
}

/* Declared so that programs using them get a clear "unsupported extern" error. */
extern Meter<I> {
    Meter(bit<32> size, CounterType_t type);
    bit<8> execute(in I index);
}

/* W unused for the same reason as Counter's: TNA's declaration. */
extern DirectCounter<W> {
    DirectCounter(CounterType_t type);
    void count();
}

/* ------------------------------------------------------------------ blocks, package */

parser IngressParserT<H, M>(
    packet_in pkt,
    out H hdr,
    out M ig_md,
    @optional out ingress_intrinsic_metadata_t ig_intr_md,
    @optional out ingress_intrinsic_metadata_for_tm_t ig_intr_md_for_tm,
    @optional out ingress_intrinsic_metadata_from_parser_t ig_intr_md_from_prsr);

parser EgressParserT<H, M>(
    packet_in pkt,
    out H hdr,
    out M eg_md,
    @optional out egress_intrinsic_metadata_t eg_intr_md,
    @optional out egress_intrinsic_metadata_from_parser_t eg_intr_md_from_prsr);

control IngressT<H, M>(
    inout H hdr,
    inout M ig_md,
    @optional in ingress_intrinsic_metadata_t ig_intr_md,
    @optional in ingress_intrinsic_metadata_from_parser_t ig_intr_md_from_prsr,
    @optional inout ingress_intrinsic_metadata_for_deparser_t ig_intr_md_for_dprsr,
    @optional inout ingress_intrinsic_metadata_for_tm_t ig_intr_md_for_tm);

control EgressT<H, M>(
    inout H hdr,
    inout M eg_md,
    @optional in egress_intrinsic_metadata_t eg_intr_md,
    @optional in egress_intrinsic_metadata_from_parser_t eg_intr_md_from_prsr,
    @optional inout egress_intrinsic_metadata_for_deparser_t eg_intr_md_for_dprsr,
    @optional inout egress_intrinsic_metadata_for_output_port_t eg_intr_md_for_oport);

control IngressDeparserT<H, M>(
    packet_out pkt,
    inout H hdr,
    in M metadata,
    @optional in ingress_intrinsic_metadata_for_deparser_t ig_intr_md_for_dprsr,
    @optional in ingress_intrinsic_metadata_t ig_intr_md);

control EgressDeparserT<H, M>(
    packet_out pkt,
    inout H hdr,
    in M metadata,
    @optional in egress_intrinsic_metadata_for_deparser_t eg_intr_md_for_dprsr,
    @optional in egress_intrinsic_metadata_t eg_intr_md,
    @optional in egress_intrinsic_metadata_from_parser_t eg_intr_md_from_prsr);

/* One pipe: ingress parser, control and deparser, then egress parser, control and deparser. */
package Pipeline<IH, IM, EH, EM>(
    IngressParserT<IH, IM> ingress_parser,
    IngressT<IH, IM> ingress,
    IngressDeparserT<IH, IM> ingress_deparser,
    EgressParserT<EH, EM> egress_parser,
    EgressT<EH, EM> egress,
    EgressDeparserT<EH, EM> egress_deparser);

/* The switch: the embedded runtime runs pipe0 for every port. */
package Switch<IH0, IM0, EH0, EM0>(Pipeline<IH0, IM0, EH0, EM0> pipe0);

#endif
