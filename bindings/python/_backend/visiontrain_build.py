"""PEP 517 build backend of the visiontrain package: a wheel that carries libvisiontrain.

It needs nothing from PyPI (pyproject.toml: ``requires = []``), so ``pip install
./bindings/python`` works offline.  The wheel holds the Python package and, beside it, the
library under its SONAME (libvisiontrain.so.0), where the package looks first, and the CUDA
module (libvisiontrain-cuda.so) when the build made one: the library loads it from its own
folder.

Where the library comes from:

* ``build-dir=DIR`` (``pip install --config-settings build-dir=DIR``) or ``$VT_BUILD_DIR``: a
  meson build folder of libvisiontrain.  Where it holds a built library, its files are taken as
  they are and nothing is built; otherwise the library is built there as below.
* otherwise the library is built here: ``meson setup`` on the source tree (the repository two
  folders up, or the copy an sdist holds) into ``build/meson`` beside this package's
  pyproject.toml (``build-dir`` can name another folder), then ``ninja``.  A second install
  reuses that folder and rebuilds only what changed.  Needs meson, ninja, a C compiler and the
  library's dependencies (scripts/install-deps.sh); nvcc adds the CUDA module.
  ``setup-args="-Dcuda=disabled ..."`` (or ``$VT_MESON_ARGS``) passes options to meson setup.
"""

import ast
import base64
import csv
import glob
import hashlib
import io
import os
import re
import shlex
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import zipfile

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))   # bindings/python
PACKAGE = "visiontrain"
# The source tree an sdist carries (see build_sdist), used when there is no repository around.
SDIST_SOURCE = "libvisiontrain"
# What of the repository a library build needs (the rest: tests, examples, benchmarks, docs).
SOURCE_PARTS = ["meson.build", "meson_options.txt", "include", "lib", "cuda"]
LIB_SONAME_RE = re.compile(r"^libvisiontrain\.so\.\d+$")
CUDA_MODULE = "libvisiontrain-cuda.so"


class BuildError(RuntimeError):
    pass


# ---- project metadata (pyproject.toml [project]) -------------------------------------------------

def _project():
    path = os.path.join(HERE, "pyproject.toml")
    with open(path, "rb") as f:
        raw = f.read()
    try:
        import tomllib
    except ImportError:   # Python < 3.11: the few value forms pyproject.toml uses here
        return _simple_toml_project(raw.decode("utf-8"))
    return tomllib.loads(raw.decode("utf-8"))["project"]


def _simple_toml_project(text):
    """[project] of a pyproject.toml whose values are strings, string lists and {k = "v"}."""
    out = {}
    section = None
    lines = iter(text.splitlines())
    for line in lines:
        s = line.strip()
        if not s or s.startswith("#"):
            continue
        if s.startswith("["):
            section = s.strip("[]").strip()
            continue
        if section == "project.optional-dependencies":
            key, _, value = s.partition("=")
            out.setdefault("optional-dependencies", {})[key.strip()] = ast.literal_eval(
                value.strip())
            continue
        if section != "project":
            continue
        key, _, value = s.partition("=")
        value = value.strip()
        while value.startswith("[") and not value.rstrip(",").endswith("]"):
            value += next(lines).split("#")[0].strip()
        if value.startswith("{"):
            value = dict((k.strip(), ast.literal_eval(v.strip())) for k, v in
                         (kv.split("=", 1) for kv in value.strip("{}").split(",")))
        else:
            value = ast.literal_eval(value)
        out[key.strip()] = value
    return out


def _dist_name(project):
    return re.sub(r"[-_.]+", "_", project["name"]).lower()


def _metadata(project):
    lines = ["Metadata-Version: 2.1", "Name: %s" % project["name"],
             "Version: %s" % project["version"]]
    if project.get("description"):
        lines.append("Summary: %s" % project["description"])
    lic = project.get("license")
    if isinstance(lic, dict) and lic.get("text"):
        lines.append("License: %s" % lic["text"])
    if project.get("requires-python"):
        lines.append("Requires-Python: %s" % project["requires-python"])
    for c in project.get("classifiers", []):
        lines.append("Classifier: %s" % c)
    for d in project.get("dependencies", []):
        lines.append("Requires-Dist: %s" % d)
    for extra, deps in sorted(project.get("optional-dependencies", {}).items()):
        lines.append("Provides-Extra: %s" % extra)
        for d in deps:
            lines.append('Requires-Dist: %s ; extra == "%s"' % (d, extra))
    body = ""
    readme = project.get("readme")
    if isinstance(readme, str) and os.path.isfile(os.path.join(HERE, readme)):
        lines.append("Description-Content-Type: text/markdown")
        with open(os.path.join(HERE, readme), encoding="utf-8") as f:
            body = "\n" + f.read()
    return ("\n".join(lines) + "\n" + body).encode("utf-8")


