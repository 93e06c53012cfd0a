"""IR verifier: every use is dominated by its definition, types line up, locations exist."""
from __future__ import annotations

from .nodes import Block, Function, Op


_STORE_VAR, _CALL = Op.STORE_VAR, Op.CALL


class IRError(AssertionError):
    """An internal inconsistency in generated IR (a compiler bug, never a user error)."""


def verify(func: Function) -> Function:
    defined = {p.value for p in func.params}
    known_vars = set(func.vars)
    _check_block(func, func.body, defined, known_vars)
    return func


def _check_block(func, block: Block, scope: set, known_vars: set):
    """Check block with ``scope`` the values visible on entry. The values the block defines
    are added to scope while it is checked and taken out again at its end (values defined in
    a region are not visible after it), so no region copies what encloses it."""
    added = []
    try:
        for ins in block.instrs:
            op = ins.op
            for a in ins.args:
                if a not in scope:
                    raise IRError(f"{func.name}: {op.value} at {ins.loc} uses {a!r} "
                                  "before its definition")
            attrs = ins.attrs
            var = attrs.get("var")
            if var is not None and var not in known_vars:
                raise IRError(f"{func.name}: {op.value} uses undeclared variable {var!r}")
            if op is _STORE_VAR:
                stored = ins.args[0].type
                if stored is not var.type and stored != var.type:
                    raise IRError(f"{func.name}: storing {stored} into {var!r}:{var.type}")
            elif op is _CALL and "builtin" not in attrs:
                raise IRError(f"{func.name}: call without a builtin at {ins.loc}")
            if ins.regions:
                _check_regions(func, ins, scope, known_vars)
            result = ins.result
            if result is not None:
                if result.type is None:
                    raise IRError(f"{func.name}: untyped result of {op.value}")
                if result not in scope:  # (SSA: each value is defined once)
                    scope.add(result)
                    added.append(result)
    finally:
        scope.difference_update(added)


def _check_regions(func, ins, scope: set, known_vars: set):
    for k, region in enumerate(ins.regions):
        extra = ()
        if ins.op is Op.CUSTOM and k == 1:  # a gradient body names the adjoint arrays
            extra = [ph for ph, _ in ins.attrs.get("adj_arrays", ()) if ph not in scope]
            scope.update(extra)
        try:
            _check_block(func, region, scope, known_vars)
        finally:
            scope.difference_update(extra)
        if region.result is not None and region.result not in scope and \
                region.result not in {i.result for i in region.walk()}:
            raise IRError(f"{func.name}: region result {region.result!r} undefined")
