// Poisoning leaves, for robustness tests and benchmarks (simulateLeaves({attacks}),
// scripts/bench.sh poison): a leaf that follows the protocol to the letter and sends what an
// attacker with a client token would. The server must survive all of them.
//
//   const attack = parseAttack('scale:1e6');            // {kind: 'scale', value: 1e6}
//   const executor = attackingExecutor(honestExecutor, attack);
//   const labels = attackedLabels(honestLabels, attack);
//
// Kinds:
//   scale:F           every value of every tensor of its train update multiplied by F
//   claim_examples:N  its train update claims N examples (metadata num_examples), e.g. 2^53
//   flip_labels       trains on its own data with every label flipped (y → 1 − y, two classes)

const KINDS = new Set(['scale', 'claim_examples', 'flip_labels']);

/** 'scale:1e6' | 'claim_examples:9007199254740992' | 'flip_labels' → {kind, value}. */
export function parseAttack(text) {
  const [kind, valueText] = String(text).split(':');
  if (!KINDS.has(kind)) {
    throw new RangeError(`attack '${text}': kind must be one of ${[...KINDS].join(', ')}`);
  }
  if (kind === 'flip_labels') {
    if (valueText !== undefined) throw new RangeError(`attack '${text}': flip_labels takes no value`);
    return { kind, value: null };
  }
  const value = Number(valueText);
  if (valueText === undefined || !Number.isFinite(value) || value <= 0) {
    throw new RangeError(`attack '${text}': ${kind} needs a finite value > 0, e.g. ${kind}:1e6`);
  }
  if (kind === 'claim_examples' && !Number.isInteger(value)) {
    throw new RangeError(`attack '${text}': claim_examples needs an integer`);
  }
  return { kind, value };
}

/** The labels the leaf trains on: flipped for flip_labels, unchanged otherwise. */
export function attackedLabels(labels, attack) {
  if (attack?.kind !== 'flip_labels') return labels;
  return Array.from(labels, (y) => 1 - y);
}

function scaled(tensor, factor) {
  const values = tensor.encoding ? tensor.values : tensor.data;
  if (values instanceof Float32Array || values instanceof Float64Array) {
    for (let i = 0; i < values.length; i++) values[i] *= factor;
  }
  return tensor;
}

/**
 * An executor whose train results carry the attack; evaluate results stay honest (they do not
 * change models). Everything else is the honest executor's.
 */
export function attackingExecutor(executor, attack) {
  if (!attack || attack.kind === 'flip_labels') return executor;
  return new Proxy(executor, {
    get(target, property, receiver) {
      if (property !== 'runTask') return Reflect.get(target, property, receiver);
      return async (task, modelBytes, source, options) => {
        const result = await target.runTask(task, modelBytes, source, options);
        if ((task.kind ?? 'train') !== 'train') return result;
        const { tensors, metadata } = target.decodeSafetensors(result.bytes);
        if (attack.kind === 'scale') {
          for (const name of Object.keys(tensors)) scaled(tensors[name], attack.value);
        } else {
          metadata.num_examples = String(BigInt(attack.value));
        }
        return { ...result, bytes: target.encodeSafetensors(tensors, metadata) };
      };
    },
  });
}
