#!/bin/bash
# Install and start-up on an emulated riscv64 edge box: a Debian trixie root (Python 3.13)
# under qemu-user, with every C compiler removed, as on a minimal edge image.
#
#   tests/bench/edge.sh [ROOT]     (as root; about 10 minutes; not part of CI)
#
# It builds the root with ../shared/tools/riscv64-lab (or LAB=path), builds proctui's
# wheel on the host, installs it inside into a fresh venv (timed), then runs
# tests/bench/startup.py inside and on the host and prints both, with their ratios.
# Emulated times mean something only as a ratio to the same measurement on the host.
set -euo pipefail
# A shell that sets this (as some CI images do) makes pip install no bytecode and every
# start of the host's venv compile every module: a third slower than what users get.
unset PYTHONDONTWRITEBYTECODE
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
root=${1:-/tmp/riscv64-root}
lab=${LAB:-$top/../shared/tools/riscv64-lab}
python=${PYTHON:-python3}

[ -x "$root/usr/bin/python3" ] || "$lab" build "$root"
"$lab" nocc "$root" >/dev/null

opt="$root/opt/proctui"
rm -rf "$opt" && mkdir -p "$opt"
"$python" -m pip wheel -q --no-deps -w "$opt" "$top" 2>/dev/null
cp "$here/startup.py" "$here/ptylab.py" "$opt/"
# This host's certificate authorities, so that pip inside reaches the package index.
cp /etc/ssl/certs/ca-certificates.crt "$opt/certs.crt"

echo "== install (emulated riscv64, no C compiler)"
"$lab" run "$root" '
  set -e; cd /opt/proctui; export SSL_CERT_FILE=/opt/proctui/certs.crt
  command -v gcc >/dev/null && echo "a C compiler is present" || echo "no C compiler"
  start=$(date +%s.%N)
  python3 -m venv venv && venv/bin/pip install -q --disable-pip-version-check proctui-*.whl
  end=$(date +%s.%N)
  echo "install_seconds $(echo "$end - $start" | python3 -c "print(round(eval(input()), 1))")"
  venv/bin/pip list 2>/dev/null | grep -i psutil || echo "psutil not installed"
  venv/bin/proctui --version'

echo "== start-up, emulated riscv64"
"$lab" run "$root" "cd /opt/proctui && venv/bin/python startup.py --runs 3 \
  --children ${CHILDREN:-10} --proctui /opt/proctui/venv/bin/proctui" | tee "$opt/emulated.txt"

echo "== start-up, this host ($(uname -m)), the same wheel in a fresh venv"
rm -rf /tmp/proctui-edge-host && "$python" -m venv /tmp/proctui-edge-host
/tmp/proctui-edge-host/bin/pip install -q "$opt"/proctui-*.whl 2>/dev/null
(cd /tmp && /tmp/proctui-edge-host/bin/python "$here/startup.py" --runs 3 \
  --children "${CHILDREN:-10}" --proctui /tmp/proctui-edge-host/bin/proctui) | tee "$opt/host.txt"

echo "== emulated / host"
"$python" - "$opt/emulated.txt" "$opt/host.txt" <<'PY'
import sys
def read(path):
    out = {}
    for line in open(path):
        key, value, *_ = line.split()
        out[key] = float(value.rstrip("x"))
    return out
emu, host = read(sys.argv[1]), read(sys.argv[2])
for key in emu:
    if host.get(key) and not key.startswith("console_vs"):
        print(f"{key} {emu[key] / host[key]:.1f}x")
PY
