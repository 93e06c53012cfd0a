"""printf formats are checked at compile time: no format can crash the process or make printf
read a value as the wrong type. Crash cases run in a child process that must survive."""
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import kernlab as kl
from helpers import line_of
from test_reliability import child_env


@kl.kernel
def prints_everything(x: kl.array(dtype=float), n: kl.array(dtype=kl.int64), flag: kl.bool,
                      u: kl.uint8, v: kl.vec3):
    i = kl.tid()
    kl.printf("i=%d x=%8.3f n=%5ld %s%% %x %c %u %e|%s|%o\n", i, x[i], n[i], flag, u, 65, flag,
              x[i], v, u)


def test_printf_prints_each_value_with_its_conversion(backend, capfd):
    x = kl.array(np.array([1.5], np.float32))
    n = kl.array(np.array([-7], np.int64))
    kl.launch(prints_everything, 1, inputs=[x, n, True, np.uint8(255), kl.vec3(1.0, 2.0, 3.0)])
    # C printf's text for the same values, written out with Python's % (which follows C)
    expected = "i=%d x=%8.3f n=%5d %s%% %x %c %u %e|%s|%o\n" % (
        0, 1.5, -7, "True", 255, "A", 1, 1.5, "[1, 2, 3]", 255)
    assert capfd.readouterr().out == expected


BAD_FORMATS = {
    # the fuzzer's crashes: a conversion with no value, a string conversion of an int
    "conversion without a value": ('"%d %s\\n", i', "more conversions than values"),
    "char conversion of a float": ('"%c", 1.5', "needs an integer, got a float"),
    "%n writes memory": ('"%d%n", i, i', "writes to memory"),
    "%s with no value at all": ('"%s"', "more conversions than values"),
    "float read as an int": ('"%d", 1.5', "needs an integer or bool, got a float"),
    "int read as a double": ('"%f", i', "needs a float, got an integer"),
    "star width": ('"%*d", i, i', "'*' width"),
    "pointer": ('"%p", i', "pointer"),
    "extra values": ('"%d", i, i', "got 2 value(s) but its format has 1"),
    "dangling percent": ('"abc %"', "ends inside a conversion"),
    "vector read as a float": ('"%f", kl.vec3(1.0, 2.0, 3.0)', "got a vector"),
    "python string value": ('"%s", "hi"', "write the text 'hi' into the format"),
    "unknown conversion": ('"%k", i', "not a printf conversion"),
}


@pytest.mark.parametrize("case", list(BAD_FORMATS))
@pytest.mark.cpu_only("a compile-time check")
def test_a_bad_format_is_a_kernel_error_at_the_printf_line(case, tmp_path):
    call, message = BAD_FORMATS[case]
    source = textwrap.dedent(f"""
        import kernlab as kl

        @kl.kernel
        def bad():
            i = kl.tid()
            kl.printf({call})
        """)
    path = tmp_path / "bad_printf.py"
    path.write_text(source)
    namespace = {}
    exec(compile(source, str(path), "exec"), namespace)
    with pytest.raises(kl.KernelError) as info:  # compiled, never launched: see the child
        kl.source(namespace["bad"], "llvm")
    text = str(info.value)
    assert "'bad'" in text and "line 7" in text
    assert message in text


CRASH_CHILD = r"""
import kernlab as kl

@kl.kernel
def crashes():
    i = kl.tid()
    kl.printf("%d %s %s %s\n", i)

@kl.kernel
def writes():
    i = kl.tid()
    kl.printf("%d%n\n", i, i)

for k in (crashes, writes):
    try:
        kl.launch(k, 4)
    except kl.KernelError as err:
        print("refused", type(err).__name__)
print("alive")
"""


def test_a_format_that_used_to_crash_leaves_the_process_alive(tmp_path):
    script = tmp_path / "child_printf.py"
    script.write_text(CRASH_CHILD)
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=120, env=child_env(tmp_path / "cache"))
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.splitlines() == ["refused KernelTypeError"] * 2 + ["alive"]
