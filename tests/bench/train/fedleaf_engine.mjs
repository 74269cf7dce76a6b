// The train bench's fedleaf wasm engine (SIMD or baseline) in a child process: TrainingSession
// runs over a workload file (serveChild in train_bench.mjs drives it).
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { bindings } from './bench_paths.mjs';
import { cpuSecondsSince, fnv1a, peakRss } from './bench_stats.mjs';
import { asUint32, modelFileOf, readWorkload } from './workload_file.mjs';

async function fedleafModule(simd) {
  const { loadModule } = await import(path.join(bindings, 'src/engine/load_module.js'));
  const { module } = await loadModule({ simd });
  return { module };
}

export async function fedleafWasmEngine(simd, file, stepsPerCall) {
  const { module } = await fedleafModule(simd);
  const wasmMemory = () => module.HEAP8.buffer.byteLength;
  // Linear memory as the engine goes (it only grows): the breakdown of "wasm memory".
  const memory = { at_start: wasmMemory() };
  const data = readWorkload(file);
  const plan = JSON.parse(data.plan);
  const dataset = data.inputs
    ? module.Dataset.fromInputs(data.inputList.map(({ name }) => ({ name, ...asUint32(data.inputs[name]) })), data.labels)
    : module.Dataset.fromCsr(new Uint32Array(data.offsets.buffer), new Uint32Array(data.ids.buffer),
      data.weights, data.labels, data.numFeatures);
  memory.after_dataset = wasmMemory();
  // The model is read from the driver's file, as a leaf holds its download: in JS, outside the
  // module's linear memory, which then holds only what training needs (its "wasm memory" column).
  const model = new Uint8Array(readFileSync(modelFileOf(file)));
  const examples = data.labels.length * plan.train.epochs;
  return {
    run(minSeconds) {
      let seconds = 0;
      let wall = 0;
      let runs = 0;
      let setup = 0;
      let loss = 0;
      do {
        const t0 = performance.now();
        // A leaf parses each task's plan once (a module.Plan) and creates its session from it.
        const parsed = module.Plan.parse(data.plan, false);
        const session = module.TrainingSession.create(parsed, model, dataset);
        memory.after_session_setup ??= wasmMemory();
        const t1 = performance.now();
        const cpu = process.cpuUsage();
        while (session.step(stepsPerCall)) { /* one wasm call per stepsPerCall batches */ }
        seconds += cpuSecondsSince(cpu);
        wall += (performance.now() - t1) / 1000;
        memory.after_training ??= wasmMemory();
        setup = (t1 - t0) / 1000;
        loss = session.meanLoss();
        session.delete();
        parsed.delete();
        runs++;
      } while (seconds < minSeconds);
      return {
        seconds, wall_seconds: wall, runs, examples_per_second: (examples * runs) / seconds,
        setup_seconds: setup, mean_loss: loss,
      };
    },
    digest() {
      const parsed = module.Plan.parse(data.plan, false);
      const session = module.TrainingSession.create(parsed, model, dataset);
      while (session.step(stepsPerCall)) { /* to the end */ }
      const result = { result_digest: fnv1a(session.result('')), mean_loss: session.meanLoss() };
      memory.after_result ??= wasmMemory();
      session.delete();
      parsed.delete();
      return result;
    },
    stats: () => ({
      engine: simd ? 'wasm_simd' : 'wasm_baseline',
      peak_rss_bytes: peakRss(),
      wasm_memory_bytes: wasmMemory(),
      wasm_memory_breakdown: memory,
      steps_per_call: stepsPerCall,
    }),
  };
}