def _wheel_file(tag):
    return ("Wheel-Version: 1.0\nGenerator: visiontrain_build\nRoot-Is-Purelib: false\n"
            "Tag: %s\n" % tag).encode("ascii")


def _platform_tag():
    # The package is plain Python that loads a native library with ctypes: any Python 3 of
    # this platform can use it.
    return "py3-none-" + re.sub(r"[-.]", "_", sysconfig.get_platform())


# ---- the library ---------------------------------------------------------------------------------

def _setting(config_settings, key, env):
    value = (config_settings or {}).get(key)
    if isinstance(value, list):
        value = value[-1]
    return value if value else os.environ.get(env) or None


def _source_root():
    """The meson project of libvisiontrain: the repository around bindings/python, or the
    copy an sdist holds."""
    for root in (os.path.dirname(os.path.dirname(HERE)), os.path.join(HERE, SDIST_SOURCE)):
        build = os.path.join(root, "meson.build")
        if os.path.isfile(build):
            with open(build, encoding="utf-8") as f:
                if re.search(r"project\(\s*'visiontrain'", f.read()):
                    return root
    raise BuildError("the libvisiontrain sources were not found (looked for meson.build two "
                     "folders above %s, and in %s); build the library with meson and pass its "
                     "build folder: VT_BUILD_DIR=DIR or pip install --config-settings "
                     "build-dir=DIR"
                     % (HERE, os.path.join(HERE, SDIST_SOURCE)))


def _tool_env():
    """The environment for meson and ninja: without what a build frontend set for its own
    Python (an isolated build environment would hide meson's modules from it)."""
    env = dict(os.environ)
    for k in ("PYTHONPATH", "PYTHONHOME", "PYTHONNOUSERSITE", "PYTHONSAFEPATH"):
        env.pop(k, None)
    return env


def _run(cmd, cwd=None):
    print("visiontrain_build: " + " ".join(shlex.quote(c) for c in cmd), file=sys.stderr)
    sys.stderr.flush()
    try:
        # meson's and ninja's own output goes to stderr: pip shows it with -v, or on failure
        subprocess.run(cmd, cwd=cwd, env=_tool_env(), stdout=sys.stderr, check=True)
    except FileNotFoundError:
        raise BuildError("%s not found: building libvisiontrain needs meson and ninja "
                         "(Debian: apt-get install meson ninja-build; or run "
                         "scripts/install-deps.sh), or pass an existing build folder with "
                         "VT_BUILD_DIR=DIR" % cmd[0]) from None
    except subprocess.CalledProcessError as e:
        raise BuildError("%s failed (exit status %d); its output is above"
                         % (" ".join(cmd[:2]), e.returncode)) from None


def _build_library(config_settings):
    """Configure (once) and build the library; returns the build folder."""
    root = _source_root()
    build_dir = os.path.abspath(_setting(config_settings, "build-dir", "VT_BUILD_DIR") or
                                os.path.join(HERE, "build", "meson"))
    meson = shutil.which("meson") or "meson"
    if not os.path.isfile(os.path.join(build_dir, "build.ninja")):
        args = shlex.split(_setting(config_settings, "setup-args", "VT_MESON_ARGS") or "")
        _run([meson, "setup", build_dir, root, "--buildtype=release", "-Dtests=false",
              "-Dexamples=false", "-Dbench=false"] + args)
    _run(["ninja", "-C", build_dir])
    return build_dir


def _library_files(build_dir):
    """[(path in build_dir, name in the package)]: the library under its SONAME, and the CUDA
    module when the build has one."""
    if not os.path.isdir(build_dir):
        raise BuildError("%s is not a folder (VT_BUILD_DIR / build-dir: a meson build folder "
                         "of libvisiontrain)" % build_dir)
    libs = sorted(n for n in os.listdir(build_dir) if LIB_SONAME_RE.match(n))
    if not libs:
        raise BuildError("%s holds no libvisiontrain.so.N: not a built libvisiontrain meson "
                         "folder (run ninja -C %s first)" % (build_dir, build_dir))
    out = [(os.path.join(build_dir, libs[-1]), libs[-1])]
    cuda = os.path.join(build_dir, CUDA_MODULE)
    if os.path.isfile(cuda):
        out.append((cuda, CUDA_MODULE))
    return out


def _library(config_settings):
    given = _setting(config_settings, "build-dir", "VT_BUILD_DIR")
    if given and os.path.isdir(given) and any(LIB_SONAME_RE.match(n) for n in os.listdir(given)):
        return _library_files(os.path.abspath(given))   # built already: taken as it is
    return _library_files(_build_library(config_settings))


# ---- the wheel -----------------------------------------------------------------------------------

def _record_hash(data):
    digest = hashlib.sha256(data).digest()
    return "sha256=" + base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


