// Where the train bench finds the package under test and the repository's npm tools.
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));

const root = path.resolve(here, '../../..');

export const bindings = path.join(root, 'js_bindings');

// npm packages (TF.js) are the repository's tools (package.json at the root, node_modules/).
const requireFromRoot = createRequire(path.join(root, 'package.json'));

export const importPackage = (name) => import(pathToFileURL(requireFromRoot.resolve(name)).href);
