// A plan kept as JSON (a .json file, a fetched body) checked by the C++ parser every leaf and the
// server run, so that what passes is a Plan in fact and not only in name: TypeScript types a
// parsed .json file's strings as string, never as the names a Plan's fields take.
//
//   import plan from './plan.json' with { type: 'json' };
//   const checked = parsePlan(executor, plan);   // Plan, or an Error naming the field and rule

/**
 * @param {{validatePlan: (plan: object | string) => void}} executor  from createExecutor()
 * @param {unknown} json  a plan object (JSON.parse's result) or its JSON text
 * @returns {object} the plan object (parsed from the text when given text)
 */
export function parsePlan(executor, json) {
  if (typeof json === 'string') {
    // The text itself goes to the parser: JSON.parse would hide a key given twice.
    executor.validatePlan(json);
    return JSON.parse(json);
  }
  if (json === null || typeof json !== 'object' || Array.isArray(json)) {
    const got = json === null ? 'null' : Array.isArray(json) ? 'an array' : typeof json;
    throw new TypeError(`parsePlan: a plan is a JSON object or its JSON text, got ${got}`);
  }
  executor.validatePlan(json);
  return json;
}
