"""Small helpers shared by the test modules."""
import inspect


def line_of(obj, needle: str) -> int:
    """The file line of the one line of ``obj``'s source that contains ``needle``."""
    pyfunc = getattr(obj, "pyfunc", obj)
    lines, first = inspect.getsourcelines(pyfunc)
    hits = [first + k for k, text in enumerate(lines) if needle in text]
    assert len(hits) == 1, f"{needle!r} should occur once in {pyfunc.__name__}"
    return hits[0]
