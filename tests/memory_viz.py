#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Checks a memory snapshot in the format of PyTorch's
torch.cuda.memory._dump_snapshot (a pickled dict), as gpuleak --memory-viz
writes it, and computes what PyTorch's memory viewer (MemoryViz.js, the page
that `python -m torch.cuda._memory_viz trace_plot` writes) will draw from it.
Python 3 standard library only; no torch.

    memory_viz.py check FILE [--allocs N] [--device D] [--peak BYTES]
                             [--max-entries N] [--viz-entries N] [--any-layout]
        Loads FILE and checks it (see check() below).  On success prints one
        line: devices, allocs, frees, ooms, live blocks, and the maximum of
        the 'Active Memory Timeline' per device, exactly as the viewer
        computes it; exit 0.  On the first inconsistency prints one line
        "memory_viz: FILE: WHERE: WHAT" on stderr; exit 1.
          --allocs N       the file holds N 'alloc' events (all devices, or
                           device D when --device is given)
          --peak BYTES     the timeline's maximum on device D (default 0) is
                           BYTES
          --max-entries N  no device trace holds more than N events, and the
                           gpuleak member's max_entries (if any) is N
          --viz-entries N  the viewer's "Detail" slider (default 15000, its
                           initial value): allocations past the N largest
                           are summarized, which changes where the maximum
                           is sampled
          --any-layout     accept any allocator's layout (several blocks a
                           segment, events not grouped as gpuleak groups
                           them); the fields must still be gpuleak's
          --json           print the summary as JSON instead: {"devices":
                           [{"alloc", "free", "oom", "segment_alloc",
                           "segment_free", "live", "segments", "events",
                           "max", "elements", "initially"}, ...]}
    memory_viz.py make-sample OUT [--break KIND]
        Writes a small synthetic snapshot in gpuleak's layout (two devices, a
        few dozen allocations, blocks live before the trace's window, an
        OOM); with --break, one deliberately broken the way KIND says
        (--break list names the kinds).
    memory_viz.py picture PNG [--min-fraction F] [--min-colours N]
        Decodes PNG (8-bit RGB or RGBA, zlib only) and fails (exit 1) if it
        looks blank: fewer than F (default 0.02) of its pixels differ from
        the background (its most common colour), or fewer than N (default 3)
        of the viewer's ten Tableau10 colours fill at least 200 pixels each.
        Prints the counts.

As a library (import it with sys.dont_write_bytecode set: it lives in a source
tree that distcheck makes read-only): load(), check(), timeline_max(),
sample(), png_stats().

The file format, as gpuleak writes it (pickle protocol 2):
  {'segments': [{'device', 'address', 'total_size', 'allocated_size',
                 'active_size', 'requested_size', 'stream', 'segment_type',
                 'segment_pool_id' (optional), 'is_expandable', 'frames',
                 'blocks': [{'size', 'requested_size', 'state', 'frames'}]}],
   'device_traces': [[{'action', 'addr', 'size', 'stream', 'time_us',
                       'frames', 'device_free' (oom only)}], ...],
   'allocator_settings': {...} (optional),
   'gpuleak': {'version', 'peak_bytes', 'dropped_events', 'max_entries'}
              (optional)}
