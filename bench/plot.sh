#!/usr/bin/env bash
# Turns the benchmarks' CSV results into the SVG figures docs/PERFORMANCE.md shows beside its
# tables, with gnuplot:
#
#   script_cost.svg      Redis CPU per call by script (bench/script_cost.sh, ..._summary.csv):
#                        sluice's functions and EVALSHA scripts beside the minimal scripts and INCR;
#   sluiced_cpu.svg      CPU per decision by path, split client / sluiced / redis
#                        (bench/sluiced_bench.sh): memory store and Redis x gRPC and HTTP, with
#                        the library, the ceiling and the peer for reference;
#   inflight_sweep.svg   decisions/s against checks in flight (bench/inflight_sweep.sh): the
#                        library, redis-benchmark's ceiling, the same client's ceiling for sluice's
#                        script and the peer on the same axes;
#   lease_error.svg      over-admission E and under-admission U against offered load, one line
#                        per store mode (bench/lease_error.sh, its "headline" rows).
#
#   bench/plot.sh [CSV...]
#
# Without arguments, each figure uses the newest matching file in $RESULTS_DIR (default
# bench/results; for lease_error.svg the newest with headline rows); a file given on the command line replaces the newest of its kind (by the name's
# prefix: script_cost-*_summary.csv, sluiced_bench-*.csv, inflight_sweep-*.csv,
# lease_error-*.csv). A figure whose CSV is missing is skipped with a message. FIGURES, a list of
# figure names (e.g. FIGURES=lease_error), draws only those. Writes into $OUT_DIR (default
# docs/img). Needs gnuplot (Debian: gnuplot-nox), installed with apt-get when missing and running
# as root.
set -euo pipefail
cd "$(dirname "$0")/.."
RESULTS_DIR=${RESULTS_DIR:-bench/results}
OUT_DIR=${OUT_DIR:-docs/img}

if ! command -v gnuplot >/dev/null; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "# installing gnuplot-nox"
    DEBIAN_FRONTEND=noninteractive timeout 600 apt-get install -y --no-install-recommends \
      gnuplot-nox >/dev/null
  else
    echo "gnuplot is missing: install the Debian package gnuplot-nox (sudo apt-get install gnuplot-nox)"
    exit 1
  fi
fi

newest() {  # glob -> newest file by its timestamped name, or nothing
  local f
  f=$(ls -1 $1 2>/dev/null | LC_ALL=C sort | tail -1 || true)
  echo "$f"
}
SCRIPT_COST=$(newest "$RESULTS_DIR/script_cost-*_summary.csv")
SLUICED=$(newest "$RESULTS_DIR/sluiced_bench-*.csv")
SWEEP=$(newest "$RESULTS_DIR/inflight_sweep-*.csv")
# The newest lease_error run with headline rows (a --faults run has none).
LEASE_ERROR=$(grep -l ',headline,' $RESULTS_DIR/lease_error-*.csv 2>/dev/null | LC_ALL=C sort |
  tail -1 || true)
for f in "$@"; do
  [ -f "$f" ] || { echo "no such file: $f"; exit 1; }
  case $(basename "$f") in
    script_cost-*_summary.csv) SCRIPT_COST=$f ;;
    sluiced_bench-*.csv) SLUICED=$f ;;
    inflight_sweep-*.csv) SWEEP=$f ;;
    lease_error-*.csv) LEASE_ERROR=$f ;;
    *) echo "not a known result file: $f (script_cost-*_summary.csv, sluiced_bench-*.csv," \
         "inflight_sweep-*.csv, lease_error-*.csv)"; exit 1 ;;
  esac
done

# FIGURES: only the figures named (script_cost, sluiced_cpu, inflight_sweep, lease_error).
if [ -n "${FIGURES:-}" ]; then
  wanted() { [[ " ${FIGURES//,/ } " == *" $1 "* ]]; }
  wanted script_cost || SCRIPT_COST=
  wanted sluiced_cpu || SLUICED=
  wanted inflight_sweep || SWEEP=
  wanted lease_error || LEASE_ERROR=
