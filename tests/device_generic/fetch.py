"""Downloads PyTorch 2.6.0's test files once and keeps them in the cache folder.

The torch wheel ships no tests. Debian's source package of PyTorch 2.6.0 does: its original tarball (pinned by
sha256 below) is downloaded once into $XDG_CACHE_HOME/torchtpu/device_generic (~/.cache when XDG_CACHE_HOME is
unset), and only the test files a run needs are extracted next to it. Nothing from it enters the repository.
"""
import hashlib
import os
import tarfile
import urllib.request

URL = "http://deb.debian.org/debian/pool/main/p/pytorch/pytorch_2.6.0+dfsg.orig.tar.xz"
SHA256 = "099a9601bc40d67656e75735c44abedb0fbe92d08817852ab7472eebb7e6ddff"
PREFIX = "pytorch-v2.6.0/test/"


def cache_dir():
    """Returns the folder the tarball and the extracted files live in."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "torchtpu", "device_generic")


def sha256_of(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def tarball(log=print):
    """Returns the path of the verified tarball, downloading it first when it is missing or damaged."""
    folder = cache_dir()
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, URL.rsplit("/", 1)[1])
    if os.path.exists(path) and sha256_of(path) == SHA256:
        return path
    log(f"downloading {URL} (27 MB, once) into {folder}")
    part = path + ".part"
    with urllib.request.urlopen(URL, timeout=120) as r, open(part, "wb") as f:
        while block := r.read(1 << 20):
            f.write(block)
    got = sha256_of(part)
    if got != SHA256:
        os.remove(part)
        raise RuntimeError(f"{URL}: sha256 {got}, expected {SHA256}")
    os.replace(part, path)
    return path


def test_dir(files, log=print):
    """Returns the folder holding the named test files (names inside PyTorch's test/), extracting any missing."""
    out = os.path.join(cache_dir(), "src")
    folder = os.path.join(out, PREFIX)
    missing = [f for f in files if not os.path.exists(os.path.join(folder, f))]
    if missing:
        wanted = {PREFIX + f for f in missing}
        with tarfile.open(tarball(log), "r:xz") as tar:
            for member in tar:
                if member.name in wanted:
                    tar.extract(member, out, filter="data")
                    wanted.discard(member.name)
        if wanted:
            raise RuntimeError(f"not in the PyTorch 2.6.0 tarball: {sorted(wanted)}")
    return folder