A frame is {'filename': str, 'line': int, 'name': str}, innermost first.
Each driver allocation is one segment holding one block: segment_alloc then
alloc (same addr and size); its free is free_requested, free_completed,
segment_free.  Segments are the blocks live when the file was written; blocks
tile their segment from its address, in order.
"""

import argparse
import bisect
import io
import pickle
import pickletools
import random
import struct
import sys
import zlib

# The viewer's own defaults and limits.
VIEWER_MAX_ENTRIES = 15000  # create_trace_view's max_entries: the "Detail" slider's start
JS_SAFE = 2**53  # MemoryViz.js's unpickler makes every int of at most 8 bytes a Number
# Opcodes MemoryViz.js's unpickler reads (any other throws "UNKNOWN OPCODE").
VIEWER_OPCODES = frozenset(
    """PROTO APPEND APPENDS LIST TUPLE NEWFALSE NEWTRUE NONE BINGET BININT BININT1
    BININT2 EMPTY_DICT EMPTY_LIST FRAME LONG1 LONG_BINGET MARK MEMOIZE BINPUT
    LONG_BINPUT SETITEMS SETITEM DICT SHORT_BINUNICODE BINUNICODE STOP EMPTY_TUPLE
    TUPLE1 TUPLE2 TUPLE3 BINFLOAT""".split())
TABLEAU10 = ((0x4e, 0x79, 0xa7), (0xf2, 0x8e, 0x2c), (0xe1, 0x57, 0x59), (0x76, 0xb7, 0xb2),
             (0x59, 0xa1, 0x4f), (0xed, 0xc9, 0x49), (0xaf, 0x7a, 0xa1), (0xff, 0x9d, 0xa7),
             (0x9c, 0x75, 0x5f), (0xba, 0xb0, 0xab))

ACTIONS = ('segment_alloc', 'alloc', 'free_requested', 'free_completed', 'segment_free', 'oom')
BLOCK_STATES = ('active_allocated', 'active_pending_free', 'inactive')
TOP_KEYS = {'segments': True, 'device_traces': True, 'allocator_settings': False, 'gpuleak': False}
SEGMENT_KEYS = {'device': int, 'address': int, 'total_size': int, 'allocated_size': int,
                'active_size': int, 'requested_size': int, 'stream': int, 'segment_type': str,
                'is_expandable': bool, 'frames': list, 'blocks': list}
BLOCK_KEYS = {'size': int, 'requested_size': int, 'state': str, 'frames': list}
EVENT_KEYS = {'action': str, 'addr': int, 'size': int, 'stream': int, 'time_us': int, 'frames': list}
FRAME_KEYS = {'filename': str, 'line': int, 'name': str}
GPULEAK_KEYS = {'version': int, 'peak_bytes': list,
                'dropped_events': int, 'max_entries': int}


class SnapshotError(Exception):
    """One inconsistency: where (a path into the snapshot) and what."""

    def __init__(self, where, what):
        super().__init__(f'{where}: {what}' if where else what)
        self.where = where
        self.what = what


def fail(where, what):
    raise SnapshotError(where, what)


class _NoGlobals(pickle.Unpickler):
    def find_class(self, module, name):
        fail('pickle', f'refers to {module}.{name}: a snapshot holds only dicts, lists, '
             'tuples, strings, ints and bools')


def load(path):
    """The raw bytes of PATH and the object they unpickle to."""
    with open(path, 'rb') as f:
        raw = f.read()
    return raw, loads(raw)


def loads(raw):
    try:
        return _NoGlobals(io.BytesIO(raw)).load()
    except SnapshotError:
        raise
    except Exception as e:  # noqa: BLE001 - any unpickling error is the file's
        fail('pickle', f'does not unpickle: {type(e).__name__}: {e}')


def check_opcodes(raw):
    """The pickle uses only opcodes the viewer's unpickler reads, protocol 2-4
    (it throws on others), and nothing follows its STOP."""
    end = 0
    try:
        for op, arg, pos in pickletools.genops(raw):
            if op.name not in VIEWER_OPCODES:
                fail('pickle', f'opcode {op.name} at byte {pos}: the viewer\'s unpickler '
                     'does not read it')
            if op.name == 'PROTO' and not 2 <= arg <= 4:
                fail('pickle', f'protocol {arg}: the viewer reads protocols 2 to 4')
            if op.name == 'LONG1' and len(raw) > pos + 1 and raw[pos + 1] > 8:
                fail('pickle', f'LONG1 of {raw[pos + 1]} bytes at byte {pos}: the viewer makes it '
                     'a BigInt, which its arithmetic cannot mix with numbers')
            end = pos + 1
    except SnapshotError:
        raise
    except Exception as e:  # noqa: BLE001
        fail('pickle', f'not a pickle: {e}')
    if end != len(raw):
        fail('pickle', f'{len(raw) - end} bytes after its STOP opcode')


def _type_ok(value, want):
    if want is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, want)


def _check_int(where, value, minimum=None):
    if not _type_ok(value, int):
        fail(where, f'{type(value).__name__} {value!r}, expected int')
    if not -JS_SAFE < value < JS_SAFE:
        fail(where, f'{value:#x} is beyond 2**53: the viewer (JavaScript numbers) would round it')
    if minimum is not None and value < minimum:
        fail(where, f'{value} is below {minimum}')


def _check_dict(where, obj, fields, optional=()):
    """OBJ is a dict with exactly FIELDS (name: type) plus any of OPTIONAL."""
    if not isinstance(obj, dict):
        fail(where, f'{type(obj).__name__}, expected dict')
    for key in obj:
        if not isinstance(key, str):
            fail(where, f'key {key!r} is not a string')
        if key not in fields and key not in optional:
            fail(where, f'unknown field {key!r}')
    for key, want in fields.items():
        if key not in obj:
            fail(where, f'no {key!r}')
        value = obj[key]
        if want is int:
            _check_int(f'{where}.{key}', value, 0 if key not in ('line',) else None)
        elif not _type_ok(value, want):
            fail(f'{where}.{key}', f'{type(value).__name__} {value!r}, expected {want.__name__}')


def _check_frames(where, frames):
    for i, frame in enumerate(frames):
        _check_dict(f'{where}[{i}]', frame, FRAME_KEYS)


def _hex(n):
    return f'{n:#x}'


def block_addresses(segment):
    """Each block's address: blocks tile their segment from its address, in
    order (the viewer's annotate_snapshot computes them so)."""
    addr = segment['address']
    out = []
    for b in segment['blocks']:
        out.append(addr)
        addr += b['size']
    return out


def check_schema(data):
    """Every documented field, with its type; nothing undocumented."""
    if not isinstance(data, dict):
        fail('', f'the pickle holds a {type(data).__name__}, expected a dict')
    for key in data:
        if key not in TOP_KEYS:
            fail('', f'unknown top-level field {key!r}')
    for key, required in TOP_KEYS.items():
        if required and key not in data:
            fail('', f'no {key!r}')
    traces = data['device_traces']
    if not isinstance(traces, list):
        fail('device_traces', f'{type(traces).__name__}, expected a list (one per device)')
    for d, trace in enumerate(traces):
        if not isinstance(trace, list):
            fail(f'device_traces[{d}]', f'{type(trace).__name__}, expected a list')
        for i, e in enumerate(trace):
            where = f'device_traces[{d}][{i}]'
            _check_dict(where, e, EVENT_KEYS, ('device_free',))
            if e['action'] not in ACTIONS:
                fail(f'{where}.action', f'{e["action"]!r} is none of {", ".join(ACTIONS)}')
            if e['action'] == 'oom':
                if 'device_free' not in e:
                    fail(where, "an oom without 'device_free'")
                _check_int(f'{where}.device_free', e['device_free'], 0)
            elif 'device_free' in e:
                fail(where, f"'device_free' on a {e['action']} event (oom only)")
            _check_frames(f'{where}.frames', e['frames'])
            if i > 0 and e['time_us'] < trace[i - 1]['time_us']:
                fail(f'{where}.time_us', f'{e["time_us"]} goes back in time (the event before: '
                     f'{trace[i - 1]["time_us"]})')
    segments = data['segments']
    if not isinstance(segments, list):
        fail('segments', f'{type(segments).__name__}, expected a list')
    for s, seg in enumerate(segments):
        where = f'segments[{s}]'
        _check_dict(where, seg, SEGMENT_KEYS, ('segment_pool_id',))
        if seg['segment_type'] not in ('large', 'small'):
            fail(f'{where}.segment_type', f"{seg['segment_type']!r}, expected 'large' or 'small'")
        if 'segment_pool_id' in seg:
            pool = seg['segment_pool_id']
            if not (isinstance(pool, tuple) and len(pool) == 2 and all(_type_ok(x, int) for x in pool)):
                fail(f'{where}.segment_pool_id', f'{pool!r}, expected a tuple of two ints')
        if seg['device'] >= len(traces):
            fail(f'{where}.device', f'{seg["device"]}, but device_traces has {len(traces)} '
                 'lists: the viewer indexes device_traces by it')
        _check_frames(f'{where}.frames', seg['frames'])
        if not seg['blocks']:
            fail(f'{where}.blocks', 'empty: a segment holds at least one block')
        allocated = active = requested = total = 0
        for b, block in enumerate(seg['blocks']):
            bw = f'{where}.blocks[{b}]'
            _check_dict(bw, block, BLOCK_KEYS, optional=('address',))
            # PyTorch's snapshots name each block's address too; the viewer
            # computes it from the tiling, so the two must agree.
            if 'address' in block and block['address'] != seg['address'] + total:
                fail(f'{bw}.address', f"{block['address']:#x}, but the blocks before it put it "
                     f"at {seg['address'] + total:#x}")
            if block['state'] not in BLOCK_STATES:
                fail(f'{bw}.state', f"{block['state']!r}, expected 'active_allocated' or 'inactive'")
            _check_frames(f'{bw}.frames', block['frames'])
            if block['size'] <= 0:
                fail(f'{bw}.size', f'{block["size"]}: a block has a size')
            if block['state'] != 'inactive' and block['requested_size'] == 0:
                fail(f'{bw}.requested_size', '0 for a live block: older versions of the viewer '
                     'draw its size instead (requested_size || size)')
            if block['requested_size'] > block['size']:
                fail(f'{bw}.requested_size', f'{block["requested_size"]} exceeds the block\'s size '
                     f'{block["size"]}')
            total += block['size']
            if block['state'] == 'active_allocated':
                allocated += block['size']
            if block['state'] != 'inactive':
                active += block['size']
                requested += block['requested_size']
        if total != seg['total_size']:
            fail(f'{where}.blocks', f'do not tile the segment: their sizes add up to {total}, '
                 f'its total_size is {seg["total_size"]}')
        for key, want in (('allocated_size', allocated), ('active_size', active),
                          ('requested_size', requested)):
            if seg[key] != want:
                fail(f'{where}.{key}', f'{seg[key]}, but its blocks make it {want}')
    if 'allocator_settings' in data and not isinstance(data['allocator_settings'], dict):
        fail('allocator_settings', f'{type(data["allocator_settings"]).__name__}, expected dict')
    if 'gpuleak' in data:
        g = data['gpuleak']
        _check_dict('gpuleak', g, GPULEAK_KEYS, optional=('tool', 'pid', 'command'))
        if g['version'] != 1:
            fail('gpuleak.version', f'{g["version"]}, this checker reads version 1')
        if len(g['peak_bytes']) != len(traces):
            fail('gpuleak.peak_bytes', f'{len(g["peak_bytes"])} entries for {len(traces)} devices')
        for d, p in enumerate(g['peak_bytes']):
            _check_int(f'gpuleak.peak_bytes[{d}]', p, 0)


class _Intervals:
    """Live [addr, addr + size) ranges, disjoint, by address."""

    def __init__(self):
        self.size = {}
        self.starts = []

    def find(self, addr, size):
        """The live range that overlaps [addr, addr + size), or None."""
        i = bisect.bisect_right(self.starts, addr)
        for j in (i - 1, i):
            if 0 <= j < len(self.starts):
                a = self.starts[j]
                if a < addr + max(size, 1) and addr < a + self.size[a]:
                    return a
        return None

    def add(self, addr, size):
        bisect.insort(self.starts, addr)
        self.size[addr] = size

    def remove(self, addr):
        del self.starts[bisect.bisect_left(self.starts, addr)]
        del self.size[addr]


def _device_segments(data, device):
    """Snapshot segments of DEVICE: {address: (segment index, total_size)} and
    their non-inactive blocks: {address: (where, requested_size, state)}."""
    segs, blocks = {}, {}
    for s, seg in enumerate(data['segments']):
        if seg['device'] != device:
            continue
        if seg['address'] in segs:
            fail(f'segments[{s}]', f'a second segment at {_hex(seg["address"])} on device {device}')
        segs[seg['address']] = (s, seg['total_size'])
        for b, (addr, block) in enumerate(zip(block_addresses(seg), seg['blocks'])):
            if block['state'] != 'inactive':
                blocks[addr] = (f'segments[{s}].blocks[{b}]', block['requested_size'], block['state'])
    return segs, blocks


def replay(data, device, gpuleak_layout=True):
    """Replays DEVICE's trace from the state before its window and checks it
    against the segments.  The state before the window: the segments and
    blocks listed at the end that no event of the window touches, plus those
    whose first event in the window frees them (a ring buffer dropped their
    allocation).  Returns counts."""
    trace = data['device_traces'][device]
    snap_segs, snap_blocks = _device_segments(data, device)
    first_seg, first_block = {}, {}
    for i, e in enumerate(trace):
        a = e['action']
        if a in ('segment_alloc', 'segment_free'):
            first_seg.setdefault(e['addr'], i)
        elif a in ('alloc', 'free_requested', 'free_completed'):
            first_block.setdefault(e['addr'], i)
    where_t = f'device_traces[{device}]'
    segs, blocks = _Intervals(), _Intervals()
    pending = set()
    pre_blocks = set()
    for addr, (s, size) in snap_segs.items():
        if addr not in first_seg:
            segs.add(addr, size)  # live before the window, untouched in it
    for addr, i in first_seg.items():
        e = trace[i]
        if e['action'] == 'segment_free':
            other = segs.find(addr, e['size'])
            if other is not None:
                fail(f'{where_t}[{i}]', f'segment_free of {_hex(addr)}, live before the window, '
                     f'overlaps segment {_hex(other)} also live then')
            segs.add(addr, e['size'])
    for addr, (w, requested, state) in snap_blocks.items():
        if addr not in first_block:
            blocks.add(addr, requested)
            pre_blocks.add(addr)
            if state == 'active_pending_free':
                pending.add(addr)
    for addr, i in first_block.items():
        e = trace[i]
        if e['action'] in ('free_requested', 'free_completed'):
            blocks.add(addr, e['size'])
            pre_blocks.add(addr)
    g = data.get('gpuleak')
    for addr in list(blocks.starts):
        if addr in first_block:
            i = first_block[addr]
            w = f'{where_t}[{i}]'
            what = f'{trace[i]["action"]} of {_hex(addr)}, not allocated in the window'
        else:
            w, what = snap_blocks[addr][0], f'block {_hex(addr)}, not allocated in the window'
        if g is not None and g['dropped_events'] == 0:
            fail(w, f'{what}, but gpuleak.dropped_events is 0: nothing was live before it')
        if segs.find(addr, blocks.size[addr]) is None:
            fail(w, f'{what}, and no segment live before the window holds it')

    counts = {'alloc': 0, 'free': 0, 'oom': 0, 'segment_alloc': 0, 'segment_free': 0}
    for i, e in enumerate(trace):
        a, addr, size = e['action'], e['addr'], e['size']
        w = f'{where_t}[{i}]'
        if a == 'segment_alloc':
            other = segs.find(addr, size)
            if other is not None:
                if other == addr:
                    fail(w, f'segment_alloc of {_hex(addr)}, already a live segment: allocated '
                         'twice without a segment_free')
                fail(w, f'segment_alloc of {_hex(addr)} ({size} bytes) overlaps live segment '
                     f'{_hex(other)} ({segs.size[other]} bytes)')
            segs.add(addr, size)
            counts['segment_alloc'] += 1
        elif a == 'segment_free':
            if addr not in segs.size:
                fail(w, f'segment_free of {_hex(addr)}, which is no live segment')
            if segs.size[addr] != size:
                fail(w, f'segment_free of {_hex(addr)} with size {size}, but the segment has '
                     f'{segs.size[addr]}')
            inside = blocks.find(addr, size)
            if inside is not None:
                fail(w, f'segment_free of {_hex(addr)} while its block {_hex(inside)} is live')
            segs.remove(addr)
            counts['segment_free'] += 1
        elif a == 'alloc':
            if addr in blocks.size:
                fail(w, f'alloc of {_hex(addr)}, already live: allocated twice without a free')
            other = blocks.find(addr, size)
            if other is not None:
                fail(w, f'alloc of {_hex(addr)} ({size} bytes) overlaps live block {_hex(other)}')
            seg = segs.find(addr, size)
            if seg is None or not (seg <= addr and addr + size <= seg + segs.size[seg]):
                fail(w, f'alloc of {_hex(addr)} ({size} bytes) lies in no live segment')
            blocks.add(addr, size)
            counts['alloc'] += 1
        elif a in ('free_requested', 'free_completed'):
            if addr not in blocks.size:
                fail(w, f'{a} of {_hex(addr)}, neither allocated in the window nor a block '
                     'live before it')
            if blocks.size[addr] != size:
                fail(w, f'{a} of {_hex(addr)} with size {size}, but it was allocated with '
                     f'{blocks.size[addr]}')
            if a == 'free_requested':
                if addr in pending:
                    fail(w, f'free_requested of {_hex(addr)} twice')
                pending.add(addr)
            else:
                blocks.remove(addr)
                pending.discard(addr)
                counts['free'] += 1
        elif a == 'oom':
            counts['oom'] += 1
        if gpuleak_layout:
            _check_grouping(trace, i, w)

    # The end of the replay is what the segments list.
    for addr in segs.starts:
        if addr not in snap_segs:
            fail(where_t, f'segment {_hex(addr)} is live at the end of the trace but missing '
                 'from segments')
        s, size = snap_segs[addr]
        if size != segs.size[addr]:
            fail(f'segments[{s}].total_size', f'{size}, but the trace allocated {segs.size[addr]}')
    for addr, (s, _size) in snap_segs.items():
        if addr not in segs.size:
            fail(f'segments[{s}]', f'segment {_hex(addr)} is listed but the trace freed it')
    for addr in blocks.starts:
        if addr not in snap_blocks:
            fail(where_t, f'block {_hex(addr)} is live at the end of the trace but missing '
                 'from segments\' blocks')
        w, requested, state = snap_blocks[addr]
        if requested != blocks.size[addr]:
            fail(f'{w}.requested_size', f'{requested}, but the trace allocated {blocks.size[addr]}')
        want = 'active_pending_free' if addr in pending else 'active_allocated'
        if state != want:
            fail(f'{w}.state', f'{state!r}, but the trace makes it {want!r}')
    for addr, (w, _r, _s) in snap_blocks.items():
        if addr not in blocks.size:
            fail(w, f'block {_hex(addr)} is listed active but the trace freed it')
    counts['live'] = len(blocks.starts)
    counts['segments'] = len(segs.starts)
    return counts


# What gpuleak writes around each event: (offset, action) that must stand
# beside it with the same address (and size), unless cut by the window's start.
_GROUPS = {
    'segment_alloc': ((1, 'alloc'),),
    'alloc': ((-1, 'segment_alloc'),),
    'free_requested': ((1, 'free_completed'), (2, 'segment_free')),
    'free_completed': ((-1, 'free_requested'), (1, 'segment_free')),
    'segment_free': ((-2, 'free_requested'), (-1, 'free_completed')),
}


def _check_grouping(trace, i, where):
    e = trace[i]
    for off, action in _GROUPS.get(e['action'], ()):
        j = i + off
        if j < 0:
            continue  # the window starts inside the group
        o = trace[j] if j < len(trace) else None
        if o is None or o['action'] != action or o['addr'] != e['addr'] or o['size'] != e['size']:
            got = 'the end of the trace' if o is None else \
                f'{o["action"]} of {_hex(o["addr"])} ({o["size"]} bytes)'
            fail(where, f'{e["action"]} of {_hex(e["addr"])} ({e["size"]} bytes): gpuleak writes '
                 f'{action} of the same address and size at [{j}], found {got}')


def check_layout(data):
    """gpuleak's layout: one block a segment, the whole segment, allocated."""
    for s, seg in enumerate(data['segments']):
        if len(seg['blocks']) != 1:
            fail(f'segments[{s}].blocks', f'{len(seg["blocks"])} blocks: gpuleak writes one a segment')
        b = seg['blocks'][0]
        if b['state'] != 'active_allocated':
            fail(f'segments[{s}].blocks[0].state', f"{b['state']!r}: gpuleak lists live blocks only")


def annotated_trace(trace):
    """The trace as the viewer's annotate_snapshot leaves it: a free_requested
    right before the free_completed of its address becomes one 'free' event,
    the free_completed dropped.  (action, addr, size) tuples."""
    out = []
    for e in trace:
        a = e['action']
        if a == 'free_completed' and out and out[-1][0] == 'free_requested' and out[-1][1] == e['addr']:
            out[-1] = ('free',) + out[-1][1:]
            continue
        out.append((a, e['addr'], e['size']))
    return out


def timeline(data, device, max_entries=VIEWER_MAX_ENTRIES):
    """The 'Active Memory Timeline' of DEVICE as the viewer computes it
    (process_alloc_data in MemoryViz.js, allocations rather than segments):
    returns (max_size, number of elements, number of initially allocated).

    Elements: each alloc of the window, each free of an address not allocated
    in the window (it was live before: initially allocated), and each
    active_allocated block of the segments not allocated in the window
    (initially allocated too, with its requested_size).  The running sum
    starts from the initially allocated and moves with each alloc and free;
    the maximum is sampled after each action on one of the max_entries
    largest elements only (the rest are summarized, their actions not
    sampling it)."""
    sizes = []  # element id -> size
    initially = []
    actions = []
    addr_to_alloc = {}
    for action, addr, size in annotated_trace(data['device_traces'][device]):
        if action == 'alloc':
            sizes.append(size)
            addr_to_alloc[addr] = len(sizes) - 1
            actions.append(len(sizes) - 1)
        elif action in ('free', 'free_completed'):
            if addr in addr_to_alloc:
                actions.append(addr_to_alloc.pop(addr))
            else:
                sizes.append(size)
                initially.append(len(sizes) - 1)
                actions.append(len(sizes) - 1)
    for seg in data['segments']:
        if seg['device'] != device:
            continue
        for addr, b in zip(block_addresses(seg), seg['blocks']):
            if b['state'] == 'active_allocated' and addr not in addr_to_alloc:
                sizes.append(b['requested_size'])
                initially.append(len(sizes) - 1)
    initially.reverse()
    if not actions and initially:
        actions.append(initially.pop())
    # The largest max_entries elements are drawn (a stable sort, largest first).
    order = sorted(range(len(sizes)), key=lambda i: -sizes[i])
    drawn = set(order[:max(0, max_entries)])
    total = summarized = max_size = 0
    current = set()
    summarized_seen = set()
    for elem in initially:
        if elem in drawn:
            current.add(elem)
            total += sizes[elem]
        else:
            summarized += sizes[elem]
            summarized_seen.add(elem)
    for elem in actions:
        size = sizes[elem]
        if elem not in drawn:
            if elem in summarized_seen:
                summarized -= size
            else:
                summarized += size
                summarized_seen.add(elem)
            continue
        if elem in current:
            current.discard(elem)
            total -= size
        else:
            current.add(elem)
            total += size
        max_size = max(total + summarized, max_size)
    return max_size, len(sizes), len(initially)


def timeline_max(data, device, max_entries=VIEWER_MAX_ENTRIES):
    return timeline(data, device, max_entries)[0]


def check(data, raw=None, gpuleak_layout=True, max_entries=None, viz_entries=VIEWER_MAX_ENTRIES):
    """Checks DATA (and RAW, its pickle, when given); raises SnapshotError on
    the first inconsistency.  Returns a summary dict: per device the counts
    and the timeline's maximum."""
    if raw is not None:
        check_opcodes(raw)
    check_schema(data)
    if gpuleak_layout:
        check_layout(data)
    traces = data['device_traces']
    g = data.get('gpuleak')
    if max_entries is not None and g is not None and g['max_entries'] != max_entries:
        fail('gpuleak.max_entries', f'{g["max_entries"]}, expected {max_entries}')
    limit = max_entries
    if limit is None and g is not None and g['max_entries'] > 0:
        limit = g['max_entries']
    summary = {'devices': []}
    # gpuleak's max_entries counts its history's events (allocations, frees,
    # refusals), each written as two or three trace entries, over all devices.
    recorded = sum(1 for trace in traces for e in trace
                   if e.get('action') in ('alloc', 'free_completed', 'oom'))
    if limit is not None and recorded > limit:
        fail('device_traces', f'{recorded} allocations, frees and ooms, more than max_entries '
             f'{limit}')
    for d, trace in enumerate(traces):
        counts = replay(data, d, gpuleak_layout)
        counts['max'], counts['elements'], counts['initially'] = timeline(data, d, viz_entries)
        counts['events'] = len(trace)
        summary['devices'].append(counts)
    if g is not None:
        for d, counts in enumerate(summary['devices']):
            peak = g['peak_bytes'][d]
            if peak < counts['max']:
                fail(f'gpuleak.peak_bytes[{d}]', f'{peak}, below the timeline\'s maximum '
                     f'{counts["max"]} (the bytes live at some point of the trace)')
            if g['dropped_events'] == 0 and viz_entries >= counts['elements'] and peak != counts['max']:
                fail(f'gpuleak.peak_bytes[{d}]', f'{peak}, but no event was dropped and the '
                     f'timeline\'s maximum is {counts["max"]}')
    return summary


def _size(n):
    for unit in ('B', 'KiB', 'MiB', 'GiB', 'TiB'):
        if abs(n) < 1024 or unit == 'TiB':
            return f'{n:.1f} {unit}' if unit != 'B' else f'{n} B'
        n /= 1024.0
    return str(n)


def summary_line(name, summary):
    devs = summary['devices']
    tot = {k: sum(c[k] for c in devs) for k in ('alloc', 'free', 'oom', 'live', 'segments')}
    maxes = ', '.join(f'device {d} {c["max"]} ({_size(c["max"])})' for d, c in enumerate(devs))
    return (f'memory_viz: {name}: ok: {len(devs)} devices, {tot["alloc"]} allocs, {tot["free"]} frees, '
            f'{tot["oom"]} ooms, {tot["live"]} live blocks in {tot["segments"]} segments; '
            f'timeline max: {maxes or "none"}')


# ---- the synthetic sample ----

_PY_FRAMES = [
    ('train.py', 'main', 88), ('train.py', 'step', 41), ('model.py', 'forward', 17),
    ('model.py', 'attention', 63), ('data.py', 'load_batch', 29),
]
_NATIVE = [
    ('libcudart.so.12', 'cudaMalloc', 0),
    ('libtorch_cuda.so', 'c10::cuda::CUDACachingAllocator::malloc', 0),
    ('libgpuleak_fixture.so', 'leaky_kernel_buffer', 211),
]


def sample(seed=7, broken=None):
    """A small snapshot in gpuleak's layout: device 0 with a few dozen
    allocations of varied sizes (some live before the window, one freed in
    it), device 1 with a handful and an OOM.  BROKEN names one deliberate
    inconsistency (see BREAKS).  Returns (dict, pickle bytes)."""
    rng = random.Random(seed)
    # Frame lists shared by many events: the pickle memoizes them (BINPUT)
    # and refers to them again (BINGET/LONG_BINGET), as gpuleak's writer does.
    stacks = []
    for k in range(6):
        frames = [{'filename': f, 'line': ln + k, 'name': n} for f, n, ln in rng.sample(_NATIVE, 2)]
        frames += [{'filename': f, 'line': ln, 'name': n} for f, n, ln in _PY_FRAMES[k % 3:k % 3 + 3]]
        stacks.append(frames)
    t = [1_000_000]

    def ev(action, addr, size, frames, stream=0, **extra):
        t[0] += rng.randrange(50, 5000)
        e = {'action': action, 'addr': addr, 'size': size, 'stream': stream, 'time_us': t[0],
             'frames': frames}
        e.update(extra)
        return e

    traces = [[], []]
    live = [{}, {}]  # addr -> (size, frames, stream)
    peak = [0, 0]
    cur = [0, 0]
    next_addr = [0x7f3a00000000, 0x7e1200000000]
    dropped = [0]

    def alloc(d, size, in_window=True):
        addr = next_addr[d]
        next_addr[d] += (size + 0x1fffff) // 0x200000 * 0x200000
        frames = rng.choice(stacks)
        stream = rng.choice((0, 0, 0, 0x5a17e0))
        live[d][addr] = (size, frames, stream)
        cur[d] += size
        peak[d] = max(peak[d], cur[d])
        if in_window:
            traces[d].append(ev('segment_alloc', addr, size, frames, stream))
            traces[d].append(ev('alloc', addr, size, frames, stream))
        else:
            dropped[0] += 2
        return addr

    def free(d, addr):
        size, frames, stream = live[d].pop(addr)
        cur[d] -= size
        for action in ('free_requested', 'free_completed', 'segment_free'):
            traces[d].append(ev(action, addr, size, frames, stream))

    MiB = 1 << 20
    # Before the window (a ring buffer dropped their events): two blocks, one
    # freed in the window, one still live at the end.
    pre_a = alloc(0, 96 * MiB, in_window=False)
    alloc(0, 24 * MiB + 4096, in_window=False)
    # Device 0: three "epochs" of growth and release, with a slow leak.
    for epoch in range(3):
        batch = []
        for _ in range(rng.randrange(8, 13)):
            size = rng.choice((512, 4096, 1 * MiB, 3 * MiB, 8 * MiB + 512, 16 * MiB, 40 * MiB))
            size += rng.randrange(0, 64) * 256
            batch.append(alloc(0, size))
        if epoch == 0:
            free(0, pre_a)
        rng.shuffle(batch)
        for addr in batch[:len(batch) - 2]:
            free(0, addr)
    # Device 1: a few blocks and an OOM.
    b1 = [alloc(1, s) for s in (2 * MiB, 64 * MiB, 7 * MiB)]
    traces[1].append(ev('oom', 0, 80 << 30, stacks[0], device_free=512 * MiB))
    free(1, b1[1])
    alloc(1, 5 * MiB)

    segments = []
    for d in (0, 1):
        for addr in sorted(live[d]):
            size, frames, stream = live[d][addr]
            segments.append({
                'device': d, 'address': addr, 'total_size': size, 'allocated_size': size,
                'active_size': size, 'requested_size': size, 'stream': stream,
                'segment_type': 'large' if size > MiB else 'small', 'segment_pool_id': (0, 0),
                'is_expandable': False, 'frames': frames,
                'blocks': [{'size': size, 'requested_size': size, 'state': 'active_allocated',
                            'frames': frames}]})
    data = {'segments': segments, 'device_traces': traces,
            'allocator_settings': {'gpuleak_memory_viz': True},
            'gpuleak': {'version': 1, 'peak_bytes': peak, 'dropped_events': dropped[0],
                        'max_entries': 4096}}
    if broken:
        BREAKS[broken][1](data)
    raw = pickle.dumps(data, protocol=2)
    if broken == 'protocol5':
        raw = pickle.dumps(data, protocol=5)
    elif broken == 'trailing-bytes':
        raw += b'\0\0'
    return data, raw


def _nth(trace, action, n=0):
    return [e for e in trace if e['action'] == action][n]


def _brk_double_alloc(d):
    t = d['device_traces'][0]
    a = _nth(t, 'alloc', 3)
    t.insert(t.index(a) + 1, dict(a))


def _brk_free_unknown(d):
    t = d['device_traces'][0]
    e = _nth(t, 'free_completed', 4)
    e['addr'] += 0x100


def _brk_stale_segment(d):
    freed = _nth(d['device_traces'][0], 'segment_free', 2)
    s = d['segments'][0]
    blocks = [dict(s['blocks'][0], size=freed['size'], requested_size=freed['size'])]
    d['segments'].append(dict(s, address=freed['addr'], total_size=freed['size'],
                              allocated_size=freed['size'], active_size=freed['size'],
                              requested_size=freed['size'], blocks=blocks))


def _brk_missing_segment(d):
    d['segments'].pop()


def _brk_tiling(d):
    d['segments'][0]['blocks'][0]['size'] += 512


def _brk_field_type(d):
    d['device_traces'][0][5]['size'] = str(d['device_traces'][0][5]['size'])


def _brk_unknown_action(d):
    d['device_traces'][0][2]['action'] = 'free'


def _brk_big_address(d):
    for e in d['device_traces'][1]:
        e['addr'] |= 1 << 60
    for s in d['segments']:
        if s['device'] == 1:
            s['address'] |= 1 << 60


def _brk_time(d):
    t = d['device_traces'][0]
    t[7]['time_us'] = t[6]['time_us'] - 1


def _brk_peak(d):
    d['gpuleak']['peak_bytes'][0] = 1


def _brk_grouping(d):
    # Two driver allocations interleaved: segment_alloc A, segment_alloc B,
    # alloc A, alloc B.  Consistent for any allocator, not as gpuleak writes.
    t = d['device_traces'][0]
    i = t.index(_nth(t, 'segment_alloc', 2))
    assert [e['action'] for e in t[i:i + 4]] == ['segment_alloc', 'alloc'] * 2
    times = [e['time_us'] for e in t[i:i + 4]]
    t[i:i + 4] = [dict(e, time_us=tm) for e, tm in zip((t[i], t[i + 2], t[i + 1], t[i + 3]), times)]


def _brk_device(d):
    d['segments'][-1]['device'] = 2


def _brk_dropped(d):
    d['gpuleak']['dropped_events'] = 0


def _brk_missing_field(d):
    del d['segments'][1]['is_expandable']


BREAKS = {
    'double-alloc': ('an address allocated twice without a free', _brk_double_alloc),
    'free-unknown': ('a free_completed of an address never allocated', _brk_free_unknown),
    'stale-segment': ('a segment listed that the trace never allocated (the trace freed it)',
                      _brk_stale_segment),
    'missing-segment': ('a block live at the end missing from segments', _brk_missing_segment),
    'tiling': ('blocks that do not tile their segment', _brk_tiling),
    'field-type': ('an event size that is a string', _brk_field_type),
    'missing-field': ('a segment without is_expandable', _brk_missing_field),
    'unknown-action': ("an action 'free' (not gpuleak's)", _brk_unknown_action),
    'big-address': ('addresses past 2**53, which JavaScript rounds', _brk_big_address),
    'time-backwards': ('a time_us before the previous event\'s', _brk_time),
    'peak': ('gpuleak.peak_bytes below the timeline\'s maximum', _brk_peak),
    'grouping': ('two driver allocations\' events interleaved', _brk_grouping),
    'device': ('a segment on a device with no trace list', _brk_device),
    'dropped-zero': ('blocks live before the window, but no event dropped', _brk_dropped),
    'protocol5': ('pickle protocol 5, which the viewer cannot read', lambda d: None),
    'trailing-bytes': ('bytes after the pickle\'s STOP', lambda d: None),
}


# ---- PNG, for the screenshot's test ----

def png_pixels(raw):
    """(width, height, rows of RGB tuples) of an 8-bit RGB, RGBA or palette
    PNG, not interlaced (what Chromium's screenshots are)."""
    if raw[:8] != b'\x89PNG\r\n\x1a\n':
        raise ValueError('not a PNG')
    pos, idat, ihdr, palette = 8, [], None, None
    while pos < len(raw):
        n, kind = struct.unpack('>I4s', raw[pos:pos + 8])
        body = raw[pos + 8:pos + 8 + n]
        if zlib.crc32(kind + body) != struct.unpack('>I', raw[pos + 8 + n:pos + 12 + n])[0]:
            raise ValueError(f'bad CRC in chunk {kind!r}')
        if kind == b'IHDR':
            ihdr = struct.unpack('>IIBBBBB', body)
        elif kind == b'PLTE':
            palette = [tuple(body[i:i + 3]) for i in range(0, len(body) - 2, 3)]
        elif kind == b'IDAT':
            idat.append(body)
        elif kind == b'IEND':
            break
        pos += 12 + n
    if ihdr is None:
        raise ValueError('no IHDR')
    w, h, depth, ctype, _comp, _filt, interlace = ihdr
    if depth != 8 or ctype not in (2, 3, 6) or interlace:
        raise ValueError(f'unsupported PNG: depth {depth}, colour type {ctype}, interlace {interlace}')
    if ctype == 3 and palette is None:
        raise ValueError('a palette PNG without PLTE')
    bpp = {2: 3, 3: 1, 6: 4}[ctype]
    data = zlib.decompress(b''.join(idat))
    stride = w * bpp
    prev = bytearray(stride)
    rows = []
    for y in range(h):
        f = data[y * (stride + 1)]
        line = bytearray(data[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        if f == 1:
            for i in range(bpp, stride):
                line[i] = (line[i] + line[i - bpp]) & 0xff
        elif f == 2:
            for i in range(stride):
                line[i] = (line[i] + prev[i]) & 0xff
        elif f == 3:
            for i in range(stride):
                left = line[i - bpp] if i >= bpp else 0
                line[i] = (line[i] + ((left + prev[i]) >> 1)) & 0xff
        elif f == 4:
            for i in range(stride):
                a = line[i - bpp] if i >= bpp else 0
                b = prev[i]
                c = prev[i - bpp] if i >= bpp else 0
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pred = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                line[i] = (line[i] + pred) & 0xff
        elif f != 0:
            raise ValueError(f'bad filter {f} in row {y}')
        if ctype == 3:
            rows.append([palette[i] for i in line])
        else:
            rows.append([tuple(line[i:i + 3]) for i in range(0, stride, bpp)])
        prev = line
    return w, h, rows


def png_stats(raw):
    """Width, height, background colour, fraction of other pixels, and the
    pixel count of each Tableau10 colour."""
    from collections import Counter
    w, h, rows = png_pixels(raw)
    counts = Counter()
    for row in rows:
        counts.update(row)
    background, bg_count = counts.most_common(1)[0]
    total = w * h
    return {'width': w, 'height': h, 'background': background,
            'foreground': (total - bg_count) / total if total else 0.0,
            'distinct': len(counts),
            'tableau10': {c: counts.get(c, 0) for c in TABLEAU10}}


def write_png(path, w, h, pixel):
    """A plain RGB PNG (for the self-tests): pixel(x, y) -> (r, g, b)."""
    body = b''.join(b'\0' + bytes(v for x in range(w) for v in pixel(x, y)) for y in range(h))

    def chunk(kind, data):
        return struct.pack('>I', len(data)) + kind + data + struct.pack('>I', zlib.crc32(kind + data))
    with open(path, 'wb') as f:
        f.write(b'\x89PNG\r\n\x1a\n' + chunk(b'IHDR', struct.pack('>IIBBBBB', w, h, 8, 2, 0, 0, 0))
                + chunk(b'IDAT', zlib.compress(body)) + chunk(b'IEND', b''))


# ---- command line ----

def _cmd_check(args):
    try:
        raw, data = load(args.file)
        summary = check(data, raw, gpuleak_layout=not args.any_layout, max_entries=args.max_entries,
                        viz_entries=args.viz_entries)
        devs = summary['devices']
        if args.allocs is not None:
            if args.device is not None:
                if args.device >= len(devs):
                    fail('--device', f'{args.device}, but the file has {len(devs)} devices')
                got, what = devs[args.device]['alloc'], f'device {args.device}'
            else:
                got, what = sum(c['alloc'] for c in devs), 'all devices'
            if got != args.allocs:
                fail('--allocs', f'{got} alloc events on {what}, expected {args.allocs}')
        if args.peak is not None:
            d = args.device or 0
            if d >= len(devs):
                fail('--device', f'{d}, but the file has {len(devs)} devices')
            if devs[d]['max'] != args.peak:
                fail('--peak', f'the timeline\'s maximum on device {d} is {devs[d]["max"]}, '
                     f'expected {args.peak}')
    except SnapshotError as e:
        print(f'memory_viz: {args.file}: {e}', file=sys.stderr)
        return 1
    except OSError as e:
        print(f'memory_viz: {args.file}: {e.strerror}', file=sys.stderr)
        return 1
    if args.json:
        import json
        print(json.dumps(summary, sort_keys=True))
    else:
        print(summary_line(args.file, summary))
    return 0


def _cmd_make_sample(args):
    if args.brk == 'list':
        for name, (what, _f) in BREAKS.items():
            print(f'{name}\t{what}')
        return 0
    if args.out is None:
        print('memory_viz: make-sample: OUT is required', file=sys.stderr)
        return 2
    if args.brk is not None and args.brk not in BREAKS:
        print(f'memory_viz: make-sample: no break {args.brk!r} (--break list)', file=sys.stderr)
        return 2
    _data, raw = sample(broken=args.brk)
    with open(args.out, 'wb') as f:
        f.write(raw)
    return 0


def _cmd_picture(args):
    with open(args.png, 'rb') as f:
        raw = f.read()
    try:
        st = png_stats(raw)
    except (ValueError, zlib.error, struct.error) as e:
        print(f'memory_viz: {args.png}: {e}', file=sys.stderr)
        return 1
    filled = sum(1 for n in st['tableau10'].values() if n >= 200)
    line = (f'{args.png}: {st["width"]}x{st["height"]}, background #{bytes(st["background"]).hex()}, '
            f'{st["foreground"]:.1%} other pixels, {st["distinct"]} colours, '
            f'{filled} Tableau10 colours filled')
    if st['foreground'] < args.min_fraction or filled < args.min_colours:
        print(f'memory_viz: {line}: looks blank (want {args.min_fraction:.1%} other pixels and '
              f'{args.min_colours} Tableau10 colours)', file=sys.stderr)
        return 1
    print(f'memory_viz: {line}')
    return 0


def main(argv=None):
    p = argparse.ArgumentParser(prog='memory_viz.py', description=__doc__.split('\n\n')[0])
    sub = p.add_subparsers(dest='cmd', required=True)
    c = sub.add_parser('check', help='check a snapshot pickle')
    c.add_argument('file')
    c.add_argument('--allocs', type=int)
    c.add_argument('--device', type=int)
    c.add_argument('--peak', type=int)
    c.add_argument('--max-entries', type=int)
    c.add_argument('--viz-entries', type=int, default=VIEWER_MAX_ENTRIES)
    c.add_argument('--any-layout', action='store_true')
    c.add_argument('--json', action='store_true')
    m = sub.add_parser('make-sample', help='write a synthetic snapshot')
    m.add_argument('out', nargs='?')
    m.add_argument('--break', dest='brk', metavar='KIND')
    q = sub.add_parser('picture', help='fail if a PNG screenshot looks blank')
    q.add_argument('png')
    q.add_argument('--min-fraction', type=float, default=0.02)
    q.add_argument('--min-colours', type=int, default=3)
    args = p.parse_args(argv)
    commands = {'check': _cmd_check, 'make-sample': _cmd_make_sample, 'picture': _cmd_picture}
    return commands[args.cmd](args)


if __name__ == '__main__':
    sys.exit(main())