fi

mkdir -p "$OUT_DIR"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

# The data files and gnuplot scripts are made in Python (csv, medians); gnuplot draws.
python3 - "$WORK" "$OUT_DIR" "$SCRIPT_COST" "$SLUICED" "$SWEEP" "$LEASE_ERROR" <<'EOF'
import csv, os, statistics, sys

work, out_dir, script_cost, sluiced, sweep, lease_error = sys.argv[1:7]
TERM = ("set terminal svg size {w},{h} dynamic enhanced font 'DejaVu Sans,11' "
        "background rgb 'white'\n")
COMMON = ("set border 3 lw 1 lc rgb '#444444'\nset tics nomirror\n"
          "set grid ytics lc rgb '#dddddd' lw 1 dt 1\nset key top left reverse Left noopaque\n")
made = []
# FIGURES (names) restricts the figures drawn; the others are left out silently.
only = set(os.environ.get('FIGURES', '').replace(',', ' ').split())


def skipped(name, why):
    if not only or name in only:
        print(f'# {name}.svg skipped: {why}')


def stamp_text(stamp):  # 20261203T114112Z -> 2026-12-03 11:41 UTC
    return f'{stamp[0:4]}-{stamp[4:6]}-{stamp[6:8]} {stamp[9:11]}:{stamp[11:13]} UTC'


def load_text(rows):
    loads = [float(r['loadavg']) for r in rows if r.get('loadavg')]
    return f'load average {min(loads):.1f}-{max(loads):.1f}' if loads else 'load not recorded'


def gp_escape(text):
    return text.replace('"', '\\"')


def script(name, body):
    path = os.path.join(work, name + '.gp')
    with open(path, 'w') as f:
        f.write(body)
    made.append(path)


# 1. Redis CPU per call by script.
if script_cost:
    rows = list(csv.DictReader(open(script_cost)))
    colour = {'incr': '#9e9e9e', 'minimal': '#9e9e9e', 'minimal-fcall': '#c7c7c7',
              'floor-fcall': '#c7c7c7', 'fcall': '#1f77b4', 'evalsha': '#ff7f0e'}
    label = {'INCR': 'INCR', 'minimal fixed_window': 'minimal fixed window',
             'minimal gcra': 'minimal GCRA', 'minimal sliding_log': 'minimal sliding log',
             'minimal fixed_window fcall': 'minimal fixed window, function',
             'floor fixed_window fcall': 'fixed window floor, function'}
    # Horizontal bars, the first row at the top.
    with open(os.path.join(work, 'script_cost.dat'), 'w') as f:
        for i, r in enumerate(rows):
            name = label.get(r['name'], r['name'].replace('_', ' ').replace(' fcall', ' FCALL')
                             .replace(' evalsha', ' EVALSHA'))
            ratio = f"{float(r['ratio_to_reference']):.2f}x" if r['ratio_to_reference'] else ''
            f.write(f'{i}\t{r["median_usec_per_call"]}\t{r["min_usec_per_call"]}\t'
                    f'{r["max_usec_per_call"]}\t0x{colour[r["kind"]][1:]}\t"{name}"\t"{ratio}"\n')
    rounds = rows[0]['rounds']
    title = (f'Redis CPU per call (INFO commandstats), median of {rounds} rounds, range as '
             f'bars\\n{{/*0.85 {stamp_text(rows[0]["stamp"])}, 2 shared cores; at the right: '
             f'ratio of medians to the minimal script of the same algorithm}}')
    script('script_cost', TERM.format(w=960, h=540) + COMMON + f'''
set output "{out_dir}/script_cost.svg"
set title "{title}"
set xlabel "Redis CPU us per call"
set xrange [0:*]
set yrange [{len(rows) - 0.4}:-0.6]
set ytics noenhanced font ',10'
set grid xtics noytics lc rgb '#dddddd'
set style fill solid 0.85 border -1
set key below horizontal maxrows 2
plot "{work}/script_cost.dat" using (0):1:(0):2:($1-0.35):($1+0.35):5:ytic(6) \\
       with boxxyerror lc rgb variable notitle, \\
     "" using 2:1:3:4 with xerrorbars lc rgb '#222222' pt -1 notitle, \\
     "" using 4:1:7 with labels left offset 0.6,0 font ',9' notitle, \\
     NaN with boxes lc rgb '#9e9e9e' title 'INCR, minimal scripts (EVALSHA)', \\
     NaN with boxes lc rgb '#c7c7c7' title 'reference functions', \\
     NaN with boxes lc rgb '#1f77b4' title "sluice's functions (FCALL, the default)", \\
     NaN with boxes lc rgb '#ff7f0e' title "sluice's scripts (EVALSHA, Redis < 7)"
''')
else:
    skipped('script_cost', 'no script_cost-*_summary.csv')

