# SPDX-License-Identifier: GPL-2.0
"""The lock-word encodings of the C and of the SPIN models, compared.

A model declares the encoding it assumes as `#define MUTEX_... <decimal>`
(variants/<design>/model.pml). The C's encoding is read from the design's
first patch, or from the one its model.toml's `encoding` names, from the
lines of kernel/locking/mutex.c it shows: the `#define`s, and for legacy,
whose count has no names, the values its code uses. A value changed
on one side only, or a name the other side lacks, is a mismatch.
"""
import re
import tomllib
from pathlib import Path

C_DEFINE = re.compile(r"^#define\s+(MUTEX_[A-Z_]+)\s+(0x[0-9a-fA-F]+|\d+)\s*$")
MODEL_DEFINE = re.compile(r"^#define\s+(MUTEX_[A-Z_]+)\s+(\d+)\s*$", re.M)
# legacy's count: `.count = ATOMIC_INIT(1)` is unlocked; a trylock is
# `atomic_cmpxchg_acquire(&lock->count, <unlocked>, <locked>)`.
LEGACY_INIT = re.compile(r"\.count = ATOMIC_INIT\((-?\d+)\)")
LEGACY_TRYLOCK = re.compile(r"atomic_cmpxchg_acquire\(&lock->count, (-?\d+), (-?\d+)\)")



def source(design, variants_dir):
    """(variant, side) of the patch that holds the design's encoding: its
    own first patch's "post" side unless model.toml's encoding says."""
    path = Path(variants_dir, design, "model.toml")
    encoding = tomllib.loads(path.read_text()).get("encoding", {}) if path.is_file() else {}
    return encoding.get("series", design), encoding.get("side", "post")


def image_lines(patch_text, image, path="kernel/locking/mutex.c"):
    """The lines of PATH a patch shows: "pre" (context and removed) or
    "post" (context and added)."""
    keep = " -" if image == "pre" else " +"
    lines, in_file = [], False
    for line in patch_text.splitlines():
        if line.startswith("diff --git "):
            in_file = line.endswith(f" b/{path}")
        elif in_file and line[:1] in keep and not line.startswith(("---", "+++")):
            lines.append(line[1:])
    return lines


def c_encoding(patch_text, image):
    """{name: value} of the mutex encoding in a patch's image of mutex.c."""
    lines = image_lines(patch_text, image)
    found = {}
    for line in lines:
        m = C_DEFINE.match(line)
        if m:
            found[m.group(1)] = int(m.group(2), 0)
    if not found:  # legacy: the count's values, as its code uses them
        text = "\n".join(lines)
        init, trylock = LEGACY_INIT.search(text), LEGACY_TRYLOCK.search(text)
        if init:
            found["MUTEX_COUNT_UNLOCKED"] = int(init.group(1))
        if trylock:
            found["MUTEX_COUNT_LOCKED"] = int(trylock.group(2))
            if found.setdefault("MUTEX_COUNT_UNLOCKED", int(trylock.group(1))) \
                    != int(trylock.group(1)):
                # A name the model lacks, so that the mismatch is reported.
                found["MUTEX_COUNT_UNLOCKED_IN_TRYLOCK"] = int(trylock.group(1))
    return found


def model_encoding(model_text):
    return {name: int(value) for name, value in MODEL_DEFINE.findall(model_text)}


def first_patch(variants_dir, variant):
    patches = sorted(Path(variants_dir, variant).glob("0001-*.patch"))
    if not patches:
        raise FileNotFoundError(f"no 0001-*.patch in {Path(variants_dir, variant)}")
    return patches[0]


def mismatches(design, variants_dir, patch=None):
    """Problems, each a line; empty when model and C agree."""
    series, image = source(design, variants_dir)
    patch = Path(patch) if patch else first_patch(variants_dir, series)
    c = c_encoding(patch.read_text(), image)
    model = model_encoding(Path(variants_dir, design, "model.pml").read_text())
    if not c:
        return [f"{design}: no encoding found in {patch.name}"]
    problems = []
    for name in sorted(c.keys() | model.keys()):
        if name not in model:
            problems.append(f"{design}: the C defines {name} = {c[name]:#x}, "
                            "the model does not")
        elif name not in c:
            problems.append(f"{design}: the model defines {name} = "
                            f"{model[name]}, {patch.name} does not")
        elif c[name] != model[name]:
            problems.append(f"{design}: {name} is {c[name]:#x} in "
                            f"{patch.name} but {model[name]} in the model")
    return problems