def _package_files():
    """[(path, name in the wheel)] of the Python package (a library copied into the package
    folder by hand is left out: the wheel gets the built one)."""
    out = []
    pkg = os.path.join(HERE, PACKAGE)
    for dirpath, dirnames, filenames in os.walk(pkg):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        for name in sorted(filenames):
            if name.endswith((".pyc", ".pyo")) or name.startswith("libvisiontrain"):
                continue
            path = os.path.join(dirpath, name)
            out.append((path, os.path.relpath(path, HERE).replace(os.sep, "/")))
    return out


def _write_wheel(wheel_directory, files, project):
    """Zip files [(bytes or path, arcname, mode)] and the dist-info into a wheel."""
    name, version = _dist_name(project), project["version"]
    tag = _platform_tag()
    dist_info = "%s-%s.dist-info" % (name, version)
    wheel_name = "%s-%s-%s.whl" % (name, version, tag)
    entries = []
    for src, arcname, mode in files:
        if isinstance(src, bytes):
            data = src
        else:
            with open(src, "rb") as f:
                data = f.read()
        entries.append((arcname, data, mode))
    entries.append((dist_info + "/METADATA", _metadata(project), 0o644))
    entries.append((dist_info + "/WHEEL", _wheel_file(tag), 0o644))
    record = io.StringIO()
    writer = csv.writer(record, lineterminator="\n")
    for arcname, data, _ in entries:
        writer.writerow([arcname, _record_hash(data), len(data)])
    writer.writerow([dist_info + "/RECORD", "", ""])
    entries.append((dist_info + "/RECORD", record.getvalue().encode("utf-8"), 0o644))
    os.makedirs(wheel_directory, exist_ok=True)
    path = os.path.join(wheel_directory, wheel_name)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for arcname, data, mode in entries:
            info = zipfile.ZipInfo(arcname, date_time=(2020, 1, 1, 0, 0, 0))
            info.external_attr = (0o100000 | mode) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, data)
    return wheel_name


# ---- PEP 517 hooks -------------------------------------------------------------------------------

def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    project = _project()
    dist_info = "%s-%s.dist-info" % (_dist_name(project), project["version"])
    path = os.path.join(metadata_directory, dist_info)
    os.makedirs(path, exist_ok=True)
    with open(os.path.join(path, "METADATA"), "wb") as f:
        f.write(_metadata(project))
    with open(os.path.join(path, "WHEEL"), "wb") as f:
        f.write(_wheel_file(_platform_tag()))
    return dist_info


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    project = _project()
    files = [(path, arc, 0o644) for path, arc in _package_files()]
    for path, name in _library(config_settings):
        files.append((path, PACKAGE + "/" + name, 0o755))
    return _write_wheel(wheel_directory, files, project)


def get_requires_for_build_editable(config_settings=None):
    return []


def prepare_metadata_for_build_editable(metadata_directory, config_settings=None):
    return prepare_metadata_for_build_wheel(metadata_directory, config_settings)


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    """pip install -e: the package is imported from this folder (a .pth file names it), and
    the library is copied into the package folder (git ignores it there), where the package
    looks for it; reinstall after rebuilding the library."""
    project = _project()
    pkg = os.path.join(HERE, PACKAGE)
    for old in glob.glob(os.path.join(pkg, "libvisiontrain*.so*")):
        os.remove(old)
    for path, name in _library(config_settings):
        shutil.copy2(path, os.path.join(pkg, name))
    pth = (HERE + "\n").encode(sys.getfilesystemencoding())
    return _write_wheel(wheel_directory, [(pth, "_visiontrain_editable.pth", 0o644)], project)


def build_sdist(sdist_directory, config_settings=None):
    """The Python package and the library's sources (under libvisiontrain/), enough for
    build_wheel to build the library from."""
    project = _project()
    base = "%s-%s" % (_dist_name(project), project["version"])
    root = _source_root()
    os.makedirs(sdist_directory, exist_ok=True)
    path = os.path.join(sdist_directory, base + ".tar.gz")

    def clean(info):
        leaf = info.name.rsplit("/", 1)[-1]
        if "__pycache__" in info.name or leaf.endswith(".pyc") or \
                (leaf.startswith("libvisiontrain") and ".so" in leaf):
            return None
        info.uid = info.gid = 0
        info.uname = info.gname = ""
        return info

    with tarfile.open(path, "w:gz", format=tarfile.PAX_FORMAT) as tar:
        for name in ("pyproject.toml", "README.md", "_backend", PACKAGE):
            tar.add(os.path.join(HERE, name), arcname=base + "/" + name, filter=clean)
        if root != os.path.join(HERE, SDIST_SOURCE):
            for part in SOURCE_PARTS:
                tar.add(os.path.join(root, part), arcname="%s/%s/%s" % (base, SDIST_SOURCE, part),
                        filter=clean)
        else:
            tar.add(root, arcname=base + "/" + SDIST_SOURCE, filter=clean)
        pkg_info = _metadata(project)
        info = tarfile.TarInfo(base + "/PKG-INFO")
        info.size = len(pkg_info)
        info.mode = 0o644
        tar.addfile(info, io.BytesIO(pkg_info))
    return base + ".tar.gz"