# 2. CPU per decision by path.
if sluiced:
    rows = list(csv.DictReader(open(sluiced)))
    order = [('sluiced', 'memory', 'grpc', 'sluiced\\nmemory\\ngRPC'),
             ('sluiced', 'memory', 'http', 'sluiced\\nmemory\\nHTTP /json'),
             ('sluiced', 'redis', 'grpc', 'sluiced\\nRedis\\ngRPC'),
             ('sluiced', 'redis', 'http', 'sluiced\\nRedis\\nHTTP /json'),
             ('library', 'redis', 'in-process', 'library\\nRedisStore\\n256 in flight'),
             ('peer', 'redis', 'in-process', 'peer\\nrlflx Redis\\n50 in flight'),
             ('ceiling', 'redis', 'script_load', 'ceiling\\nFCALL\\n-c 50 -P 16')]
    with open(os.path.join(work, 'sluiced_cpu.dat'), 'w') as f:
        i = 0
        for what, store, protocol, name in order:
            for r in rows:
                if (r['what'], r['store'], r['protocol']) != (what, store, protocol):
                    continue
                num = lambda k: float(r[k]) if r[k] else 0.0
                total = num('client_cpu_us_per_decision') + num('sluiced_cpu_us_per_decision') + \
                    num('redis_cpu_us_per_decision')
                rate = float(r['decisions_per_s'])
                f.write(f'"{name}\\n{rate / 1000:.1f}k/s"\t{num("client_cpu_us_per_decision")}\t'
                        f'{num("sluiced_cpu_us_per_decision")}\t{num("redis_cpu_us_per_decision")}\t'
                        f'{total:.1f}\t{i}\n')
                i += 1
    inflight = next((r['inflight'] for r in rows if r['what'] == 'sluiced'), '?')
    title = (f'CPU time per decision by path, stacked by process (one run, {inflight} in flight '
             f'to sluiced)\\n{{/*0.85 {stamp_text(rows[0]["stamp"])}, 2 shared cores, '
             f'{load_text(rows)}; under each bar: decisions/s}}')
    script('sluiced_cpu', TERM.format(w=960, h=540) + COMMON + f'''
set output "{out_dir}/sluiced_cpu.svg"
set title "{title}"
set ylabel "CPU us per decision (user + system)"
set yrange [0:*]
set style data histograms
set style histogram rowstacked
set style fill solid 0.85 border -1
set boxwidth 0.7
set xtics font ',10'
set bmargin 6
set key top right
plot "{work}/sluiced_cpu.dat" using 2:xtic(1) lc rgb '#2ca02c' title 'client (load generator)', \\
     "" using 3 lc rgb '#1f77b4' title 'sluiced', \\
     "" using 4 lc rgb '#d62728' title 'redis-server', \\
     "" using 6:5:(sprintf('%.0f', $5)) with labels offset 0,0.7 font ',10' notitle
''')
else:
    skipped('sluiced_cpu', 'no sluiced_bench-*.csv')

