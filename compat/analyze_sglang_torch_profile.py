#!/usr/bin/env python3
"""Drop-in stand-in for the predecessor's older analyze_sglang_torch_profile.py.

Like the original, it forces no framework (auto-detection as before): it runs
`llm-triage` with exactly the arguments it was given, so existing scripts keep working:
`python3 analyze_sglang_torch_profile.py --input TRACE_DIR`. The binary is looked
up beside this file first (a release archive ships them together), then on PATH; set
LLM_TRIAGE=/path/to/llm-triage to choose one. Importing this file does nothing.
"""
import os
import shutil
import sys


def find_llm_triage():
    """The llm-triage executable to run, or None."""
    chosen = os.environ.get("LLM_TRIAGE")
    if chosen:
        return chosen
    here = os.path.dirname(os.path.realpath(__file__))
    for name in ("llm-triage", "llm-triage.exe"):
        beside = os.path.join(here, name)
        if os.path.isfile(beside) and os.access(beside, os.X_OK):
            return beside
    return shutil.which("llm-triage")


def main():
    exe = find_llm_triage()
    if exe is None:
        sys.stderr.write(
            "%s: llm-triage not found beside this script or on PATH "
            "(install it, or set LLM_TRIAGE=/path/to/llm-triage)\n" % os.path.basename(sys.argv[0])
        )
        return 127
    # exec: same pid, same exit status, same stdin/stdout/stderr.
    os.execv(exe, [exe] + sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
