#!/usr/bin/env node
// Times the ONNX models reference/onnx_export.py wrote with ONNX Runtime (onnxruntime-node, CPU
// execution provider) and writes the Go benchmark format of bench/results/FORMAT.md, backend
// "ort", as reference/bench_torch.py writes backend "torch" (docs/baselines.md).
//
//   node reference/bench_ort.js --manifest DIR/manifest.json -o FILE [--threads 2] [--count 10]
//        [--warmup 3] [--min-sample-ms 0] [--ort-modules DIR] [--outputs]
//   node reference/bench_ort.js --manifest DIR/manifest.json --serve [--threads 2] [--warmup 3]
//        [--min-sample-ms 0] [--ort-modules DIR]
//
// The protocol is bench_torch.py's: --warmup untimed calls (the warm-up ends after a call longer
// than 1 s), then --count samples, each repeating session.run until --min-sample-ms has passed
// and recording the mean, one result line per sample, then a '# baseline' line naming what ran
// (ORT version, provider, opset, the exported module) and a '# load' line, the foreign CPU load
// over its samples (contended above 10%), as bench_torch.py writes them. The session has --threads intra-op threads,
// one inter-op thread, sequential execution and every graph optimization. A case the manifest
// marks NS (no model), or that ONNX Runtime cannot load or run, is a line
// "# NS Benchmark<Case>/backend=ort/...: <reason>". Without onnxruntime-node every case is NS
// with "onnxruntime-node not installed". --outputs writes each output of one run beside the
// model (ort_<name>.bin, float32 little-endian) for the tests instead of timing.
//
// --serve times on request, for `vitbench pair`, which alternates vitbench's samples with
// these: it reads one JSON object per line on stdin and answers each with one line on stdout.
// It first writes {"version", "cpu", "opset", "provider"}; then
//   {"open": CASE, "batch": B}  loads the case's model and runs the warm-up:
//                               {"ok": true, "label": ...}, {"ns": reason} or {"error": message}
//   {"sample": true, "rewarm_ms": W}  untimed runs for at least W ms (at least one: they bring
//                               the caches back and let the other side's threads go quiet),
//                               then one sample as above: {"runs": n, "ns": mean ns per run, "load": x}
//   {"close": true}             releases the session: {"ok": true, "rss": peak RSS bytes}
// and exits at the end of its input.
'use strict';

const fs = require('fs');
const os = require('os');
const path = require('path');

const WARMUP_LONG_NS = 1000000000n;
const UNITS = [
  'Unit GFLOP/s better=higher', 'Unit GB/s better=higher', 'Unit MACs/op assume=exact',
  'Unit MACs/op better=lower', 'Unit B/op assume=exact', 'Unit B/op better=lower',
  'Unit moved-B/op assume=exact', 'Unit moved-B/op better=lower', 'Unit B/rss better=lower',
];

function usage(msg) {
  process.stderr.write('bench_ort.js: ' + msg + '\n');
  process.exit(2);
}

