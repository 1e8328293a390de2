# Augmenting declarations of hostapps/ratecontrol.py for the optional compiled build (Cython's pure
# Python mode, hostapps.compiled): the rate controllers as extension types with typed fields. The .py
# stays the reference. Rates, alpha and times are doubles in both paths; byte counts and stage counts
# fit 64-bit ints; a time that may be None stays an object; alpha's decay (a float power) stays Python's.

cimport cython

cdef class RateController:
    cdef public double line_rate_bps
    cdef public long long _max_samples
    cdef public list rate_samples
    cdef public bint _sampled_once

    cpdef on_packet_sent(self, long long nbytes, double now)
    cpdef on_cnp(self, double now)
    cpdef on_timer(self, double now)
    cpdef object next_timer(self)
    cpdef _sample(self, double now)

cdef class FixedRate(RateController):
    pass

cdef class Dcqcn(RateController):
    cdef public object params
    cdef public double min_rate_bps, rate_ai_bps, rate_hai_bps, rc, rt, alpha
    cdef public long long timer_stage, byte_stage, _bytes, cnps, _byte_counter
    cdef public object _alpha_ref, _increase_at

    cpdef _update_alpha(self, double now)
    @cython.locals(f=cython.longlong, hi=cython.longlong, lo=cython.longlong)
    cpdef _increase(self, double now)
