// The module's bindings (wasm/bind_*.cc, wasm/dataset_handle.h) report a C++ error by returning
// normally and leaving it for Module.takeError(): a JS throw from inside a call would skip the C++
// frames below it, so each failed call leaked its string arguments, the handles of its buffer
// arguments (a model's bytes) and its C++ locals (wasm/js_interop.h). Here every binding is
// wrapped to take the error after the call and throw it: an Error with the core's message and a
// `code` ('InvalidInput', 'NotFound', 'Conflict', 'Error', 'InternalError').
//
// tests/js/bindings.test.mjs checks this list against the C++ registrations: a binding left out
// would return undefined on failure instead of throwing.

export const BINDINGS = {
  functions: ['version', 'encodeSafetensors', 'decodeSafetensors', 'coalesce', 'predict', 'execute', 'evaluate',
    'initializeModel', 'validatePlan', 'applyUpdate', 'featurizeRecords', 'planPrivacy', 'planSchema'],
  classes: {
    Plan: {
      statics: ['parse'],
      methods: ['kind', 'tables', 'tableRows', 'selectRequest', 'featurizeRecords', 'datasetFromRecords'],
    },
    Dataset: {
      statics: ['fromTexts', 'fromRecords', 'fromSvmlight', 'fromDense', 'fromCsr', 'fromInputs', 'fromInputsWithTargets'],
      methods: ['subset', 'size', 'numFeatures', 'numNonzeros', 'numDistinctIds', 'distinctIds', 'distinctIdsFor',
        'numInputs', 'isSparse', 'labels'],
    },
    TrainingSession: {
      statics: ['create'],
      methods: ['step', 'completedSteps', 'totalSteps', 'meanLoss', 'accuracy', 'result'],
    },
    RoundAggregator: {
      statics: ['create', 'restore'],
      methods: ['addResult', 'merge', 'numReports', 'totalWeight', 'nextModel', 'checkpoint'],
    },
  },
};

/** Wraps every binding of `module` (in place) so that a C++ error is thrown in JS. */
export function throwBindingErrors(module) {
  const takeError = module.takeError;
  const wrap = (owner, name, where) => {
    const binding = owner[name];
    if (typeof binding !== 'function') throw new Error(`wasm module: no binding ${where}`);
    owner[name] = function (...args) {
      const result = binding.apply(this, args);
      const failure = takeError();
      if (failure !== undefined) {
        const error = new Error(failure.message);
        error.code = failure.code;
        throw error;
      }
      return result;
    };
  };
  for (const name of BINDINGS.functions) wrap(module, name, name);
  for (const [className, { statics, methods }] of Object.entries(BINDINGS.classes)) {
    const cls = module[className];
    for (const name of statics) wrap(cls, name, `${className}.${name}`);
    for (const name of methods) wrap(cls.prototype, name, `${className}.prototype.${name}`);
  }
  return module;
}
