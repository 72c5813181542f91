#!/usr/bin/env bash
# kill-parent.sh FLASHPROOF SIGNAL DIR: starts `fuzz parse` with 2 endless jobs in DIR, waits until
# both workers run, sends SIGNAL to the parent, and fails unless every worker is gone 20 s later.
set -u
fp=$1 sig=$2 dir=$3
mkdir -p "$dir" && cd "$dir"
"$fp" fuzz parse corpus -jobs=2 -workers=2 -runs=-1 -seed=1 -artifact_prefix=findings/ -q > parent.log 2>&1 &
parent=$!
workers=""
for _ in $(seq 1 200); do
  workers=$(pgrep -P "$parent" | tr '\n' ' ')
  [ "$(echo $workers | wc -w)" -ge 2 ] && break
  sleep 0.1
done
if [ "$(echo $workers | wc -w)" -lt 2 ]; then
  echo "the workers did not start: $(cat parent.log)"; kill -KILL "$parent" $workers 2>/dev/null; exit 1
fi
kill -"$sig" "$parent"
for _ in $(seq 1 200); do
  alive=""
  for w in $workers; do
    # Alive: the process exists and is not a zombie waiting for a reaper.
    state=$(awk '{print $3}' "/proc/$w/stat" 2>/dev/null)
    [ -n "$state" ] && [ "$state" != Z ] && alive="$alive $w"
  done
  [ -z "$alive" ] && { echo "SIG$sig: every worker stopped with its parent"; exit 0; }
  sleep 0.1
done
echo "SIG$sig: workers$alive still running 20 s after their parent was killed"
kill -KILL $alive 2>/dev/null
exit 1
