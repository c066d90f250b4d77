#!/usr/bin/env python3
"""The layer order of lib/ and cuda/, checked from the #include lines.

Each folder is a layer; a file may include headers of its own layer and of the layers that
layer builds on, never of a later one (docs/architecture.md):

    core < image < data
    backend < nn < task < train < estimate      (task, train and estimate also build on data)
    backend < dist < train                      (the communicators; train and estimate build on it)
    cuda builds on backend and dist: it implements the backend interface and the NCCL engine of
    the communicator interface; lib/ never includes it.

Usage: include_order.py SOURCE_ROOT.  Prints every include that goes up (or sideways) the
order, as file:line, and exits 1 if there is one.  Headers named without a folder
("foo.h") are the file's own folder; the public header and the build's config are allowed
everywhere.
"""
import os
import re
import sys

# layer -> the layers its files may include (its own included)
ALLOWED = {
    'core': {'core'},
    'image': {'core', 'image'},
    'data': {'core', 'image', 'data'},
    'backend': {'core', 'backend'},
    'cuda': {'core', 'backend', 'dist', 'cuda'},  # the NCCL engine of the communicators
    'dist': {'core', 'backend', 'dist'},
    'nn': {'core', 'image', 'backend', 'nn'},
    'task': {'core', 'image', 'data', 'backend', 'nn', 'task'},
    'train': {'core', 'image', 'data', 'backend', 'dist', 'nn', 'task', 'train'},
    'estimate': {'core', 'image', 'data', 'backend', 'dist', 'nn', 'task', 'train', 'estimate'},
}
ANYWHERE = {'visiontrain/visiontrain.h', 'vt_config.h'}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
SUFFIXES = ('.c', '.h', '.cu', '.cuh', '.inc')


def layer_of(rel):
    parts = rel.split('/')
    if parts[0] == 'cuda':
        return 'cuda'
    if parts[0] == 'lib' and len(parts) > 2:
        return parts[1]
    return None


def check(root):
    bad, files = [], 0
    for top in ('lib', 'cuda'):
        for dirpath, _, names in os.walk(os.path.join(root, top)):
            for name in sorted(names):
                if not name.endswith(SUFFIXES):
                    continue
                path = os.path.join(dirpath, name)
                rel = os.path.relpath(path, root).replace(os.sep, '/')
                layer = layer_of(rel)
                if layer is None:
                    continue
                if layer not in ALLOWED:
                    bad.append('%s: folder %s has no place in the layer order' % (rel, layer))
                    continue
                files += 1
                with open(path, encoding='utf-8', errors='replace') as f:
                    for no, line in enumerate(f, 1):
                        m = INCLUDE.match(line)
                        if not m:
                            continue
                        inc = m.group(1)
                        if inc in ANYWHERE or '/' not in inc:
                            continue
                        target = inc.split('/')[0]
                        if target not in ALLOWED[layer]:
                            bad.append('%s:%d: %s (layer %s) includes "%s" (layer %s)' %
                                       (rel, no, name, layer, inc, target))
    return files, bad


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), '..')
    files, bad = check(root)
    if files == 0:
        print('include_order: no sources found under %s' % root)
        return 1
    for b in bad:
        print(b)
    print('include_order: %d files, %d includes against the layer order' % (files, len(bad)))
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
