# Augmenting declarations of hostapps/transport.py for the optional compiled build (Cython's pure
# Python mode, hostapps.compiled): the per-packet classes as extension types with typed fields.
# The .py stays the reference and runs unchanged without this file. Types: PSNs, steps, offsets,
# byte and packet counts fit 64-bit ints (a PSN grows by one per packet, a byte count by at most
# a datagram); times and rates are doubles in both paths; a value that may be None stays an object.

cimport cython
from hostapps.ratecontrol cimport RateController

@cython.freelist(256)
cdef class Outgoing:
    cdef public object dst_rank, datagram, ecn

@cython.freelist(256)
cdef class Delivery:
    cdef public object src_rank, step, offset, payload, last, channel

cdef class _TxPacket:
    cdef public long long psn, step, offset, sends
    cdef public object payload
    cdef public bint last
    cdef public double sent_at

cdef class _SendFlow:
    cdef public long long dst, channel, next_psn, una, snd_nxt
    cdef public RateController rc
    cdef public object pending
    cdef public dict inflight
    cdef public list retx_heap
    cdef public set retx_set
    cdef public double next_send, rto, rttvar
    cdef public object rto_at, srtt

    cpdef bint sendable(self, long long window)

cdef class _RecvFlow:
    cdef public long long expected, unacked, last_step_wire
    cdef public dict buffer
    cdef public object step, nacked_psn, ack_due
    cdef public double last_cnp, last_nack
    cdef public bint ece

@cython.locals(tx=cython.double, depth=cython.double, t=cython.double)
cdef inline double _paced_next(double next_send, double now, long long wire, double rate, long long burst,
                               double slack)

@cython.locals(half=cython.longlong)
cdef inline long long _unwrap(long long wire, long long ref, long long mod)

cdef object _zeros(long long n)

cdef class Transport:
    cdef public long long job_id, rank, channels
    cdef public object config, rate_control, rate_params
    cdef public dict _send, _recv, lag
    cdef public list _ctrl, _deliveries
    cdef public object _ctrl_at, _wake_at
    cdef public double _host_next_send, _last_poll, _lag_s
    cdef public long long _n_packets_sent, _n_bytes_sent, _n_retransmissions, _n_timeouts
    cdef public long long _n_cnps_sent, _n_cnps_received, _n_ce_received, _n_ece_received
    cdef public long long _n_acks_sent, _n_acks_received, _n_nacks_sent, _n_nacks_received
    cdef public long long _n_packets_received, _n_duplicates, _n_out_of_order, _n_beyond_window
    cdef public long long _n_packets_delivered, _n_bytes_delivered, _n_garbage
    cdef public long long _window, _burst, _overhead, _ack_every, _recv_buffer
    cdef public double _slack, _line, _ack_delay, _cnp_interval, _nack_interval, _min_rto, _max_rto

    @cython.locals(flow=_SendFlow, n=cython.longlong, mss=cython.longlong, i=cython.longlong, size=cython.longlong,
                   total=cython.longlong, lo=cython.longlong, hi=cython.longlong)
    cpdef send(self, long long dst_rank, long long step, object data, double now, long long offset=*,
               bint last=*, long long channel=*, long long pad=*)
    @cython.locals(flow=_SendFlow)
    cpdef _SendFlow _flow_to(self, long long key)
    @cython.locals(flow=_SendFlow, key=cython.longlong, ptype=cython.longlong, flags=cython.longlong,
                   job_id=cython.longlong, channel=cython.longlong, step=cython.longlong, hsrc=cython.longlong,
                   hdst=cython.longlong, psn=cython.longlong, offset=cython.longlong)
    cpdef on_datagram(self, long long src_rank, object datagram, long long ecn, double now)
    @cython.locals(ack=cython.longlong, psn=cython.longlong, newest=_TxPacket)
    cdef bint _on_ack(self, _SendFlow flow, long long wire_psn, double now) except -1
    cdef _rtt_sample(self, _SendFlow flow, double r)
    @cython.locals(psn=cython.longlong, pkt=_TxPacket)
    cdef _on_nack(self, _SendFlow flow, long long wire_psn, double now)
    cdef _queue_retx(self, _SendFlow flow, long long psn)
    @cython.locals(flow=_RecvFlow, psn=cython.longlong, last=cython.bint, ack_now=cython.bint, blast=cython.bint)
    cdef _on_data(self, long long src, long long step, long long wire_psn, long long offset, long long flags,
                  object payload, long long ecn, double now)
    @cython.locals(step=cython.longlong)
    cdef _deliver(self, long long src, _RecvFlow flow, long long step_wire, long long offset, object data, bint last)
    cdef _maybe_nack(self, long long src, _RecvFlow flow, double now)
    cdef _send_ack(self, long long src, _RecvFlow flow, double now)
    @cython.locals(dst=cython.longlong)
    cdef _control(self, long long key, long long ctype, long long psn, double now, long long step=*, bint ece=*)
    @cython.locals(flow=_SendFlow, best=_SendFlow, rflow=_RecvFlow, window=cython.longlong, late=cython.double)
    cpdef list poll(self, double now)
    cdef _timeout(self, _SendFlow flow, double now)
    @cython.locals(pkt=_TxPacket, rc=RateController, psn=cython.longlong, flags=cython.longlong, n=cython.longlong,
                   wire=cython.longlong, slack=cython.double, rate=cython.double, line=cython.double,
                   burst=cython.longlong, tx=cython.double, depth=cython.double, t=cython.double)
    cdef _transmit(self, _SendFlow flow, double now)
    @cython.locals(flow=_SendFlow, rflow=_RecvFlow, window=cython.longlong, host_next=cython.double)
    cpdef object next_timer(self)
    cpdef list deliveries(self)
    @cython.locals(f=_SendFlow)
    cpdef bint idle(self)
