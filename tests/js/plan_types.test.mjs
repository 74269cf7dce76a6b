// js_bindings/index.d.ts describes the plan the C++ parsers read, and the facts of a parsed plan
// the wasm module gives (the second test): for every object of a plan, the
// fields the d.ts declares are the fields the parser accepts, and every field naming one of a set
// takes the same names. The C++ side comes from the wasm module's planSchema() (core/train/
// plan_schema.h: the very constants the parsers check against); the d.ts side from the TypeScript
// compiler, which checks a file generated here: one line per path and direction, so an error
// names the path and the names the other side lacks. A field added to a parser without its type
// (or the reverse) fails here.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { loadModule } from '../../js_bindings/src/engine/load_module.js';
import { createExecutor } from '../../js_bindings/src/index.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

// Type operators over the d.ts, distributed over union members (a plan object with several forms
// is a union in the d.ts).
const PRELUDE = `
type Prim = string | number | boolean | bigint | symbol | null | undefined;
type Prop<T, K extends string> = T extends Prim ? never : K extends keyof T ? NonNullable<T[K]> : never;
type Elem<T> = T extends Prim ? never : T extends readonly (infer E)[] ? NonNullable<E>
  : string extends keyof T ? NonNullable<T[string & keyof T]> : never;
type Where<T, K extends string, V> = T extends Prim ? never : K extends keyof T ? (V extends T[K] ? T : never) : never;
type Having<T, K extends string> = T extends Prim ? never : K extends keyof T ? T : never;
type Fields<T> = T extends Prim ? never : Extract<keyof T, string>;
type Names<T> = T extends string ? T : never;
declare function none<T extends never>(): void;
`;

const literal = (s) => JSON.stringify(s);
const union = (names) => names.map(literal).join(' | ');

// A schema path ("plan.model.layers.*[type=dense].activation") as a type over the d.ts's Plan.
function typeAt(schemaPath) {
  const segments = schemaPath.split('.');
  assert.equal(segments.shift(), 'plan', schemaPath);
  let type = 'Plan';
  for (const segment of segments) {
    const [, name, selector] = /^([^[]+)(?:\[(.+)\])?$/.exec(segment);
    type = name === '*' ? `Elem<${type}>` : `Prop<${type}, ${literal(name)}>`;
    if (selector === undefined) continue;
    const eq = selector.indexOf('=');
    type = eq < 0 ? `Having<${type}, ${literal(selector)}>`
      : `Where<${type}, ${literal(selector.slice(0, eq))}, ${literal(selector.slice(eq + 1))}>`;
  }
  return type;
}

test('index.d.ts declares the fields and names the C++ plan parsers accept, path by path', async () => {
  const { module } = await loadModule();
  const schema = JSON.parse(module.planSchema());
  const objects = Object.entries(schema.objects);
  const choices = Object.entries(schema.choices);
  assert.ok(objects.length >= 25 && choices.length >= 15, `schema: ${objects.length} objects, ${choices.length} choices`);

  const lines = [`import type { Plan } from ${literal(path.join(root, 'js_bindings/index'))};`,
    ...PRELUDE.trim().split('\n')];
  const what = new Map();  // line number -> what a type error there means
  const check = (kind, schemaPath, names, operator) => {
    const dts = `${operator}<${typeAt(schemaPath)}>`;
    lines.push(`none<Exclude<${union(names)}, ${dts}>>();`);
    what.set(lines.length, `${schemaPath}: ${kind} the C++ accepts that index.d.ts lacks`);
    lines.push(`none<Exclude<${dts}, ${union(names)}>>();`);
    what.set(lines.length, `${schemaPath}: ${kind} index.d.ts declares that the C++ refuses`);
  };
  for (const [schemaPath, fields] of objects) check('fields', schemaPath, fields, 'Fields');
  for (const [schemaPath, names] of choices) check('names', schemaPath, names, 'Names');

  const problems = typeErrors(lines, what);
  assert.deepEqual(problems, [], problems.join('\n'));
});

// Runs tsc over `lines` (a generated plan_types.ts); the meaning (`what`) of each line with an error.
function typeErrors(lines, what) {
  const dir = mkdtempSync(path.join(tmpdir(), 'fedleaf-plan-types-'));
  try {
    writeFileSync(path.join(dir, 'plan_types.ts'), `${lines.join('\n')}\n`);
    writeFileSync(path.join(dir, 'tsconfig.json'), JSON.stringify({
      compilerOptions: { strict: true, noEmit: true, target: 'ES2022', module: 'ESNext',
        moduleResolution: 'Bundler', lib: ['ES2022', 'DOM'], types: [] },
      files: ['plan_types.ts'],
    }));
    const tsc = spawnSync(path.join(root, 'node_modules/.bin/tsc'), ['-p', dir, '--pretty', 'false'],
      { encoding: 'utf8' });
    assert.equal(tsc.error, undefined, `tsc did not run: ${tsc.error?.message}`);
    const output = `${tsc.stdout}${tsc.stderr}`;
    const problems = [];
    for (const [, line, message] of output.matchAll(/plan_types\.ts\((\d+),\d+\): error TS\d+: (.*)/g)) {
      const meaning = what.get(Number(line));
      assert.ok(meaning, `tsc: an error outside the checks (line ${line}): ${message}`);
      problems.push(`${meaning}: ${/Type '(.*)' does not satisfy/.exec(message)?.[1] ?? message}`);
    }
    if (problems.length === 0) assert.equal(tsc.status, 0, output);
    return problems;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

// The facts of a parsed plan cross from C++ (wasm/bind_plan.cc) as plain objects: the fields the
// d.ts declares for PlanTable and SelectTable are the fields the binding sets, and each padding
// form's.
test('index.d.ts declares the fields of the plan facts the wasm module gives (PlanTable, SelectTable)', async () => {
  const executor = await createExecutor();
  const plan = {
    model: { inputs: { t: 'sparse_ids' }, layers: [{ type: 'embedding_bag', name: 'e', vocab: 9, dim: 1 }],
      loss: 'sigmoid_cross_entropy' },
    train: { optimizer: { type: 'sgd', learning_rate: 0.1 } },
    updates: { 'e/weight': { encoding: 'row_sparse', aggregator: 'sum', select_padding: { multiple: 4 } } },
  };
  const data = executor.datasetFromCsr({ offsets: [0, 1], ids: [3], labels: [1] });
  const parsed = executor.loadPlan(plan);
  const objects = { PlanTable: parsed.tables[0], SelectTable: parsed.selectRequest(data)[0] };
  parsed.delete();
  data.delete();
  const lines = [`import type { PlanTable, SelectTable } from ${literal(path.join(root, 'js_bindings/index'))};`,
    ...PRELUDE.trim().split('\n')];
  const what = new Map();
  for (const [type, object] of Object.entries(objects)) {
    const keys = union(Object.keys(object));
    lines.push(`none<Exclude<${keys}, keyof ${type}>>();`);
    what.set(lines.length, `${type}: fields the binding sets that index.d.ts lacks`);
    lines.push(`none<Exclude<keyof ${type}, ${keys}>>();`);
    what.set(lines.length, `${type}: fields index.d.ts declares that the binding does not set`);
    lines.push(`none<Exclude<${union(Object.keys(object.padding))}, Fields<${type}['padding']>>>();`);
    what.set(lines.length, `${type}.padding: fields the binding sets that index.d.ts lacks`);
  }
  const problems = typeErrors(lines, what);
  assert.deepEqual(problems, [], problems.join('\n'));
});
