"""What the generated code and the runtime that calls it agree on, without LLVM: the
codes the entry leaves in its status block and the name of the interrupt flag it reads.
lower.py emits them; runner.py and the object loaders read them."""

INTERRUPT_SYMBOL = "kl_interrupt"  # an int32 of the runtime's: nonzero stops checking loops

STATUS_OUT_OF_BOUNDS = 1  # site, axis, param and index say where
STATUS_NOT_FINITE = 2     # verify_fp: site and param say where, index is the flat element
STATUS_GENERAL = 3        # the fast entry did nothing: run the launch on the general entry
