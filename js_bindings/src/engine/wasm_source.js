// Fetches (in Node: reads) one .wasm file once, checks that it is one, and compiles it.
//
// What goes wrong in practice is the server, not the file: a 404, a dev server answering every
// unknown path with its index.html (Vite's pre-bundled deps), a copy step that never ran. Each
// throws a WasmLoadError naming the URL, what was found instead, and the README section on
// serving the .wasm files, instead of the engine's CompileError about a magic word.

const MAGIC = [0x00, 0x61, 0x73, 0x6d];
const HELP = 'see "Serving the .wasm files" in the fedleaf package\'s README.md';

// Not resolved by bundlers: only Node reads files.
const NODE_FS = 'node:fs/promises';

/** A .wasm that could not be loaded: `url` is where it was looked for. */
export class WasmLoadError extends Error {
  constructor(url, problem, cause) {
    super(`fedleaf: cannot load ${url}: ${problem}; ${HELP}`, cause === undefined ? undefined : { cause });
    this.name = 'WasmLoadError';
    this.url = String(url);
  }
}

const hex = (bytes) => Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join(' ');

// Throws unless `bytes` starts with the wasm magic word; `type` is the Content-Type served, if any.
function checkMagic(url, bytes, type) {
  if (MAGIC.every((b, i) => bytes[i] === b)) return;
  const served = type ? `${type}, ` : '';
  const head = bytes.length ? `starting ${hex(bytes.subarray(0, 4))}` : 'empty';
  const text = new TextDecoder().decode(bytes.subarray(0, 15)).replace(/\s+/g, ' ').trim();
  throw new WasmLoadError(url, `it is not WebAssembly (${served}${bytes.length} bytes ${head}` +
    `${/^[\x20-\x7e]+$/.test(text) ? `: "${text}"` : ''}; a .wasm starts ${hex(MAGIC)})`);
}

async function compile(url, bytes) {
  try {
    return await WebAssembly.compile(bytes);
  } catch (error) {
    throw new WasmLoadError(url, `it does not compile (${error.message})`, error);
  }
}

async function readInNode(url) {
  const { readFile } = await import(/* webpackIgnore: true */ /* @vite-ignore */ NODE_FS);
  try {
    return new Uint8Array(await readFile(url));
  } catch (error) {
    throw new WasmLoadError(url, error.code === 'ENOENT' ? 'no such file' : error.message, error);
  }
}

async function fetchOnce(url) {
  let response;
  try {
    response = await fetch(url, { credentials: 'same-origin' });
  } catch (error) {
    throw new WasmLoadError(url, `the request failed (${error.message})`, error);
  }
  if (!response.ok) {
    throw new WasmLoadError(url, `the server answered ${response.status} ${response.statusText}`.trim());
  }
  return response;
}

/**
 * The compiled module of the .wasm at `url`, fetched once (read from disk when isNode).
 * @param {URL} url
 * @param {{isNode: boolean}} where
 * @returns {Promise<WebAssembly.Module>}
 */
export async function compileWasm(url, { isNode }) {
  if (isNode) {
    const bytes = await readInNode(url);
    checkMagic(url, bytes);
    return compile(url, bytes);
  }
  const response = await fetchOnce(url);
  const type = (response.headers.get('Content-Type') ?? '').split(';')[0].trim().toLowerCase();
  // Streaming compilation needs application/wasm; any other type is read whole and checked.
  if (type === 'application/wasm' && typeof WebAssembly.compileStreaming === 'function') {
    try {
      return await WebAssembly.compileStreaming(response);
    } catch (error) {
      throw new WasmLoadError(url, `it does not compile (${error.message})`, error);
    }
  }
  const bytes = new Uint8Array(await response.arrayBuffer());
  checkMagic(url, bytes, type);
  return compile(url, bytes);
}