# 3. Decisions/s against checks in flight.
if sweep:
    rows = list(csv.DictReader(open(sweep)))
    names = {'library': "library (RedisStore, one pipelined connection; sluice's fixed window)",
             'ceiling': 'ceiling: redis-benchmark EVALSHA minimal fixed window, -c C -P P',
             'ceiling_sluice_script': "ceiling for sluice's script: FCALL, same C x P",
             'peer': 'peer: rate-limiter-flexible RateLimiterRedis (Node, ioredis)'}
    style = {'library': "lc rgb '#1f77b4' pt 7 ps 0.8 lw 2",
             'ceiling': "lc rgb '#555555' pt 5 ps 0.7 lw 1.5 dt 2",
             'ceiling_sluice_script': "lc rgb '#9467bd' pt 9 ps 0.8 lw 1.5 dt 3",
             'peer': "lc rgb '#ff7f0e' pt 13 ps 0.9 lw 2"}
    colour = {s: style[s].split()[2] for s in style}
    def median_of(s, n, key):
        v = [float(r[key]) for r in rows
             if r['series'] == s and int(r['inflight']) == n and r[key]]
        return (statistics.median(v), min(v), max(v)) if v else None

    rate_plots, redis_plots, client_plots = [], [], []
    for s in names:
        points = sorted({int(r['inflight']) for r in rows if r['series'] == s})
        if not points:
            continue
        for key, plots, title in (
                ('decisions_per_s', rate_plots, f'title "{gp_escape(names[s])}"'),
                ('redis_cpu_us_per_decision', redis_plots, 'notitle'),
                ('client_cpu_us_per_decision', client_plots, 'notitle')):
            dat = os.path.join(work, f'sweep_{s}_{key}.dat')
            with open(dat, 'w') as f:
                for n in points:
                    m = median_of(s, n, key)
                    if m:
                        f.write(f'{n}\t{m[0]}\t{m[1]}\t{m[2]}\n')
            if os.path.getsize(dat) == 0:
                continue
            plots.append(f'"{dat}" using 1:2 with linespoints {style[s]} {title}')
            plots.append(f'"{dat}" using 1:2:3:4 with yerrorbars lc rgb {colour[s]} pt -1 notitle')
    rounds = max(int(r['round']) for r in rows)
    title = (f'Decisions/s against checks in flight, one redis-server, median of {rounds} rounds, '
             f'range as bars\\n{{/*0.85 {stamp_text(rows[0]["stamp"])}, 2 shared cores, '
             f'{load_text(rows)}; ceilings: C = min(N, 16) connections x N/C pipelined}}')
    script('inflight_sweep', TERM.format(w=960, h=900) + COMMON + f"""
set output "{out_dir}/inflight_sweep.svg"
set multiplot
set logscale x 2
set xrange [0.7:362]
set xlabel "checks in flight (N)"
set size 1, 0.6
set origin 0, 0.4
set title "{title}"
set ylabel "decisions/s"
set yrange [0:*]
set format y "%.0s%c"
set key top left noenhanced
plot {', '.join(rate_plots)}
unset key
set format y "%g"
set size 0.5, 0.4
set origin 0, 0
set title "redis-server CPU per decision (from /proc)"
set ylabel "CPU us per decision"
plot {', '.join(redis_plots)}
set origin 0.5, 0
set title "client CPU per decision (redis-benchmark: not measured)"
set ylabel "CPU us per decision"
plot {', '.join(client_plots)}
unset multiplot
""")
else:
    skipped('inflight_sweep', 'no inflight_sweep-*.csv')

