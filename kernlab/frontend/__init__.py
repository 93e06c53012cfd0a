"""Python source to typed IR."""
from .lower import source_to_ir

__all__ = ["source_to_ir"]
