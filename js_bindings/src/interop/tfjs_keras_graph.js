// The topology of a Keras / TF.js Layers model as a graph of layer applications ("nodes"): a
// Sequential model is a chain from its one input; a functional one (class Model or Functional)
// lists its layers with their inbound nodes, in either of the two shapes model.json files have:
//
//   Keras 2 and TF.js:  "inbound_nodes": [[["emb", 1, 0, {}]], ...]
//                       one entry per application: a list of [layer, node index, tensor index, kwargs]
//   Keras 3:            "inbound_nodes": [{"args": [{"class_name": "__keras_tensor__",
//                         "config": {"keras_history": ["emb", 1, 0], ...}}], "kwargs": {}}, ...]
//                       (a layer of several inputs, e.g. Concatenate, has them as a list in args)
//
// and input_layers / output_layers as [[name, node, tensor], ...] (Keras 3 writes a single one
// without the outer list). A layer applied twice (a shared Embedding) has two nodes.
//
//   const graph = kerasGraph(modelConfig, { fail, unsupported });
//   graph.order        // node keys reachable from the output, each after the nodes it takes
//   graph.nodes.get(key)  // {key, layer, index, inbound: [key], consumers: [key]}

/** The key of application `index` of the layer called `name`. */
export function nodeKey(name, index) {
  return JSON.stringify([name, index]);
}

function layerLabel(layer) {
  return `${layer.class_name} '${layer.config?.name ?? layer.name ?? '?'}'`;
}

// The [layer, node, tensor] references of one inbound node in either shape.
function references(node) {
  if (Array.isArray(node)) return node.map((entry) => entry.slice(0, 3));
  const found = [];
  const visit = (value) => {
    if (Array.isArray(value)) {
      value.forEach(visit);
    } else if (value && typeof value === 'object') {
      const history = value.config?.keras_history;
      if (history) found.push(history.slice(0, 3));
      else if (value.class_name !== '__keras_tensor__') Object.values(value).forEach(visit);
    }
  };
  // The tensors a layer computes on are its args; kwargs hold flags and masks (Keras 3 passes a
  // mask as a keras tensor of the same node), read only when the args name none.
  visit(node?.args ?? []);
  if (found.length === 0) visit(node?.kwargs ?? {});
  return found;
}

// input_layers / output_layers: a list of [name, node, tensor], or one such triple (Keras 3).
function endpoints(list) {
  if (!Array.isArray(list)) return [];
  return typeof list[0] === 'string' ? [list] : list;
}

function sequentialGraph(layers, { unsupported }) {
  const nodes = new Map();
  let previous = null;
  layers.forEach((layer, i) => {
    if (layer.class_name === 'InputLayer' && i !== 0) {
      unsupported(`${layerLabel(layer)}: an InputLayer must come first`);
    }
    const key = nodeKey(layer.config?.name ?? `#${i}`, 0);
    nodes.set(key, { key, layer, index: 0, inbound: previous ? [previous] : [], consumers: [] });
    previous = key;
  });
  let input = nodeKey(layers[0].config?.name, 0);
  if (layers[0].class_name !== 'InputLayer') {
    // Sequential models of TF.js have no InputLayer: the first layer's batch_input_shape is the input.
    const c = layers[0].config ?? {};
    const shape = c.batch_input_shape ?? c.batch_shape ?? (c.input_length != null ? [null, c.input_length] : undefined);
    const layer = { class_name: 'InputLayer', config: { name: null, batch_input_shape: shape }, synthetic: true };
    input = nodeKey(null, 0);
    nodes.set(input, { key: input, layer, index: 0, inbound: [], consumers: [] });
    nodes.get(nodeKey(layers[0].config?.name ?? '#0', 0)).inbound = [input];
  }
  return { nodes, inputs: [input], output: previous };
}

function functionalGraph(config, { fail, unsupported }) {
  const byName = new Map(config.layers.map((layer) => [layer.config?.name ?? layer.name, layer]));
  const nodes = new Map();
  for (const layer of config.layers) {
    const name = layer.config?.name ?? layer.name;
    if (layer.class_name === 'InputLayer') {
      const key = nodeKey(name, 0);
      nodes.set(key, { key, layer, index: 0, inbound: [], consumers: [] });
      continue;
    }
    (layer.inbound_nodes ?? []).forEach((node, index) => {
      const inbound = references(node).map(([from, fromNode, tensor]) => {
        if (!byName.has(from)) fail(`${layerLabel(layer)}: takes an unknown layer '${from}'`);
        if (tensor !== 0) {
          unsupported(`${layerLabel(layer)}: takes output ${tensor} of ${layerLabel(byName.get(from))} (only layers of one output)`);
        }
        return nodeKey(from, fromNode);
      });
      const key = nodeKey(name, index);
      nodes.set(key, { key, layer, index, inbound, consumers: [] });
    });
  }
  const check = (list, what) => endpoints(list).map(([name, index, tensor]) => {
    const key = nodeKey(name, index);
    if (!nodes.has(key) || tensor !== 0) fail(`${what} names '${name}' (node ${index}, tensor ${tensor}), which the layers do not have`);
    return key;
  });
  const inputs = check(config.input_layers, 'input_layers');
  const outputs = check(config.output_layers, 'output_layers');
  if (outputs.length !== 1) {
    const named = outputs.map((key) => layerLabel(nodes.get(key).layer)).join(', ');
    unsupported(`a model with ${outputs.length} outputs (${named}) is not supported (one output)`);
  }
  for (const key of inputs) {
    if (nodes.get(key).layer.class_name !== 'InputLayer') fail(`input_layers: '${JSON.parse(key)[0]}' is not an InputLayer`);
  }
  return { nodes, inputs, output: outputs[0] };
}

/**
 * The graph of `model` ({class_name, config}: the model_config of a model.json).
 * @param {{fail: (message: string) => never, unsupported: (message: string) => never}} errors
 * @returns {{nodes: Map<string, object>, inputs: string[], output: string, order: string[], sequential: boolean}}
 */
export function kerasGraph(model, errors) {
  const className = model?.class_name;
  const layers = Array.isArray(model?.config) ? model.config : model?.config?.layers;
  if (!Array.isArray(layers) || layers.length === 0) errors.fail(`model ${className}: no layers`);
  const sequential = className === 'Sequential';
  if (!sequential && className !== 'Model' && className !== 'Functional') {
    errors.fail(`model class ${className} is not supported (Sequential, Model, Functional)`);
  }
  const graph = sequential ? sequentialGraph(layers, errors) : functionalGraph(model.config, errors);
  for (const node of graph.nodes.values()) {
    for (const from of node.inbound) {
      const source = graph.nodes.get(from);
      if (!source) errors.fail(`${layerLabel(node.layer)}: takes node ${JSON.parse(from)[1]} of '${JSON.parse(from)[0]}', which does not exist`);
      source.consumers.push(node.key);
    }
  }
  // Depth-first from the output: each node after the nodes it takes, inputs in the order given.
  const order = [];
  const state = new Map();  // key → 'visiting' | 'done'
  const visit = (key) => {
    if (state.get(key) === 'done') return;
    if (state.get(key) === 'visiting') errors.fail(`${layerLabel(graph.nodes.get(key).layer)}: the layers form a cycle`);
    state.set(key, 'visiting');
    graph.nodes.get(key).inbound.forEach(visit);
    state.set(key, 'done');
    order.push(key);
  };
  visit(graph.output);
  return { ...graph, order, sequential };
}
