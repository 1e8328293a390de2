/* core.p4 of the symphony-emu embedded switch.
 *
 * Declarations of the P4_16 core library (P4_16 language specification, appendix
 * "P4 core library"), written for this project: the embedded runtime gives these
 * externs their meaning itself; this file only declares names and signatures.
 */
#ifndef _CORE_P4_
#define _CORE_P4_

/* Standard error codes, in the order of the specification (NoError = 0). */
error {
    NoError,
    PacketTooShort,
    NoMatch,
    StackOutOfBounds,
    HeaderTooShort,
    ParserTimeout,
    ParserInvalidArgument
}

/* Input packet of a parser. */
extern packet_in {
    void extract<T>(out T hdr);
    /* Skip sizeInBits bits (a whole number of bytes) of the packet. */
    void advance(in bit<32> sizeInBits);
    bit<32> length();
}

/* Output packet of a deparser. */
extern packet_out {
    void emit<T>(in T hdr);
}

/* Parser check: when check is false, parsing stops with error toSignal. */
extern void verify(in bool check, in error toSignal);

/* The action every table may use when nothing else is to be done. */
action NoAction() {}

match_kind {
    exact,
    ternary,
    lpm
}

#endif
