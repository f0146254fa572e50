#!/usr/bin/env python3
"""Checks that the committed playbooks/tests/*.test.yaml are what the generators beside this file
write: runs every generator into a scratch directory and compares file by file. A committed test
file no generator writes is an error too (write its generator, or add it to HAND_WRITTEN).

    python3 tools/playbook-tests/check.py      # exit 0 when they match, 1 with a diff otherwise
"""
import difflib
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
COMMITTED = os.path.normpath(os.path.join(HERE, "..", "..", "playbooks", "tests"))
# Each generator with its imports; health.py also runs more.py and healthy.py runs health.py, so
# the ones listed here are the top of each chain.
GENERATORS = ["healthy.py", "rccl_hang.py", "incident_playbooks.py"]
HAND_WRITTEN = set()


def main():
    with tempfile.TemporaryDirectory(prefix="playbook-tests-") as out:
        env = dict(os.environ, PLAYBOOK_TESTS_DIR=out, PYTHONHASHSEED="0")
        for script in GENERATORS:
            run = subprocess.run([sys.executable, os.path.join(HERE, script)], cwd=HERE, env=env,
                                 capture_output=True, text=True)
            if run.returncode != 0:
                print(f"{script} failed (exit {run.returncode}):\n{run.stdout}{run.stderr}")
                return 1
        generated = sorted(f for f in os.listdir(out) if f.endswith(".test.yaml"))
        committed = sorted(f for f in os.listdir(COMMITTED) if f.endswith(".test.yaml"))
        problems = 0
        for name in committed:
            if name not in generated and name not in HAND_WRITTEN:
                print(f"playbooks/tests/{name}: no generator in tools/playbook-tests/ writes it")
                problems += 1
        for name in generated:
            mine = os.path.join(COMMITTED, name)
            if not os.path.exists(mine):
                print(f"playbooks/tests/{name}: generated but not committed")
                problems += 1
                continue
            with open(mine) as f:
                want = f.readlines()
            with open(os.path.join(out, name)) as f:
                got = f.readlines()
            if want != got:
                problems += 1
                sys.stdout.writelines(difflib.unified_diff(want, got, f"playbooks/tests/{name} (committed)",
                                                           f"{name} (generated)", n=1))
        if problems:
            print(f"{problems} playbook test file(s) differ from their generators: edit the generator, "
                  "run it, and commit both")
            return 1
        print(f"{len(generated)} playbook test files match their generators")
        return 0


if __name__ == "__main__":
    sys.exit(main())
