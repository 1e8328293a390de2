/* symphony-emu: header and metadata types, shared by every build of Symphony. */
#ifndef SYMPHONY_HEADERS_P4
#define SYMPHONY_HEADERS_P4

#include "constants.p4"

typedef bit<9>  egressSpec_t;
typedef bit<48> macAddr_t;
typedef bit<32> ip4Addr_t;

header ethernet_t {
    macAddr_t dstAddr;
    macAddr_t srcAddr;
    bit<16>   etherType;
}

/* RFC 791; diffserv holds DSCP (6 bits) and ecn (2 bits, RFC 3168). */
header ipv4_t {
    bit<4>    version;
    bit<4>    ihl;
    bit<6>    dscp;
    bit<2>    ecn;
    bit<16>   totalLen;
    bit<16>   identification;
    bit<3>    flags;
    bit<13>   fragOffset;
    bit<8>    ttl;
    bit<8>    protocol;
    bit<16>   hdrChecksum;
    ip4Addr_t srcAddr;
    ip4Addr_t dstAddr;
}

header udp_t {
    bit<16> srcPort;
    bit<16> dstPort;
    bit<16> length;
    bit<16> checksum;
}

/* Collective transport header, 16 bytes, version 2 (docs/DESIGN.md section 3). */
header cth_t {
    bit<4>  version;
    bit<4>  type;
    bit<8>  flags;
    bit<8>  job_id;
    bit<8>  channel;    /* the job's ring (NCCL-style channel), < MAX_CHANNELS tracked */
    bit<16> step;
    bit<16> src_rank;
    bit<16> dst_rank;
    bit<24> psn;        /* serial arithmetic mod 2^24, as RoCEv2's BTH PSN */
    bit<24> offset;     /* byte offset in the step's chunk: a chunk is below 16 MiB */
}

struct headers {
    ethernet_t ethernet;
    ipv4_t     ipv4;
    udp_t      udp;
    cth_t      cth;
}

error {
    IPv4OptionsNotSupported,
    IPv4BadVersion
}

#endif
