"""The CUDA support header every generated kernel includes as "kernlab_cuda.h".

It holds what the builtins' ``cuda=`` spellings call: scalar type names (float16 is a
16-bit struct whose operations compute in float32 and round to half), the vec / mat value
types with their operators, the math and linear-algebra functions, arrays with byte strides,
bounds checks that report into the status word, atomics (float/double min and max by
compare-and-swap loops) and the per-thread stack that adjoint loops save their state on.

Everything lives in ``namespace kl`` and so does each generated kernel, so ``min``, ``abs``,
``sin`` ... in a kernel are kernlab's own overloads (exactly the interpreter's semantics),
never CUDA's global ones. NVRTC gets this text as a named header; ``HEADER_NAME`` is the name.
"""
from pathlib import Path

HEADER_NAME = "kernlab_cuda.h"

# Words (8 bytes each) of a thread's stack kept in local memory before it moves to the heap.
STACK_LOCAL_WORDS = 32

# Status codes written into kl_status.flag; the runtime turns them into exceptions.
STATUS_OK, STATUS_BOUNDS, STATUS_STACK, STATUS_NOT_FINITE = 0, 1, 2, 3

# The C++ itself is kernlab_cuda.h beside this file (a header an editor can read as C++);
# @STACK_LOCAL_WORDS@ in it is filled in here.
HEADER = (Path(__file__).with_name(HEADER_NAME).read_text(encoding="utf-8")
          .replace("@STACK_LOCAL_WORDS@", str(STACK_LOCAL_WORDS)))
