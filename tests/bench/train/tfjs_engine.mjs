// The train bench's TensorFlow.js engine (wasm or cpu backend) in a child process, written as a
// TF.js user would (serveChild in train_bench.mjs drives it).
import { readFileSync } from 'node:fs';
import { tfjsGraphModel } from './wide_deep_workload.mjs';
import { importPackage } from './bench_paths.mjs';
import { cpuSecondsSince, peakRss } from './bench_stats.mjs';
import { modelFileOf, readSafetensors, readWorkload } from './workload_file.mjs';

// UnsortedSegmentSum is the gradient of tf.gather (and the bag's segment sum). TF.js as shipped
// cannot use it here: the wasm backend has no such kernel, and the cpu backend's runs one mask
// over all ids per segment (O(vocab x ids) time and memory per batch: 8 GB and minutes for
// workload a). The benchmark registers this plain JS kernel for both backends and says so.
function registerUnsortedSegmentSum(tf, backendName) {
  if (tf.getKernel('UnsortedSegmentSum', backendName)) {
    tf.unregisterKernel('UnsortedSegmentSum', backendName);
  }
  tf.registerKernel({
    kernelName: 'UnsortedSegmentSum',
    backendName,
    kernelFunc: ({ inputs, backend, attrs }) => {
      const { x, segmentIds } = inputs;
      const { numSegments } = attrs;
      const rowSize = x.shape.slice(1).reduce((p, d) => p * d, 1);
      const shape = [numSegments, ...x.shape.slice(1)];
      const values = backend.readSync(x.dataId);
      const segments = backend.readSync(segmentIds.dataId);
      let out;
      let target;
      if (backendName === 'wasm') {
        out = backend.makeOutput(shape, x.dtype);
        target = backend.typedArrayFromHeap(out);
        target.fill(0);
      } else {
        target = new Float32Array(numSegments * rowSize);
      }
      for (let i = 0; i < segments.length; i++) {
        const s = segments[i];
        if (s < 0 || s >= numSegments) continue;
        for (let k = 0; k < rowSize; k++) target[s * rowSize + k] += values[i * rowSize + k];
      }
      return backendName === 'wasm' ? out : backend.makeTensorInfo(shape, x.dtype, target);
    },
  });
}

