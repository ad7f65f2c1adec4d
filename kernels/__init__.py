"""Compiled hot paths of pocketd: score fusion, time decay, exact scan and top-k.

A leaf package: it imports numpy and numba only. Each kernel is an
`@njit(cache=True, nogil=True)` function with a plain-numpy twin named `*_ref` that the tests
compare it against. `kernels.warmup.compile_all()` compiles every kernel at start-up, before the
server reports SERVING.
"""
