# Cython declarations for hugepages.py (pure-Python mode: the .py runs unchanged without Cython and
# then installs nothing). The arena allocator in C: chunks of CHUNK_BYTES mapped 2 MiB-aligned and
# advised MADV_HUGEPAGE, cut into arenas of the size pymalloc asks for (1 MiB), freed ones kept on a
# list threaded through them. pymalloc calls it with the GIL held, so no lock.

cimport cython
from libc.stdint cimport uintptr_t

cdef bint _TYPED
cdef bint _installed

cdef extern from "Python.h":
    ctypedef struct PyObjectArenaAllocator:
        void* ctx
        void* (*alloc)(void* ctx, size_t size) noexcept
        void (*free)(void* ctx, void* ptr, size_t size) noexcept
    void PyObject_GetArenaAllocator(PyObjectArenaAllocator* allocator)
    void PyObject_SetArenaAllocator(PyObjectArenaAllocator* allocator)

cdef extern from "sys/mman.h" nogil:
    void* mmap(void* addr, size_t length, int prot, int flags, int fd, long offset)
    int munmap(void* addr, size_t length)
    int madvise(void* addr, size_t length, int advice)
    int PROT_READ
    int PROT_WRITE
    int MAP_PRIVATE
    int MAP_ANONYMOUS
    int MADV_HUGEPAGE
    void* MAP_FAILED

# the chunks: at most _MAX_CHUNKS (64 MiB each: 64 GiB), their bases for the "is it ours" test
cdef enum:
    _MAX_CHUNKS = 1024
    _HUGE = 2097152

cdef struct _State:
    PyObjectArenaAllocator prev
    size_t chunk
    size_t arena
    size_t nchunks
    char* cur
    char* end
    void* free_list
    size_t out
    size_t nfree
    size_t fallback
    char* bases[_MAX_CHUNKS]

cdef _State _st

cdef inline bint _ours(void* p) noexcept:
    cdef size_t i
    cdef char* c = <char*> p
    for i in range(_st.nchunks):
        if _st.bases[i] <= c < _st.bases[i] + _st.chunk:
            return True
    return False

cdef inline char* _map_chunk() noexcept:
    """A new chunk of _st.chunk bytes, 2 MiB-aligned and advised MADV_HUGEPAGE, or NULL."""
    cdef size_t want = _st.chunk + _HUGE
    cdef char* raw
    cdef char* base
    cdef size_t head, tail
    if _st.nchunks >= _MAX_CHUNKS:
        return NULL
    raw = <char*> mmap(NULL, want, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
    if <void*> raw == MAP_FAILED:
        return NULL
    base = <char*> ((<uintptr_t> raw + _HUGE - 1) & ~(<uintptr_t> (_HUGE - 1)))
    head = base - raw
    tail = want - head - _st.chunk
    if head:
        munmap(raw, head)
    if tail:
        munmap(base + _st.chunk, tail)
    madvise(base, _st.chunk, MADV_HUGEPAGE)
    _st.bases[_st.nchunks] = base
    _st.nchunks += 1
    return base

cdef inline void* _alloc(void* ctx, size_t size) noexcept:
    cdef void* p
    cdef char* base
    if _st.arena == 0 and size <= _st.chunk and _st.chunk % size == 0:
        _st.arena = size  # the size pymalloc asks for (ARENA_SIZE), fixed at its first call
    if size == _st.arena:
        if _st.free_list != NULL:
            p = _st.free_list
            _st.free_list = (<void**> p)[0]
            _st.nfree -= 1
            _st.out += 1
            return p
        if _st.cur == _st.end:
            base = _map_chunk()
            if base != NULL:
                _st.cur = base
                _st.end = base + _st.chunk
        if _st.cur != _st.end:
            p = _st.cur
            _st.cur += size
            _st.out += 1
            return p
    _st.fallback += 1
    return _st.prev.alloc(_st.prev.ctx, size)

cdef inline void _free(void* ctx, void* ptr, size_t size) noexcept:
    if ptr != NULL and size == _st.arena and _ours(ptr):
        (<void**> ptr)[0] = _st.free_list
        _st.free_list = ptr
        _st.nfree += 1
        _st.out -= 1
        return
    _st.prev.free(_st.prev.ctx, ptr, size)

cdef inline bint _install_c(size_t chunk):
    """Map the first chunk (the kernel must take the advice) and install the allocator; False
    (nothing changed) when it cannot."""
    cdef PyObjectArenaAllocator mine
    cdef char* base
    if chunk == 0 or chunk % _HUGE:
        return False
    _st.chunk = chunk
    base = _map_chunk()
    if base == NULL:
        return False
    if madvise(base, chunk, MADV_HUGEPAGE) != 0:  # EINVAL: no transparent huge pages here
        munmap(base, chunk)
        _st.nchunks = 0
        return False
    _st.cur = base
    _st.end = base + chunk
    PyObject_GetArenaAllocator(&_st.prev)
    mine.ctx = NULL
    mine.alloc = _alloc
    mine.free = _free
    PyObject_SetArenaAllocator(&mine)
    return True

cdef inline dict _stats_c():
    return {"chunks": _st.nchunks, "arenas_out": _st.out, "arenas_free": _st.nfree, "fallback": _st.fallback}