export async function tfjsEngine(backendName, file, seconds) {
  const tf = await importPackage('@tensorflow/tfjs');
  if (backendName === 'wasm') await importPackage('@tensorflow/tfjs-backend-wasm');
  await tf.setBackend(backendName);
  await tf.ready();
  registerUnsortedSegmentSum(tf, backendName);
  const data = readWorkload(file);
  const plan = JSON.parse(data.plan);
  // The model file the driver wrote (initialize_model(plan, 1)), as every engine starts from.
  const initial = readSafetensors(new Uint8Array(readFileSync(modelFileOf(file)))).tensors;
  // A chain workload (a-c): one bag layer and an optional dense output, in TF.js ops.
  function chainModel() {
    const [embSpec, denseSpec] = plan.model.layers;
    const variable = (name) => tf.variable(tf.tensor(initial[name].data, initial[name].shape));
    const table = variable(`${embSpec.name}/weight`);
    const outW = denseSpec ? variable(`${denseSpec.name}/weight`) : null;
    const outB = denseSpec ? variable(`${denseSpec.name}/bias`) : null;
    const o = plan.train.optimizer;
    const optimizer = o.type === 'adam'
      ? tf.train.adam(o.learning_rate, o.beta1 ?? 0.9, o.beta2 ?? 0.999, o.epsilon ?? 1e-7)
      : tf.train.sgd(o.learning_rate);
    const sigmoid = plan.model.loss === 'sigmoid_cross_entropy';
    const classes = denseSpec ? denseSpec.units : 1;

    // One batch as a TF.js user would feed a bag of ids: flat ids, their example (segment) ids
    // and a per-id factor folding in the weight and the combiner (sum, mean, sqrtn).
    function batchTensors(start) {
      const count = Math.min(batchSize, n - start);
      const begin = data.offsets[start];
      const end = data.offsets[start + count];
      const segment = new Int32Array(end - begin);
      const factor = new Float32Array(end - begin);
      for (let b = 0; b < count; b++) {
        const lo = data.offsets[start + b];
        const hi = data.offsets[start + b + 1];
        let abs = 0;
        let sq = 0;
        for (let j = lo; j < hi; j++) {
          const w = data.weights.length ? data.weights[j] : 1;
          abs += Math.abs(w);
          sq += w * w;
        }
        let c = 1;
        if (embSpec.combiner === 'mean') c = abs > 0 ? 1 / abs : 0;
        if (embSpec.combiner === 'sqrtn') c = sq > 0 ? 1 / Math.sqrt(sq) : 0;
        for (let j = lo; j < hi; j++) {
          segment[j - begin] = b;
          factor[j - begin] = (data.weights.length ? data.weights[j] : 1) * c;
        }
      }
      const labels = data.labels.subarray(start, start + count);
      return {
        count,
        ids: tf.tensor1d(data.ids.subarray(begin, end), 'int32'),
        segment: tf.tensor1d(segment, 'int32'),
        factor: tf.tensor2d(factor, [end - begin, 1]),
        labels: sigmoid
          ? tf.tensor2d(Float32Array.from(labels), [count, 1])
          : tf.tidy(() => tf.oneHot(tf.tensor1d(labels, 'int32'), classes)),
      };
    }

    function trainBatch(start) {
      const t = batchTensors(start);
      const loss = optimizer.minimize(() => {
        const bag = tf.unsortedSegmentSum(tf.gather(table, t.ids).mul(t.factor), t.segment, t.count);
        const logits = outW ? bag.matMul(outW).add(outB) : bag;
        return sigmoid
          ? tf.losses.sigmoidCrossEntropy(t.labels, logits)
          : tf.losses.softmaxCrossEntropy(t.labels, logits);
      }, true);
      const value = loss.dataSync()[0];
      tf.dispose([loss, t.ids, t.segment, t.factor, t.labels]);
      return { count: t.count, loss: value };
    }

    return trainBatch;
  }

  const batchSize = plan.train.batch_size;
  const n = data.labels.length;
  let trainBatch;
  if (data.inputs) {
    const graph = tfjsGraphModel(tf, plan, initial);
    trainBatch = (start) => graph.trainBatch(data.inputs, data.labels, start, Math.min(batchSize, n - start));
  } else {
    trainBatch = chainModel();
  }

  let next = 0;
  const nextStart = () => {
    const s = next;
    next = next + batchSize >= n ? 0 : next + batchSize;
    return s;
  };
  for (let i = 0; i < 3; i++) trainBatch(nextStart()); // first batches build the graph
  return {
    run() {
      let examples = 0;
      let count = 0;
      let lossSum = 0;
      const t0 = performance.now();
      const cpu = process.cpuUsage();
      while (count < 2 || performance.now() - t0 < seconds * 1000) {
        const r = trainBatch(nextStart());
        examples += r.count;
        lossSum += r.loss;
        count++;
      }
      const used = cpuSecondsSince(cpu);
      return {
        seconds: used, wall_seconds: (performance.now() - t0) / 1000, examples_per_second: examples / used,
        batches: count, mean_batch_loss: lossSum / count,
      };
    },
    stats: () => ({
      engine: `tfjs_${backendName}`,
      peak_rss_bytes: peakRss(),
      tensors_in_memory: tf.memory().numTensors,
      note: 'time-boxed and extrapolated; JS UnsortedSegmentSum kernel registered by the benchmark ' +
        (backendName === 'wasm' ? '(missing in tfjs-backend-wasm)' : '(the shipped one is O(vocab x ids))'),
    }),
  };
}
