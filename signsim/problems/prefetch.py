"""A software prefetch for the data kernels (docs/theory.md §5).

A minibatch's rows are scattered over a data matrix much larger than the caches, so a row-by-row kernel
waits on memory latency for every row: the hardware prefetcher only starts once a row is being read and
stops at page boundaries. Knowing the next row's index in advance (the kernels draw a minibatch's indices
first, in the same order as before), the kernel asks for it while it computes on the current row.
A prefetch is only a hint: it never changes a result.
"""

from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

#: doubles per 64-byte cache line
LINE = 8


@intrinsic
def prefetch2d(typingctx, arr, i, j):
    """Hint the CPU to bring the cache line holding arr[i, j] (a C-contiguous 2-D array) into the cache.
    No bounds check is needed: a prefetch of any address is harmless."""
    if not (isinstance(arr, types.Array) and arr.ndim == 2 and isinstance(i, types.Integer)
            and isinstance(j, types.Integer)):
        return None
    sig = types.void(arr, i, j)

    def codegen(context, builder, signature, args):
        aty, ity, jty = signature.args
        ary = context.make_array(aty)(context, builder, args[0])
        ii = context.cast(builder, args[1], ity, types.intp)
        jj = context.cast(builder, args[2], jty, types.intp)
        ptr = cgutils.get_item_pointer(context, builder, aty, ary, [ii, jj], wraparound=False)
        i8p = ir.IntType(8).as_pointer()
        i32 = ir.IntType(32)
        fnty = ir.FunctionType(ir.VoidType(), [i8p, i32, i32, i32])
        fn = cgutils.get_or_insert_function(builder.module, fnty, "llvm.prefetch.p0")
        # read access, high temporal locality, data cache
        builder.call(fn, [builder.bitcast(ptr, i8p), i32(0), i32(3), i32(1)])
        return context.get_dummy_value()

    return sig, codegen


@njit(cache=True, inline="always")
def prefetch_row(A, j):
    """Prefetch all of row j of A, one hint per cache line."""
    d = A.shape[1]
    for i in range(0, d, LINE):
        prefetch2d(A, j, i)
