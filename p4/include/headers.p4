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

/* Collective transport header, 16 bytes (docs/DESIGN.md section 3). */
header cth_t {
    bit<4>  version;
    bit<4>  type;
    bit<8>  flags;
    bit<16> job_id;
    bit<16> step;
    bit<8>  src_rank;
    bit<8>  dst_rank;
    bit<32> psn;
    bit<32> offset;
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
