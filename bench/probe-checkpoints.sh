#!/usr/bin/env bash
# Checkpoint probe: sustained exchange load on a release `baton serve`, with
#  * p50/p99/max per consecutive slice (wrk runs back to back, fresh chains each),
#  * the WAL's size sampled every 0.5 s,
#  * every fsync/fdatasync of the server, with its file and duration (strace), so that
#    checkpoints (the only syncs of the main database file) can be counted and timed.
# Usage: bench/probe-checkpoints.sh BATON_BINARY [SLICES] [SECONDS_PER_SLICE] [CONNECTIONS]
# Needs: release baton-bench (seeding), wrk, strace. Writes to a scratch directory it prints.
set -euo pipefail
cd "$(dirname "$0")/.."
baton=$1
slices=${2:-12}
seconds=${3:-5}
connections=${4:-32}
dir=$(mktemp -d /tmp/baton-probe.XXXXXX)
echo "scratch: $dir" >&2
pids=()
cleanup() { for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done; }
trap cleanup EXIT

chains_per_slice=2000
.build/release/baton-bench seed --db "$dir/baton.db" --chains $((slices * chains_per_slice)) --tokens "$dir/tokens.txt" >&2
split -l $chains_per_slice -d -a 3 "$dir/tokens.txt" "$dir/slice-"
"$baton" serve --db "$dir/baton.db" --listen 127.0.0.1:18090 --max-chains-per-user 0 --access-log off > "$dir/baton.out" 2>&1 &
server=$!
pids+=("$server")
for _ in $(seq 200); do curl -sf http://127.0.0.1:18090/healthz -o /dev/null && break; sleep 0.05; done

strace -f --seccomp-bpf -e trace=fsync,fdatasync -T -y -p "$server" -o "$dir/syncs.txt" 2> /dev/null &
pids+=("$!")
( while true; do echo "$(date +%s.%N) $(stat -c %s "$dir/baton.db-wal" 2>/dev/null || echo 0) $(stat -c %s "$dir/baton.db")"; sleep 0.5; done ) > "$dir/wal.txt" &
pids+=("$!")
sleep 1
for slice in $(seq 0 $((slices - 1))); do
    file=$(printf '%s/slice-%03d' "$dir" "$slice")
    wrk --latency -t1 -c"$connections" -d"${seconds}s" -s bench/wrk/exchange.lua http://127.0.0.1:18090 -- "$file" > "$dir/wrk-$slice.txt" 2>&1
    python3 - "$dir/wrk-$slice.txt" "$slice" "$seconds" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
def ms(pattern):
    m = re.search(pattern, text)
    return float(m.group(1)) * {"us": 0.001, "ms": 1, "s": 1000}[m.group(2)]
rps = float(re.search(r"Requests/sec:\s+([\d.]+)", text).group(1))
p50, p99 = ms(r"50%\s+([\d.]+)(us|ms|s)"), ms(r"99%\s+([\d.]+)(us|ms|s)")
worst = ms(r"Latency\s+\S+\s+\S+\s+([\d.]+)(us|ms|s)")
slice, seconds = int(sys.argv[2]), int(sys.argv[3])
print(f"slice {slice:2d} (t={slice * seconds:3d}s): {rps:8.0f}/s  p50 {p50:7.2f} ms  p99 {p99:7.2f} ms  max {worst:7.2f} ms")
PY
done
sleep 1
curl -s http://127.0.0.1:18090/metrics | grep -E '^baton_(wal|group_commit_batch_size_(sum|count))' || true
kill "$server"; wait "$server" 2>/dev/null || true
sleep 0.5
python3 - "$dir/syncs.txt" "$dir/wal.txt" <<'PY'
import re, sys, statistics
main, wal = [], []
for line in open(sys.argv[1]):
    m = re.search(r"f(?:data)?sync\(\d+<([^>]+)>\)\s+=\s+\S+\s+<([\d.]+)>", line)
    if not m: continue
    (wal if m.group(1).endswith("-wal") else main if m.group(1).endswith(".db") else []).append(float(m.group(2)) * 1000)
def describe(xs):
    if not xs: return "none"
    xs = sorted(xs)
    return f"{len(xs)}, median {statistics.median(xs):.2f} ms, p99 {xs[int(0.99 * (len(xs) - 1))]:.2f} ms, max {xs[-1]:.2f} ms, total {sum(xs) / 1000:.2f} s"
print("fsyncs of the WAL (commits, and the first step of each checkpoint):", describe(wal))
print("fsyncs of the main database file (checkpoints that reached the end of the WAL, plus the checkpointer's own):", describe(main))
sizes = [int(l.split()[1]) for l in open(sys.argv[2]) if l.strip()]
print(f"WAL size: max {max(sizes) / 2**20:.1f} MiB, last {sizes[-1] / 2**20:.1f} MiB")
PY
