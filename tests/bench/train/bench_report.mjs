// The train bench's printed report (the JSON is train_bench.mjs's).

function bytesText(b) {
  if (b === undefined || b === null) return '-';
  const units = ['B', 'KB', 'MB', 'GB', 'TB'];
  let u = 0;
  while (b >= 1024 && u < units.length - 1) { b /= 1024; u++; }
  return `${b.toFixed(b >= 100 ? 0 : 1)} ${units[u]}`;
}

function rateText(r) {
  if (r >= 1e6) return `${(r / 1e6).toFixed(2)} M`;
  if (r >= 1e3) return `${(r / 1e3).toFixed(1)} k`;
  return r.toFixed(1);
}

// The tables and the method note scripts/bench.sh train prints: per engine, the wasm module's
// memory as it goes, each ratio's median and spread over the rounds.
export function printReport(results, spreads, options) {
  const header = ['workload', 'engine', 'examples/s', 'x native', 'x best TF.js', 'peak RSS',
    'wasm memory', 'trained+opt+data', 'params+data', 'densified', 'mean loss'];
  const rows = results.map((r) => [
    r.workload, r.engine, rateText(r.examples_per_second), r.vs_native.toFixed(3),
    r.vs_tfjs_best.toFixed(1), bytesText(r.peak_rss_bytes), bytesText(r.wasm_memory_bytes),
    bytesText(r.trained_bytes), bytesText(r.parameter_bytes + r.data_bytes), bytesText(r.densified_bytes),
    r.mean_loss.toPrecision(6),
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((row) => row[i].length)));
  const line = (cells) => cells.map((c, i) => (i < 2 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join('  ');
  console.log(line(header));
  for (const row of rows) console.log(line(row));
  console.log('');
  console.log('wasm SIMD linear memory as the engine goes (it only grows; Emscripten start 1 MB incl. 512 kB stack):');
  for (const r of results.filter((x) => x.engine === 'wasm_simd')) {
    const m = r.wasm_memory_breakdown;
    console.log(`  ${r.workload}: start ${bytesText(m.at_start)}, dataset built ${bytesText(m.after_dataset)}, ` +
      `session set up ${bytesText(m.after_session_setup)}, trained ${bytesText(m.after_training)}, ` +
      `result written ${bytesText(m.after_result)}; trained+opt+data ${bytesText(r.trained_bytes)} ` +
      `(data ${bytesText(r.data_bytes)}, ${r.distinct_ids} rows touched)`);
  }
  console.log('');
  console.log(`${'ratio (median of per-round ratios)'.padEnd(44)} ${'median'.padStart(8)}  ${'min–max'.padEnd(15)}  ` +
    `${'IQR'.padEnd(15)}  rounds`);
  const digits = (v) => (v.median >= 10 ? 1 : 3);
  for (const [k, v] of Object.entries(spreads)) {
    const d = digits(v);
    console.log(`${k.padEnd(44)} ${v.median.toFixed(d).padStart(8)}  ${`${v.min.toFixed(d)}–${v.max.toFixed(d)}`.padEnd(15)}  ` +
      `${`${v.q1.toFixed(d)}–${v.q3.toFixed(d)}`.padEnd(15)}  ${v.rounds.length}`);
  }
  console.log(`
Method: each of ${options.rounds} rounds starts a fresh process per engine (each round starting with the next engine), warms each
up (${options.warmup} run(s) of ${options.warmupSeconds} s), then times the engines in turn in ${options.slices} slices of ${options.minSeconds / options.slices} s (A B A B ..., order rotating),
so compared runs are a fraction of a second apart and each round draws its processes anew; a ratio is computed per round from
that round's runs (the sums of their slices) and reported as the median over rounds with its min–max and interquartile range; "x native" / "x best TF.js" are such medians, examples/s the median of an
engine's rounds, by the engine process's CPU time (wall time of each run in the JSON). TF.js runs in only
${options.tfjsRounds} of the ${options.rounds} rounds (spread evenly): its ratios (x best TF.js) are the median of those rounds, a rough figure.
Timed: the per-batch training loop (fedleaf: TrainingSession steps of whole runs, repeated to ${options.minSeconds} s of CPU,
${options.stepsPerCall} batches per wasm call; reference_loop: the same SGD logistic regression in ~30 lines of plain C++, train_bench.cc; TF.js:
optimizer.minimize per batch incl. building the batch tensors). Not timed: model decode / update encode, dataset
construction. TF.js is time-boxed (~${options.tfjsSeconds} s of consecutive batches per run) and its examples/s extrapolated;
its wasm backend (SIMD, single thread) has no UnsortedSegmentSum kernel (gradient of tf.gather) and the cpu
backend's is O(vocab x ids) per batch, so the benchmark registers one plain JS kernel for both backends (said
again in each result's "note"). TF.js's optimizers update the whole embedding table every batch (dense gradients
of tf.gather), as its users get. Same model and data in every engine: fedleaf's initial model (seed 1) and
fedleaf's hashed ids. Mean loss: fedleaf engines over the whole run (their trained updates are checked byte-equal
across builds); TF.js over the batches of its runs (median). peak RSS is per engine process (Node's own ~40-50 MB
included for wasm/TF.js); "wasm memory" is the fedleaf module's linear memory (its high-water mark: the model
stays in JS, as a leaf's download does); "trained+opt+data" = the embedding rows the data touch and the dense
parameters, the optimizer's state for them and the CSR data, x 4 B (ratio params_data_over_wasm_memory = that /
wasm SIMD's memory, target >= 0.67); "params+data" counts the whole model; "densified" = examples x features
x 4 B (dense inputs) + parameters x 4 B (dense gradients).`);
}
