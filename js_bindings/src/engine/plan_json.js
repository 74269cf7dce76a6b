// A plan as the JSON text the wasm module parses: an object is stringified, text passes as is
// (JSON.parse would hide a key given twice, which the C++ parser refuses).

/** @param {object | string} plan */
export function planJson(plan) {
  if (typeof plan === 'string') return plan;
  if (plan === null || typeof plan !== 'object') throw new TypeError('plan must be an object or JSON text');
  return JSON.stringify(plan);
}
