#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Renders a PyTorch memory-viz page to a PNG with headless Chromium, with no
network: torch's trace_plot page imports MemoryViz.js from a CDN, and
MemoryViz.js imports d3 v5 modules from another; both are served here from
local files instead.

    render.py [options] INPUT PNG

INPUT is either the HTML page that `python -m torch.cuda._memory_viz
trace_plot SNAPSHOT -o PAGE.html` writes, or a snapshot pickle itself (as
gpuleak --memory-viz writes it), from which the same page is built: the
pickle, padded with zeros to a multiple of 3 bytes as torch pads it, embedded
base64 in add_local_files([{name, base64}], VIEW).

  --memoryviz PATH  PyTorch's torch/utils/viz/MemoryViz.js (default: $MEMORY_VIZ_JS).
                    Not part of gpuleak: take it from a PyTorch source tree
                    of the version whose page you render.
  --d3 PATH         a d3 v5 UMD bundle (default: $D3_V5_JS, else Debian's
                    node-d3 package: /usr/share/nodejs/d3/dist/d3.min.js).
                    MemoryViz.js uses d3.event, which d3 v6 removed.
  --chromium BIN    default: $CHROMIUM, else chromium, chromium-headless-shell,
                    google-chrome, whichever is found first.
  --view VIEW       for a pickle INPUT: 'Active Memory Timeline' (default),
                    'Allocator State History' or 'Active Cached Segment Timeline'
  --name NAME       for a pickle INPUT: the name the page's first <select>
                    shows (default: the pickle's file name)
  --size W,H        window size (default 1400,900)
  --budget MS       virtual time Chromium lets the page run before the
                    picture (default 10000)
  --keep DIR        also write the served files (index.html, MemoryViz.js
                    rewritten, d3.v5.min.js) into DIR, to open by hand
  --no-crosscheck   skip the cross-check below

Before the picture the page is loaded once more with an extra script that
asks the viewer's own code (process_alloc_data, exported from the served copy
only) for each device's timeline maximum; tests/memory_viz.py must compute
the same numbers, and the page must have drawn polygons without a JavaScript
error.  Exit 0 when the PNG is written and all of that holds, 1 otherwise, 2
on a usage error.
"""

import argparse
import base64
import functools
import http.server
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading

sys.dont_write_bytecode = True  # the library below lives in the source tree
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', '..', 'tests'))
import memory_viz  # noqa: E402

DEBIAN_D3 = '/usr/share/nodejs/d3/dist/d3.min.js'
VIEWS = ('Active Memory Timeline', 'Allocator State History', 'Active Cached Segment Timeline')
# What torch's _memory_viz writes (its _memory_viz_template), the import pointing
# at the copy served beside it and d3 loaded first.
PAGE = """
<!DOCTYPE html>
<html>
<head>
<script src="./d3.v5.min.js"></script>
</head>
<body>
<script type="module">
import {add_local_files} from "./MemoryViz.js"
const local_files = $SNAPSHOT
add_local_files(local_files, $VIZ_KIND)
</script>
</body>
"""
IMPORT_RE = re.compile(r'(import\s*\{\s*add_local_files\s*\}\s*from\s*)(["\'])([^"\']*MemoryViz\.js)\2')
FILES_RE = re.compile(r'const\s+local_files\s*=\s*(\[.*?\])\s*\n', re.S)


class RenderError(Exception):
    pass


def page_from_pickle(raw, name, view):
    """The page torch's trace_plot writes for this pickle."""
    padded = raw + b'\0' * (3 - len(raw) % 3)  # as torch pads it
    files = json.dumps([{'name': name, 'base64': base64.b64encode(padded).decode('ascii')}])
    return PAGE.replace('$VIZ_KIND', repr(view)).replace('$SNAPSHOT', files)


def localize_page(html):
    """A trace_plot page with its MemoryViz.js import pointing at ./MemoryViz.js
    and d3 v5 loaded first by a classic script."""
    if not IMPORT_RE.search(html):
        raise RenderError('the page imports no add_local_files from a MemoryViz.js: '
                          'not a page of torch.cuda._memory_viz')
    html = IMPORT_RE.sub(lambda m: f'{m.group(1)}"./MemoryViz.js"', html, count=1)
    d3_tag = '<script src="./d3.v5.min.js"></script>\n'
    if 'd3.v5.min.js' not in html:
        i = html.find('<script type="module"')
        html = html[:i] + d3_tag + html[i:]
    return html


def page_files(html):
    m = FILES_RE.search(html)
    if not m:
        raise RenderError('no "const local_files = [...]" in the page')
    return json.loads(m.group(1))


def _import_to_const(m):
    what, url = m.group(1).strip(), m.group(3)
    if 'd3' not in url:
        raise RenderError(f'MemoryViz.js imports {url}, which is not d3: update render.py')
    star = re.fullmatch(r'\*\s*as\s+(\w+)', what)
    if star:
        return f'const {star.group(1)} = window.d3;'
    names = re.fullmatch(r'\{([^}]*)\}', what)
    if not names:
        raise RenderError(f'MemoryViz.js: cannot rewrite import {what} from {url}')
    parts = []
    for part in names.group(1).split(','):
        part = part.strip()
        if part:
            a = re.fullmatch(r'(\w+)\s+as\s+(\w+)', part)
            parts.append(f'{a.group(1)}: {a.group(2)}' if a else part)
    return f'const {{{", ".join(parts)}}} = window.d3;'


