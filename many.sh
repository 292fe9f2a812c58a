#!/bin/bash
# usage: many.sh N mode(pipe|pty)
cd /tmp/w42r
n=$1; mode=$2; bad=0
for i in $(seq $n); do
  if [ $mode = pipe ]; then
    /work/w42/.venv/bin/proctui run --headless -f ready.toml --stop-after 1.5 2>&1 | cat > o_$mode_$i.txt
  else
    script -qefc "/work/w42/.venv/bin/proctui run --headless -f ready.toml --stop-after 1.5" /dev/null > o_${mode}_$i.txt 2>&1
  fi
  r=$(python3 check.py o_${mode}_$i.txt)
  [ "$r" != ok ] && { echo "$i: $r"; bad=$((bad+1)); }
done
echo "$mode: $bad bad of $n"
