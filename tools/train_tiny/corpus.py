"""Deterministic Python-source corpus from the installed packages of the machine it runs on.

How the list is made (recorded in the manifest this writes):
  1. every *.dist-info directory of the interpreter's site-packages, in sorted order;
  2. its METADATA gives the distribution name and licence (License-Expression, else
     License, else the "License ::" classifiers); only permissively licensed
     distributions are kept (PERMISSIVE below); a licence mentioning GPL, MPL, EUPL,
     CDDL or Commons Clause (COPYLEFT below), or none recorded, leaves it out;
  3. its RECORD lists the files the distribution installed: keep *.py files of
     500 B .. 256 KiB that decode as UTF-8, skipping vendored copies of other projects
     (path components in VENDORED);
  4. deduplicate by SHA-256 of the content (first path in sorted order wins);
  5. held-out slice: files whose SHA-256, read as an integer, is 0 mod HELDOUT_MOD.
"""
import hashlib
import json
import os
import re
import sysconfig

PERMISSIVE = re.compile(r"\b(MIT|BSD|Apache|PSF|Python Software Foundation|ISC|Unlicense|Zlib|HPND|CC0)", re.I)
COPYLEFT = re.compile(r"GPL|MPL|Mozilla|EUPL|CDDL|Commons Clause", re.I)
VENDORED = {"_vendor", "vendor", "vendored", "_vendored", "third_party", "thirdparty", "externals", "_external"}
HELDOUT_MOD = 50
MIN_BYTES, MAX_BYTES = 500, 256 * 1024


def site_packages():
    dirs = []
    for key in ("purelib", "platlib"):
        d = sysconfig.get_paths()[key]
        if d not in dirs and os.path.isdir(d):
            dirs.append(d)
    return dirs


def read_metadata(dist_info):
    name, lic_expr, lic, classifiers = None, None, None, []
    path = os.path.join(dist_info, "METADATA")
    if not os.path.exists(path):
        return None, None
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            if line.strip() == "":
                break  # headers end at the first blank line; the body is the description
            if line.startswith("Name:"):
                name = line[5:].strip()
            elif line.startswith("License-Expression:"):
                lic_expr = line.split(":", 1)[1].strip()
            elif line.startswith("License:"):
                lic = line.split(":", 1)[1].strip()
            elif line.startswith("Classifier: License ::"):
                classifiers.append(line.split("::", 1)[1].strip())
    if lic_expr:
        return name, lic_expr
    if lic and len(lic) < 200 and lic.upper() not in ("UNKNOWN", ""):
        return name, lic
    if classifiers:
        return name, "; ".join(classifiers)
    return name, lic[:120] if lic else None


def licence_ok(lic):
    return bool(lic) and PERMISSIVE.search(lic) is not None and COPYLEFT.search(lic) is None


def collect(log=print):
    """Returns (train_docs, heldout_docs, manifest); docs are lists of (path, text)."""
    seen = set()
    train, heldout = [], []
    packages = []
    skipped = []
    for sp in site_packages():
        for entry in sorted(os.listdir(sp)):
            if not entry.endswith(".dist-info"):
                continue
            dist_info = os.path.join(sp, entry)
            name, lic = read_metadata(dist_info)
            if name is None:
                continue
            if not licence_ok(lic):
                skipped.append({"name": name, "license": lic})
                continue
            record = os.path.join(dist_info, "RECORD")
            if not os.path.exists(record):
                skipped.append({"name": name, "license": lic, "why": "no RECORD"})
                continue
            with open(record, encoding="utf-8", errors="replace") as f:
                rel_paths = sorted({line.split(",")[0] for line in f if line.split(",")[0].endswith(".py")})
            n_files = n_bytes = 0
            for rel in rel_paths:
                parts = rel.split("/")
                if ".." in parts or VENDORED.intersection(parts):
                    continue
                path = os.path.join(sp, rel)
                try:
                    size = os.path.getsize(path)
                    if not (MIN_BYTES <= size <= MAX_BYTES):
                        continue
                    with open(path, "rb") as f:
                        raw = f.read()
                    text = raw.decode("utf-8")
                except (OSError, UnicodeDecodeError):
                    continue
                if "\x00" in text:
                    continue
                digest = hashlib.sha256(raw).hexdigest()
                if digest in seen:
                    continue
                seen.add(digest)
                doc = (rel, text)
                (heldout if int(digest, 16) % HELDOUT_MOD == 0 else train).append(doc)
                n_files += 1
                n_bytes += len(raw)
            if n_files:
                packages.append({"name": name, "license": lic, "files": n_files, "bytes": n_bytes})
    manifest = {
        "rule": __doc__.strip(),
        "site_packages": site_packages(),
        "packages": packages,
        "skipped_distributions": skipped,
        "train_files": len(train),
        "train_bytes": sum(len(t) for _, t in train),
        "heldout_files": len(heldout),
        "heldout_bytes": sum(len(t) for _, t in heldout),
    }
    log(f"corpus: {manifest['train_files']} train files ({manifest['train_bytes'] / 1e6:.1f} MB), "
        f"{manifest['heldout_files']} held-out ({manifest['heldout_bytes'] / 1e6:.1f} MB), "
        f"{len(packages)} packages, {len(skipped)} distributions skipped for licence")
    return train, heldout, manifest


def write_manifest(manifest, train, heldout, path):
    m = dict(manifest)
    m["train_paths"] = [p for p, _ in train]
    m["heldout_paths"] = [p for p, _ in heldout]
    with open(path, "w") as f:
        json.dump(m, f, indent=1)
