// Where fedleaf-admin finds the task repository's URL and the admin token. Each of the two is
// taken from the first of these that gives it:
//   1. flags: --server URL, --admin-token-file FILE (the file holds the token);
//   2. the environment: FEDLEAF_SERVER, FEDLEAF_ADMIN_TOKEN (the token itself);
//   3. the config file: $FEDLEAF_ADMIN_CONFIG if set (it must then exist), else
//      $XDG_CONFIG_HOME/fedleaf/admin.json (default ~/.config/fedleaf/admin.json), a JSON object
//      {"server": URL, "admin_token_file": FILE} or {"server": URL, "admin_token": TOKEN}
//      (a relative admin_token_file is read from the config file's folder).
// The config file is read only when a flag or variable leaves something to find. It may not be
// writable by group or others (whoever could edit it could send the token to a server of theirs),
// and one holding "admin_token" may not be readable by them either (chmod 600), as ssh refuses a
// private key others can read. A token is what a Bearer header carries: 1 to 4096 visible ASCII
// characters, surrounding whitespace ignored; the messages name where a token came from, never
// the token (fetch's own error for a bad header value would print it, hence the check here).
import { closeSync, openSync, readFileSync, readSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import path from 'node:path';

import { AdminUsageError } from './admin_usage_error.js';
import { serverProblem } from './leaf_cli.js';

const CONFIG_KEYS = ['server', 'admin_token_file', 'admin_token'];
const MAX_TOKEN_FILE_BYTES = 8192;

/** The config file fedleaf-admin reads: {file, explicit} (explicit: named by FEDLEAF_ADMIN_CONFIG). */
export function configFile(env = process.env) {
  if (env.FEDLEAF_ADMIN_CONFIG) return { file: env.FEDLEAF_ADMIN_CONFIG, explicit: true };
  const base = env.XDG_CONFIG_HOME || path.join(env.HOME || homedir(), '.config');
  return { file: path.join(base, 'fedleaf', 'admin.json'), explicit: false };
}

function checkedToken(text, source) {
  const token = text.trim();
  if (!token) throw new AdminUsageError(`${source} holds no admin token`);
  if (token.length > 4096 || !/^[\x21-\x7e]+$/.test(token)) {
    throw new AdminUsageError(`the admin token in ${source} is not 1 to 4096 visible ASCII characters (what a ` +
      'Bearer header carries)');
  }
  return token;
}

// The token in `file`, read with a bound (a pipe such as <(pass show …) works).
function tokenFromFile(file, source) {
  let fd;
  try {
    fd = openSync(file, 'r');
    const buffer = Buffer.alloc(MAX_TOKEN_FILE_BYTES + 1);
    let length = 0;
    for (let n; length <= MAX_TOKEN_FILE_BYTES && (n = readSync(fd, buffer, length, buffer.length - length, null)) > 0;) {
      length += n;
    }
    if (length > MAX_TOKEN_FILE_BYTES) throw new AdminUsageError(`${source}: more than ${MAX_TOKEN_FILE_BYTES} bytes`);
    return checkedToken(buffer.subarray(0, length).toString('latin1'), source);
  } catch (error) {
    if (error instanceof AdminUsageError) throw error;
    throw new AdminUsageError(`cannot read ${source}: ${error.code ?? error.message}`);
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

function checkedServer(server, source) {
  if (serverProblem(server)) throw new AdminUsageError(`${source} must be an http: or https: URL, got '${server}'`);
  return server;
}

/**
 * The config file's settings, or {} when the default file does not exist. Throws an
 * AdminUsageError naming the file for JSON it cannot read, an unknown key, or a mode that lets
 * others change it (or read the token it holds).
 * @returns {{server?: string, admin_token_file?: string, admin_token?: string, file: string}}
 */
export function readConfig(env = process.env) {
  const { file, explicit } = configFile(env);
  let stat;
  try {
    stat = statSync(file);
  } catch (error) {
    if (error.code === 'ENOENT' && !explicit) return { file };
    throw new AdminUsageError(`cannot read the config file ${file} (FEDLEAF_ADMIN_CONFIG): ${error.code ?? error.message}`);
  }
  const mode = (stat.mode & 0o777).toString(8).padStart(4, '0');
  if (stat.mode & 0o022) {
    throw new AdminUsageError(`the config file ${file} is writable by group or others (mode ${mode}): chmod go-w ${file}`);
  }
  let config;
  try {
    config = JSON.parse(readFileSync(file, 'utf8'));
  } catch (error) {
    // Not the parser's message: newer V8s quote the text around the error, which may be the token.
    const at = /position \d+/.exec(error.message);
    throw new AdminUsageError(`the config file ${file} is not JSON${at ? ` (${at[0]})` : ''}`);
  }
  if (config === null || typeof config !== 'object' || Array.isArray(config)) {
    throw new AdminUsageError(`the config file ${file} must hold a JSON object`);
  }
  for (const [key, value] of Object.entries(config)) {
    if (!CONFIG_KEYS.includes(key)) {
      throw new AdminUsageError(`the config file ${file}: unknown key '${key}' (keys: ${CONFIG_KEYS.join(', ')})`);
    }
    if (typeof value !== 'string') throw new AdminUsageError(`the config file ${file}: '${key}' must be a string`);
  }
  if (config.admin_token !== undefined && config.admin_token_file !== undefined) {
    throw new AdminUsageError(`the config file ${file} gives both admin_token and admin_token_file: keep one`);
  }
  if (config.admin_token !== undefined && (stat.mode & 0o077)) {
    throw new AdminUsageError(`the config file ${file} holds admin_token and is readable by group or others ` +
      `(mode ${mode}): chmod 600 ${file}`);
  }
  return { ...config, file };
}

/**
 * The server URL and admin token a command uses, each from the first source that gives it
 * (flags, environment, config file), with where each came from.
 * @param {{server?: string, adminTokenFile?: string}} flags
 * @param {{token: boolean}} needs  whether the command needs the admin token
 * @returns {{server: string, token?: string, sources: {server: string, token?: string}}}
 */
export function resolveConnection(flags, { token: needsToken }, env = process.env) {
  let server;
  let token;
  const sources = {};
  if (flags.server !== undefined) [server, sources.server] = [checkedServer(flags.server, '--server'), '--server'];
  else if (env.FEDLEAF_SERVER) [server, sources.server] = [checkedServer(env.FEDLEAF_SERVER, 'FEDLEAF_SERVER'), 'FEDLEAF_SERVER'];
  if (needsToken) {
    if (flags.adminTokenFile !== undefined) {
      sources.token = `--admin-token-file ${flags.adminTokenFile}`;
      token = tokenFromFile(flags.adminTokenFile, sources.token);
    } else if (env.FEDLEAF_ADMIN_TOKEN) {
      sources.token = 'FEDLEAF_ADMIN_TOKEN';
      token = checkedToken(env.FEDLEAF_ADMIN_TOKEN, sources.token);
    }
  }
  if (server === undefined || (needsToken && token === undefined)) {
    const config = readConfig(env);
    if (server === undefined && config.server !== undefined) {
      sources.server = `"server" in ${config.file}`;
      server = checkedServer(config.server, sources.server);
    }
    if (needsToken && token === undefined) {
      if (config.admin_token !== undefined) {
        sources.token = `"admin_token" in ${config.file}`;
        token = checkedToken(config.admin_token, sources.token);
      } else if (config.admin_token_file !== undefined) {
        const file = path.resolve(path.dirname(config.file), config.admin_token_file);
        sources.token = `${file} ("admin_token_file" in ${config.file})`;
        token = tokenFromFile(file, sources.token);
      }
    }
    if (server === undefined) {
      throw new AdminUsageError(`no server: give --server URL, set FEDLEAF_SERVER, or put "server" in ${config.file}`);
    }
    if (needsToken && token === undefined) {
      throw new AdminUsageError('no admin token: give --admin-token-file FILE, set FEDLEAF_ADMIN_TOKEN, or put ' +
        `"admin_token_file" (or "admin_token", mode 600) in ${config.file}`);
    }
  }
  return needsToken ? { server, token, sources } : { server, sources };
}