// parseArgs reads the command line into an options object; bad usage exits 2.
function parseArgs(argv) {
  const o = { threads: 2, count: 10, warmup: 3, minSampleMs: 0, outputs: false, serve: false, manifest: '', out: '',
    ortModules: process.env.VITBENCH_ORT_MODULES ||
      path.join(process.env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache'), 'vitbench', 'ort', 'node_modules') };
  const ints = { '--threads': 'threads', '--count': 'count', '--warmup': 'warmup' };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const val = () => {
      if (i + 1 >= argv.length) usage(a + ' needs a value');
      return argv[++i];
    };
    if (a in ints) {
      const v = val();
      if (!/^[0-9]+$/.test(v)) usage(a + ' ' + v + ': not a non-negative integer');
      o[ints[a]] = parseInt(v, 10);
    } else if (a === '--min-sample-ms') {
      const v = Number(val());
      if (!Number.isFinite(v) || v < 0) usage('--min-sample-ms must be a number >= 0');
      o.minSampleMs = v;
    } else if (a === '--manifest') o.manifest = val();
    else if (a === '-o' || a === '--out') o.out = val();
    else if (a === '--ort-modules') o.ortModules = val();
    else if (a === '--outputs') o.outputs = true;
    else if (a === '--serve') o.serve = true;
    else usage('unknown argument ' + a);
  }
  if (!o.manifest) usage('--manifest is required');
  if (!o.outputs && !o.serve && !o.out) usage('-o FILE is required (or --outputs, --serve)');
  if (o.threads < 1 || o.count < 1) usage('--threads and --count must be >= 1');
  return o;
}

// loadOrt returns the onnxruntime-node module from dir (an npm node_modules folder), else from
// Node's own resolution, else null.
function loadOrt(dir) {
  for (const name of [path.join(dir, 'onnxruntime-node'), 'onnxruntime-node']) {
    try {
      return require(name);
    } catch (e) {
      if (e.code !== 'MODULE_NOT_FOUND') throw e;
    }
  }
  return null;
}

// caseToken spells a case name as the first part of a Go benchmark name, as vitbench writes it.
function caseToken(name) {
  return /^[a-z]/.test(name) ? name[0].toUpperCase() + name.slice(1) : '_' + name;
}

function benchName(c, threads) {
  return 'Benchmark' + caseToken(c.case) + '/backend=ort/batch=' + c.batch + '/threads=' + threads + '/dtype=float32';
}

// fmt writes a positive metric with 4 significant digits, never in exponent notation.
function fmt(x) {
  if (!(x > 0) || !Number.isFinite(x)) return '0';
  const decimals = Math.max(0, 3 - Math.floor(Math.log10(x)));
  return x.toFixed(decimals);
}

function oneLine(s) {
  return String(s).split(/\s+/).filter(Boolean).join(' ');
}

function cpuModel() {
  try {
    const m = /^model name\s*:\s*(.*)$/m.exec(fs.readFileSync('/proc/cpuinfo', 'utf8'));
    if (m) return m[1].trim();
  } catch (e) { /* not Linux */ }
  return (os.cpus()[0] || {}).model || 'unknown';
}

// resetPeakRss restarts the kernel's peak-RSS count (VmHWM), as vitbench does per case.
function resetPeakRss() {
  if (global.gc) global.gc();
  try {
    fs.writeFileSync('/proc/self/clear_refs', '5');
  } catch (e) { /* not allowed here */ }
}

function peakRss() {
  try {
    const m = /^VmHWM:\s*(\d+)/m.exec(fs.readFileSync('/proc/self/status', 'utf8'));
    if (m) return parseInt(m[1], 10) * 1024;
  } catch (e) { /* not Linux */ }
  return 0;
}

// Foreign CPU load of a timing window, as reference/vitbench_ref/contention.py computes it:
// the system's busy ticks (/proc/stat, USER_HZ 100) minus this process's own CPU time, over the
// window's capacity (wall time x CPUs); null where /proc/stat cannot be read.
const TICKS_PER_SECOND = 100;
const CONTENDED = 0.10;

function readStat() {
  try {
    let busy = null;
    let cpus = 0;
    for (const line of fs.readFileSync('/proc/stat', 'ascii').split('\n')) {
      const f = line.trim().split(/\s+/);
      if (!f[0].startsWith('cpu')) continue;
      if (f[0] !== 'cpu') {
        if (/^cpu\d+$/.test(f[0])) cpus++;
        continue;
      }
      const v = f.slice(1, 9).map(Number);
      while (v.length < 8) v.push(0);
      busy = v.reduce((a, b) => a + b, 0) - v[3] - v[4];
    }
    return busy === null || cpus === 0 ? null : { busy, cpus };
  } catch (e) {
    return null;
  }
}

function startWindow() {
  return { t0: process.hrtime.bigint(), stat: readStat(), own: process.cpuUsage() };
}

// stopWindow returns [load or null, contended].
function stopWindow(w) {
  const wall = Number(process.hrtime.bigint() - w.t0) / 1e9;
  const after = readStat();
  if (!w.stat || !after || wall <= 0 || after.busy < w.stat.busy) return [null, false];
  const own = process.cpuUsage(w.own);
  const ownS = (own.user + own.system) / 1e6;
  const cpus = Math.max(w.stat.cpus, after.cpus);
  const load = Math.min(1, Math.max(0, ((after.busy - w.stat.busy) / TICKS_PER_SECOND - ownS) / (wall * cpus)));
  return [load, load > CONTENDED + 1 / (wall * TICKS_PER_SECOND)];
}

// readInput makes an ort.Tensor of one manifest input from its raw little-endian file.
function readInput(ort, dir, inp) {
  const buf = fs.readFileSync(path.join(dir, inp.file));
  const n = inp.shape.reduce((a, b) => a * b, 1);
  const copy = (Type) => {
    const out = new Type(n);
    new Uint8Array(out.buffer).set(buf.subarray(0, n * Type.BYTES_PER_ELEMENT));
    return out;
  };
  const types = { float32: Float32Array, int64: BigInt64Array, int32: Int32Array, bool: Uint8Array };
  const Type = types[inp.dtype];
  if (!Type) throw new Error('input ' + inp.name + ': dtype ' + inp.dtype + ' not supported');
  if (buf.length !== n * Type.BYTES_PER_ELEMENT) {
    throw new Error('input ' + inp.name + ': ' + inp.file + ' has ' + buf.length + ' bytes, shape ' +
      JSON.stringify(inp.shape) + ' needs ' + n * Type.BYTES_PER_ELEMENT);
  }
  return new ort.Tensor(inp.dtype, copy(Type), inp.shape);
}

function sessionOptions(threads) {
  return { executionProviders: ['cpu'], intraOpNumThreads: threads, interOpNumThreads: 1,
    executionMode: 'sequential', graphOptimizationLevel: 'all' };
}

// openCase restarts the peak-RSS count, creates manifest case c's session with --threads
// intra-op threads and reads its inputs: { session, feeds }.
async function openCase(ort, dir, c, o) {
  resetPeakRss();
  const session = await ort.InferenceSession.create(path.join(dir, c.model), sessionOptions(o.threads));
  const feeds = {};
  for (const inp of c.inputs) feeds[inp.name] = readInput(ort, dir, inp);
  return { session, feeds };
}

// warmUp runs the session --warmup times untimed, stopping after a run longer than 1 s.
async function warmUp(session, feeds, o) {
  for (let i = 0; i < o.warmup; i++) {
    const t0 = process.hrtime.bigint();
    await session.run(feeds);
    if (process.hrtime.bigint() - t0 > WARMUP_LONG_NS) break;
  }
}

// benchCase times one case; returns its samples as [runs, mean ns per run].
async function benchCase(session, feeds, o) {
  const minNs = BigInt(Math.round(o.minSampleMs * 1e6));
  await warmUp(session, feeds, o);
  const samples = [];
  const window = startWindow();
  for (let i = 0; i < o.count; i++) samples.push(await oneSample(session, feeds, minNs));
  samples.load = stopWindow(window);
  return samples;
}

// oneSample repeats session.run until minNs has passed: [runs, mean ns per run].
async function oneSample(session, feeds, minNs) {
  let runs = 0;
  let elapsed = 0n;
  const t0 = process.hrtime.bigint();
  for (;;) {
    await session.run(feeds);
    runs++;
    elapsed = process.hrtime.bigint() - t0;
    if (elapsed >= minNs) break;
  }
  return [runs, Number(elapsed) / runs];
}

// serve answers the requests of --serve (see the top of this file) until stdin ends.
async function serve(o, ort, version, manifest, dir) {
  const send = (obj) => process.stdout.write(JSON.stringify(obj) + '\n');
  send({ version: version || 'not installed', cpu: cpuModel(), opset: manifest.opset, provider: 'cpu' });
  const minNs = BigInt(Math.round(o.minSampleMs * 1e6));
  let cur = null; // { session, feeds }
  const rl = require('readline').createInterface({ input: process.stdin, crlfDelay: Infinity });
  for await (const line of rl) {
    if (!line.trim()) continue;
    let req;
    try {
      req = JSON.parse(line);
    } catch (e) {
      send({ error: 'not JSON: ' + oneLine(e.message) });
      continue;
    }
    try {
      if (typeof req.open === 'string') {
        if (cur) await cur.session.release();
        cur = null;
        const c = manifest.cases.find((m) => m.case === req.open && m.batch === req.batch);
        let reason = c ? c.ns : 'no model for this case and batch in the manifest';
        if (!reason && !ort) reason = 'onnxruntime-node not installed (looked in ' + o.ortModules + ' and Node\'s module path)';
        if (reason) {
          send({ ns: oneLine(reason) });
          continue;
        }
        cur = await openCase(ort, dir, c, o);
        await warmUp(cur.session, cur.feeds, o);
        send({ ok: true, label: label(c, version, manifest, o.threads) });
      } else if (req.sample) {
        if (!cur) throw new Error('sample before open');
        const rewarmNs = BigInt(Math.round(Math.max(0, Number(req.rewarm_ms) || 0) * 1e6));
        await oneSample(cur.session, cur.feeds, rewarmNs);
        const window = startWindow();
        const [runs, ns] = await oneSample(cur.session, cur.feeds, minNs);
        send({ runs, ns_per_run: ns, load: stopWindow(window)[0] });
      } else if (req.close) {
        if (cur) await cur.session.release();
        cur = null;
        send({ ok: true, rss: peakRss() });
      } else {
        send({ error: 'unknown request ' + oneLine(line) });
      }
    } catch (e) {
      send({ error: 'ONNX Runtime ' + version + ' cannot run it: ' + oneLine(e.message) });
    }
  }
  if (cur) await cur.session.release();
  return 0;
}

function resultLine(c, threads, runs, ns, rss) {
  ns = Math.max(Math.floor(ns), 1);
  const f = [ns + ' ns/op'];
  if (c.macs) f.push(fmt(2 * c.macs / ns) + ' GFLOP/s');
  f.push(fmt(c.bytes / ns) + ' GB/s', c.macs + ' MACs/op', c.bytes + ' moved-B/op');
  if (rss) f.push(rss + ' B/rss');
  return benchName(c, threads) + ' \t' + runs + '\t' + f.join('\t');
}

// label says what code a row ran (read into the row's Baseline, as bench_torch.py's labels).
function label(c, version, manifest, threads) {
  return 'ONNX Runtime ' + version + ' (onnxruntime-node, CPU execution provider, ' + threads +
    ' intra-op threads, 1 inter-op): ' + (c.module || 'the reference module') + ' exported by torch ' + manifest.torch_version +
    ' at opset ' + (c.opset || manifest.opset);
}

function writeAtomic(file, lines) {
  const tmp = file + '.tmp.' + process.pid;
  fs.writeFileSync(tmp, lines.join('\n') + '\n');
  fs.renameSync(tmp, file);
}

async function main() {
  const o = parseArgs(process.argv.slice(2));
  const dir = path.dirname(path.resolve(o.manifest));
  let manifest;
  try {
    manifest = JSON.parse(fs.readFileSync(o.manifest, 'utf8'));
  } catch (e) {
    usage('--manifest ' + o.manifest + ': ' + e.message);
  }
  if (!Array.isArray(manifest.cases)) usage('--manifest ' + o.manifest + ': no "cases" list');
  const ort = loadOrt(o.ortModules);
  const version = ort ? ort.env.versions.node || ort.env.versions.common : '';
  if (o.serve) return serve(o, ort, version, manifest, dir);
  const lines = [
    'goos: ' + process.platform,
    'goarch: ' + ({ x64: 'amd64', arm64: 'arm64' }[process.arch] || process.arch),
    'cpu: ' + cpuModel(),
    'ort-version: ' + (version || 'not installed'),
    'ort-opset: ' + manifest.opset,
    'ort-provider: cpu',
    '# date: ' + new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
    'clock: wall',
  ].concat(UNITS);
  let failed = 0;
  for (const c of manifest.cases) {
    let reason = c.ns;
    if (!reason && !ort) reason = 'onnxruntime-node not installed (looked in ' + o.ortModules + ' and Node\'s module path)';
    if (reason) {
      lines.push('# NS ' + benchName(c, o.threads) + ': ' + oneLine(reason));
      process.stderr.write(c.case + ' batch=' + c.batch + ' ORT NS: ' + oneLine(reason) + '\n');
      continue;
    }
    try {
      const { session, feeds } = await openCase(ort, dir, c, o);
      if (o.outputs) {
        const res = await session.run(feeds);
        for (const name of c.outputs) {
          const t = res[name];
          if (!t || t.type !== 'float32') throw new Error('output ' + name + ': missing or not float32');
          fs.writeFileSync(path.join(dir, path.dirname(c.model), 'ort_' + name + '.bin'),
            Buffer.from(t.data.buffer, t.data.byteOffset, t.data.byteLength));
        }
        process.stderr.write(c.case + ': outputs written\n');
      } else {
        const samples = await benchCase(session, feeds, o);
        const rss = peakRss();
        for (const [runs, ns] of samples) lines.push(resultLine(c, o.threads, runs, ns, rss));
        lines.push('# baseline ' + benchName(c, o.threads) + ': ' + label(c, version, manifest, o.threads));
        const [load, busy] = samples.load;
        lines.push('# load ' + benchName(c, o.threads) + ': ' + (load === null ? 'null' : load.toFixed(3)) +
          (busy ? ' contended' : ''));
        const med = samples.map((s) => s[1]).sort((a, b) => a - b)[Math.floor(samples.length / 2)];
        process.stderr.write(c.case + ' batch=' + c.batch + ' threads=' + o.threads + '  median ' +
          (med / 1e6).toFixed(3) + ' ms  (ORT ' + version + ')\n');
      }
      await session.release();
    } catch (e) {
      failed++;
      lines.push('# NS ' + benchName(c, o.threads) + ': ONNX Runtime ' + version + ' cannot run it: ' + oneLine(e.message));
      process.stderr.write(c.case + ' ORT NS: ' + oneLine(e.message) + '\n');
    }
    if (o.out) writeAtomic(o.out, lines);
  }
  if (o.out) {
    writeAtomic(o.out, lines);
    process.stderr.write('wrote ' + o.out + '\n');
  }
  return o.outputs && failed ? 1 : 0;
}

main().then((code) => process.exit(code), (e) => {
  process.stderr.write('bench_ort.js: ' + (e && e.stack || e) + '\n');
  process.exit(1);
});
