/* symphony-emu: constants shared by p4/symphony.p4 and the Python side.
 *
 * hostapps/wire.py defines the same values; tests/unit/test_wire_p4_constants.py
 * checks that the two agree. Change both together.
 */
#ifndef SYMPHONY_CONSTANTS_P4
#define SYMPHONY_CONSTANTS_P4

const bit<16> TYPE_IPV4       = 0x0800;
const bit<8>  PROTO_UDP       = 17;

/* UDP destination port of the collective transport header (CTH), docs/DESIGN.md section 3. */
const bit<16> CTH_UDP_PORT    = 4793;
const bit<4>  CTH_VERSION     = 2;
const bit<4>  CTH_TYPE_DATA   = 1;
const bit<4>  CTH_TYPE_ACK    = 2;
const bit<4>  CTH_TYPE_NACK   = 3;
const bit<4>  CTH_TYPE_CNP    = 4;

/* ECN codepoints in the low two bits of the IPv4 TOS byte (RFC 3168 section 5). */
const bit<2>  ECN_NOT_ECT     = 0;
const bit<2>  ECN_ECT1        = 1;
const bit<2>  ECN_ECT0        = 2;
const bit<2>  ECN_CE          = 3;

/* Register sizes (docs/DESIGN.md section 4), each a power of two so that an index is a
 * shift and an OR, never a multiplication: a flow (job, channel, rank) is
 * job << (MAX_CHANNELS_LOG2 + MAX_RANKS_LOG2) | channel << MAX_RANKS_LOG2 | rank.
 * STEP_WINDOW exceeds every lead the frontier can see so that the step_count slots never
 * alias: a ring bounds the lead between ranks by N-1 (1,023 at MAX_RANKS), and
 * unsynchronised channels add at most one collective's steps (hostapps/collectives.py
 * lead_bound); the loader rejects a job whose bound reaches STEP_WINDOW. Each register fits
 * one Tofino2 stage: flow_step 1 Mbit, step_count 2 Mbit (docs/tofino.md). */
#define MAX_JOBS          16
#define MAX_JOBS_LOG2     4
#define MAX_CHANNELS      4
#define MAX_CHANNELS_LOG2 2
#define MAX_RANKS         1024
#define MAX_RANKS_LOG2    10
#define STEP_WINDOW       2048
#define STEP_WINDOW_LOG2  11
#define FLOW_SLOTS        65536  /* MAX_JOBS * MAX_CHANNELS * MAX_RANKS */
#define MAX_PORTS         512    /* bit<9> port numbers */
/* Tracker instances (step_count, frontier): a job-wide tracker's id is its job id (the
 * default); the per-(job, egress port) trackers of symphony_tracker take the ids no job at
 * the switch has (docs/DESIGN.md section 4). 32 keep step_count within one Tofino2 stage's
 * SRAM with room (section 10): 32 x 2048 x 32 bit = 2 Mbit. */
#define MAX_TRACKERS      32
#define MAX_TRACKERS_LOG2 5
#define STEP_SLOTS        65536  /* MAX_TRACKERS * STEP_WINDOW */
#define MARKING_ENTRIES   16384  /* symphony_marking: (job, lead) pairs over the jobs crossing a
                                    switch; the controller installs leads 1..lead_bound per job */
#define QUEUE_ECN_ENTRIES 2048   /* queue_ecn: ports * depth ranges of the RED-like ramp */
/* ECMP (p4/include/ecmp.p4): a 5-tuple hash picks one of ECMP_BUCKETS buckets of a group;
 * the controller maps bucket b of a k-member group to member b mod k. */
#define ECMP_BUCKETS      64
#define ECMP_BUCKET_BITS  6
#define ECMP_GROUPS       64
#define ECMP_ENTRIES      4096   /* ECMP_GROUPS * ECMP_BUCKETS */
#define PATH_PIN_ENTRIES  4096   /* path_pin: explicit (src, dst) host-pair paths */

/* Serial arithmetic on 16-bit step ids (RFC 1982): newer(a, b) iff 0 < a - b < 2^15. */
const bit<16> SERIAL_HALF     = 0x8000;

/* Marking thresholds (symphony_marking, queue_ecn): a packet is marked when a 16-bit
 * random draw (0..65535) is below the 17-bit threshold, so 0 never marks and
 * PROB_ONE = 65536 always does. */
const bit<17> PROB_ONE        = 65536;

/* Job modes (symphony_config table). */
const bit<8>  MODE_BASELINE   = 0;
const bit<8>  MODE_SYMPHONY   = 1;
/* The placebo reference (docs/DESIGN.md section 11): random marks of a per-job probability
 * (placebo_marking) on the packets Symphony could mark, blind to the lead. */
const bit<8>  MODE_PLACEBO    = 2;

#endif