# 4. Over- and under-admission against offered load, one line per store mode.
if lease_error:
    rows = [r for r in csv.DictReader(open(lease_error))
            if r['sweep'] == 'headline' and r['phase'] == 'all' and r['fault'] == 'none']
    # One configuration group: N = 4 when there, else the group with the most rows.
    groups = {}
    for r in rows:
        key = (r['instances'], r['split'], r['schedule'], r['algorithm'], r['limit_text'])
        groups.setdefault(key, []).append(r)
    if groups:
        key = max(groups, key=lambda k: (k[0] == '4', len(groups[k])))
        rows = groups[key]
        n, split, schedule, algorithm, limit_text = key
        modes = [('exact', 'exact (one script per decision)', '#1f77b4', 7),
                 ('memory', 'memory (each instance alone)', '#d62728', 5),
                 ('count-and-flush', "count-and-flush (the peers' design, 100 ms sync)",
                  '#ff7f0e', 9),
                 ('lease', 'lease (lease=true)', '#2ca02c', 13)]
        panels = {'e': [], 'u': []}
        top = {'e': 0.0, 'u': 0.0}
        for mode, title, colour, pt in modes:
            mine = sorted((r for r in rows if r['mode'] == mode), key=lambda r: float(r['load_x']))
            if not mine:
                continue
            dat = os.path.join(work, f'lease_error_{mode}.dat')
            with open(dat, 'w') as f:
                for r in mine:
                    f.write(f"{r['load_x']}\t{r['e_max']}\t{r['e_p50']}\t{r['u_max']}\t"
                            f"{r['u_p50']}\n")
                    top['e'] = max(top['e'], float(r['e_max']))
                    top['u'] = max(top['u'], float(r['u_max']))
            for panel, col in (('e', 2), ('u', 4)):
                panels[panel].append(f'"{dat}" using 1:{col} with linespoints lc rgb "{colour}" '
                                     f'pt {pt} ps 0.9 lw 2 title "{gp_escape(title)}"')
                panels[panel].append(f'"{dat}" using 1:{col + 1} with lines lc rgb "{colour}" '
                                     f'lw 1 dt 2 notitle')
        skipped = '' if any(r['mode'] == 'lease' for r in rows) else \
            '; lease mode: not measured yet (the store refuses lease=true)'
        arrivals = {'poisson': 'Poisson'}.get(schedule, schedule)
        title = (f'Over-admission E and under-admission U against offered load: N = {n} '
                 f'instances, {split} split, {arrivals} arrivals, {algorithm.replace("_", " ")} '
                 f'{limit_text}\\n{{/*0.85 {stamp_text(rows[0]["stamp"])}, 2 shared cores, '
                 f'{load_text(rows)}}}\\n{{/*0.85 solid: max over windows, dashed: median'
                 f'{skipped}}}')
        script('lease_error', TERM.format(w=960, h=820) + COMMON + f"""
set output "{out_dir}/lease_error.svg"
set multiplot
set logscale x 10
set xrange [0.4:130]
set xtics (0.5, 1, 2, 5, 10, 20, 50, 100)
set xlabel "offered load (multiples of the limit, all instances together)"
set size 1, 0.55
set origin 0, 0.45
set title "{title}"
set ylabel "E = max(0, admitted - bound) / limit"
set yrange [0:{max(1.0, top['e'] * 1.15):.2f}]
set key top left noenhanced
plot {', '.join(panels['e'])}
unset key
set size 1, 0.45
set origin 0, 0
set title "U = (min(offered, limit) - admitted) / limit, windows wholly inside the run"
set ylabel "U"
set yrange [0:{max(0.1, top['u'] * 1.15):.2f}]
plot {', '.join(panels['u'])}
unset multiplot
""")
    else:
        skipped('lease_error', 'no headline rows in ' + lease_error)
else:
    skipped('lease_error', 'no lease_error-*.csv')
EOF

for gp in "$WORK"/*.gp; do
  [ -e "$gp" ] || continue
  gnuplot "$gp"
  echo "# wrote $OUT_DIR/$(basename "${gp%.gp}").svg"
done
echo "# from: ${SCRIPT_COST:-none} ${SLUICED:-none} ${SWEEP:-none} ${LEASE_ERROR:-none}"
