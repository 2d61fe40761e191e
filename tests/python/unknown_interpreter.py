# SPDX-License-Identifier: MIT
"""The one line gpuleak writes for an interpreter whose frames it cannot read.

Run by tests/python_frames.test with each interpreter found, whatever its
version (Python 2 included), and the probe library
(tests/unit/python_frames_probe.c).  First made-up interpreters: each must be
refused (no Python frames) with a note that names it.  Then the interpreter
running this script: one the walker knows must be taken (init returns its
minor version); any other (3.8, 3.15, a free-threaded build, Python 2) must be
refused with the note that names it.  Prints one line per check; exit status 1
on any failure.

    python unknown_interpreter.py PROBE.so
"""
from __future__ import print_function

import ctypes
import sys
import sysconfig

KNOWN = range(9, 15)  # CPython 3.9 to 3.14 with the GIL
RANGE = "3.9 to 3.14"

probe = ctypes.CDLL(sys.argv[1])
probe.probe_init_fake.argtypes = [ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_int]
failures = []


def note_for(major, minor, free_threaded):
    """What the runtime says of an interpreter it does not know."""
    if major != 3:
        return "Python %d.%d is not known to this gpuleak (CPython %s are)" % (major, minor, RANGE)
    if free_threaded:
        return ("free-threaded CPython %d.%dt is not known to this gpuleak (%s with the GIL are)"
                % (major, minor, RANGE))
    return "CPython %d.%d is not known to this gpuleak (%s are)" % (major, minor, RANGE)


def check(title, got, want):
    if got != want:
        failures.append(title)
        print("FAIL %s\n  got:  %r\n  want: %r" % (title, got, want))
    else:
        print("ok   %s: %s" % (title, want[1] or "taken"))


# Made up: the runtime must refuse each and say why.
for version, free_threaded in [("3.15.0", 0), ("3.16.1", 1), ("3.14.0", 1), ("3.13.5", 1),
                               ("3.8.18", 0), ("2.7.18", 0), ("4.0.0", 0)]:
    major, minor = [int(x) for x in version.split(".")[:2]]
    note = ctypes.create_string_buffer(256)
    rc = probe.probe_init_fake(version.encode(), free_threaded, note, 256)
    check("made-up %s%s" % (version, "t" if free_threaded else ""),
          (rc, note.value.decode()), (-1, note_for(major, minor, free_threaded)))

# A known version whose debug offsets disagree with the table is refused too.
note = ctypes.create_string_buffer(256)
rc = probe.probe_init_fake(b"3.14.0", 0, note, 256)
check("made-up 3.14.0, every debug offset 0", (rc, note.value.decode()),
      (-1, "CPython 3.14's debug offsets disagree with gpuleak's (field at 208: 0, expected 72)"))

# This interpreter, for real.
major, minor = sys.version_info[0], sys.version_info[1]
free_threaded = bool(sysconfig.get_config_var("Py_GIL_DISABLED"))
note = ctypes.create_string_buffer(256)
rc = probe.probe_init(64, note, 256)
if major == 3 and minor in KNOWN and not free_threaded:
    want = (minor, "")
else:
    want = (-1, note_for(major, minor, free_threaded))
check("this interpreter, %s%s" % (sys.version.split()[0], "t" if free_threaded else ""),
      (rc, note.value.decode()), want)

if failures:
    print("%d check(s) failed on %s" % (len(failures), sys.version.split()[0]))
    sys.exit(1)