def localize_memoryviz(js, exports=False):
    """MemoryViz.js with its d3 ES imports replaced by the UMD bundle's global:
    `import * as d3 from ...` becomes `const d3 = window.d3;` (d3.event stays
    live: the bundle sets it on that object), `import {a, b} from ...` becomes
    `const {a, b} = window.d3;`.  With EXPORTS, the functions the cross-check
    calls are exported too."""
    js, n = re.subn(r'^\s*import\s+(.+?)\s+from\s+(["\'])([^"\']+)\2\s*;?', _import_to_const, js,
                    flags=re.M)
    if n == 0:
        raise RenderError('MemoryViz.js has no d3 import to rewrite: not the file expected')
    left = re.search(r'^\s*import\b.*$', js, re.M)
    if left:
        raise RenderError(f'MemoryViz.js: an import left that render.py cannot rewrite: {left.group(0)}')
    if exports:
        js += '\nexport {unpickle, annotate_snapshot, process_alloc_data, decode_base64};\n'
    return js


CROSSCHECK = """
<script type="module">
import {unpickle, annotate_snapshot, process_alloc_data, decode_base64} from "./MemoryViz.js"
const out = document.createElement('pre');
out.id = 'gpuleak-crosscheck';
try {
  const snap = unpickle(decode_base64($FILES[0].base64));
  annotate_snapshot(snap);
  const maxes = snap.device_traces.map((_t, d) => process_alloc_data(snap, d, false, 15000).max_size);
  out.textContent = JSON.stringify({maxes});
} catch (e) {
  out.textContent = JSON.stringify({error: String(e)});
}
document.body.appendChild(out);
</script>
"""


def find_chromium(given):
    for c in ([given] if given else []) + [os.environ.get('CHROMIUM'), 'chromium',
                                           'chromium-headless-shell', 'google-chrome']:
        if c and shutil.which(c):
            return shutil.which(c)
    raise RenderError('no Chromium: apt-get install chromium (or pass --chromium)')


