# SPDX-License-Identifier: GPL-2.0
"""The manifest's own readings of the host and the build."""
import subprocess

import manifest


def test_text_size_counts_every_text_section(tmp_path):
    source = tmp_path / "f.c"
    # Two functions in two sections, as __sched puts mutex code in .sched.text.
    source.write_text("int a(void) { return 1; }\n"
                      "__attribute__((section(\".sched.text\")))"
                      " int b(void) { return 2; }\n")
    obj = tmp_path / "f.o"
    subprocess.run(["gcc", "-O2", "-c", str(source), "-o", str(obj)],
                   check=True)
    sections = subprocess.run(["size", "-A", str(obj)], capture_output=True,
                              text=True, check=True).stdout
    expected = sum(int(line.split()[1]) for line in sections.splitlines()
                   if line.startswith((".text", ".sched.text")))
    assert manifest.text_size(obj) == expected > 0
    assert manifest.text_size(obj) > int(
        next(l for l in sections.splitlines() if l.startswith(".text ")).split()[1])


def test_text_size_of_a_missing_object_is_none(tmp_path):
    assert manifest.text_size(tmp_path / "missing.o") is None


def test_host_info_names_the_cpu(tmp_path):
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\nvendor_id\t: AuthenticAMD\n"
                       "model name\t: AMD EPYC 7B13\nflags\t\t: fpu\n")
    info = manifest.host_info(cpuinfo)
    assert info["cpu_model"] == "AMD EPYC 7B13" and info["cpus"] >= 1
    cpuinfo.write_text("processor\t: 0\nflags\t\t: fpu\n")  # some arm64 hosts
    assert manifest.host_info(cpuinfo)["cpu_model"] == "unknown"