def check_d3(path):
    with open(path, 'rb') as f:
        head = f.read(4096).decode('latin-1')
    m = re.search(r'd3js\.org v(\d+)\.(\d+)', head) or re.search(r'version\s*=\s*"(\d+)\.(\d+)', head)
    if not m:
        raise RenderError(f'{path}: no d3 version in its first lines: not a d3 bundle?')
    if m.group(1) != '5':
        raise RenderError(f'{path}: d3 v{m.group(1)}.{m.group(2)}; MemoryViz.js needs v5 (d3.event)')
    return f'{m.group(1)}.{m.group(2)}'


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def serve(root):
    handler = functools.partial(_Quiet, directory=root)
    httpd = http.server.ThreadingHTTPServer(('127.0.0.1', 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd


def chromium(binary, profile, args, timeout=120):
    cmd = [binary, '--headless', '--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage',
           '--no-first-run', '--no-default-browser-check', '--disable-extensions',
           '--disable-background-networking', '--disable-component-update', '--hide-scrollbars',
           '--force-device-scale-factor=1', '--run-all-compositor-stages-before-draw',
           '--enable-logging=stderr', '--v=0', f'--user-data-dir={profile}'] + args
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout,
                       text=True, errors='replace')
    errors = [line for line in r.stderr.splitlines()
              if 'CONSOLE' in line and ('Uncaught' in line or 'Error' in line)]
    return r, errors


def render(args):
    memoryviz = args.memoryviz or os.environ.get('MEMORY_VIZ_JS')
    if not memoryviz:
        raise RenderError('no MemoryViz.js: pass --memoryviz PATH or set MEMORY_VIZ_JS')
    d3 = args.d3 or os.environ.get('D3_V5_JS') or DEBIAN_D3
    if not os.path.exists(d3):
        raise RenderError(f'{d3}: no d3 v5 bundle (apt-get install node-d3, or pass --d3)')
    d3_version = check_d3(d3)
    binary = find_chromium(args.chromium)
    w, h = (int(x) for x in args.size.split(','))

    with open(args.input, 'rb') as f:
        raw = f.read()
    if raw[:1] == b'\x80':  # a pickle
        name = args.name or os.path.basename(args.input)
        html = page_from_pickle(raw, name, args.view)
    else:
        html = raw.decode('utf-8')
    html = localize_page(html)
    files = page_files(html)
    embedded = base64.b64decode(files[0]['base64'])
    if embedded[:1] == b'\x80' and embedded[1] > 4:
        raise RenderError(f'the page embeds a protocol-{embedded[1]} pickle, which the viewer cannot '
                          'read (torch\'s trace_plot run by Python 3.14 or later pickles with its '
                          'default protocol, 5): render the snapshot pickle itself, or run trace_plot '
                          'with Python 3.13 or older')
    with open(memoryviz, encoding='utf-8') as f:
        js = f.read()

    tmp = tempfile.mkdtemp(prefix='gpuleak-memviz-')
    try:
        site = os.path.join(tmp, 'site')
        os.mkdir(site)
        with open(os.path.join(site, 'index.html'), 'w', encoding='utf-8') as f:
            f.write(html)
        with open(os.path.join(site, 'MemoryViz.js'), 'w', encoding='utf-8') as f:
            f.write(localize_memoryviz(js))
        with open(os.path.join(site, 'MemoryVizX.js'), 'w', encoding='utf-8') as f:
            f.write(localize_memoryviz(js, exports=True))
        shutil.copyfile(d3, os.path.join(site, 'd3.v5.min.js'))
        check = html.replace('"./MemoryViz.js"', '"./MemoryVizX.js"')
        check = check.replace('</body>', CROSSCHECK.replace('$FILES', json.dumps(files[:1]))
                              .replace('"./MemoryViz.js"', '"./MemoryVizX.js"') + '</body>')
        with open(os.path.join(site, 'check.html'), 'w', encoding='utf-8') as f:
            f.write(check)
        if args.keep:
            os.makedirs(args.keep, exist_ok=True)
            for n in ('index.html', 'MemoryViz.js', 'd3.v5.min.js'):
                shutil.copyfile(os.path.join(site, n), os.path.join(args.keep, n))
        httpd = serve(site)
        base = f'http://127.0.0.1:{httpd.server_address[1]}'
        budget = f'--virtual-time-budget={args.budget}'
        size = f'--window-size={w},{h}'
        try:
            # 1. The page as drawn: polygons, and no JavaScript error.
            r, errors = chromium(binary, os.path.join(tmp, 'p1'), [budget, size, '--dump-dom',
                                                                    f'{base}/index.html'])
            if errors:
                raise RenderError('the page threw: ' + ' | '.join(errors[:3]))
            if '<body' not in r.stdout:
                raise RenderError('the page\'s renderer died before it finished drawing (Chromium '
                                  'returned an empty document): a trace this long may be beyond '
                                  'headless Chromium; render a shorter one')
            polygons = r.stdout.count('<polygon')
            if polygons == 0 and args.view != 'Allocator State History':
                raise RenderError(f'the page drew no polygon (chromium exit {r.returncode}): '
                                  + (r.stderr.strip().splitlines() or ['no output'])[-1])
            # 2. The viewer's own maxima against tests/memory_viz.py's.
            if not args.no_crosscheck:
                r2, errors = chromium(binary, os.path.join(tmp, 'p2'), [budget, size, '--dump-dom',
                                                                         f'{base}/check.html'])
                m = re.search(r'<pre id="gpuleak-crosscheck">(.*?)</pre>', r2.stdout, re.S)
                if not m:
                    raise RenderError('the cross-check page wrote nothing: ' + ' | '.join(errors[:3]))
                got = json.loads(m.group(1).replace('&quot;', '"'))
                if 'error' in got:
                    raise RenderError(f'the viewer\'s code threw on the snapshot: {got["error"]}')
                pk = base64.b64decode(files[0]['base64'])
                data = memory_viz.loads(pk)
                ours = [memory_viz.timeline_max(data, d) for d in range(len(got['maxes']))]
                if ours != got['maxes']:
                    raise RenderError(f'timeline maxima: the viewer computes {got["maxes"]}, '
                                      f'tests/memory_viz.py {ours}')
                print(f'render: the viewer\'s timeline maxima {got["maxes"]} = tests/memory_viz.py\'s')
            # 3. The picture.
            out = os.path.abspath(args.png)
            if os.path.exists(out):
                os.unlink(out)
            r3, errors = chromium(binary, os.path.join(tmp, 'p3'), [budget, size,
                                                                     f'--screenshot={out}',
                                                                     f'{base}/index.html'])
            if not os.path.exists(out):
                raise RenderError(f'chromium wrote no screenshot (exit {r3.returncode}): '
                                  + (r3.stderr.strip().splitlines() or ['no output'])[-1])
        finally:
            httpd.shutdown()
        print(f'render: {args.png}: {w}x{h}, {polygons} polygons, d3 {d3_version} from {d3}, '
              f'{os.path.basename(binary)}')
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main(argv=None):
    p = argparse.ArgumentParser(prog='render.py', description=__doc__.split('\n\n')[0])
    p.add_argument('input')
    p.add_argument('png')
    p.add_argument('--memoryviz')
    p.add_argument('--d3')
    p.add_argument('--chromium')
    p.add_argument('--view', default=VIEWS[0], choices=VIEWS)
    p.add_argument('--name')
    p.add_argument('--size', default='1400,900')
    p.add_argument('--budget', type=int, default=10000)
    p.add_argument('--keep')
    p.add_argument('--no-crosscheck', action='store_true')
    args = p.parse_args(argv)
    try:
        render(args)
    except (RenderError, OSError, subprocess.TimeoutExpired, UnicodeDecodeError) as e:
        print(f'render: {e}', file=sys.stderr)
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
