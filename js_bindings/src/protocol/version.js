// The fedleaf version: CMake's project(VERSION), written here and into package.json by
// scripts/stamp_version.mjs; tests/package/version.test.mjs fails when any of them differ.

/** The release, as CMakeLists.txt, package.json and the wasm module's version() say. */
export const VERSION = '0.2.0';

/** What every request sends as Fedleaf-Version: MAJOR.MINOR (a server takes any minor of its major). */
export const PROTOCOL_VERSION = VERSION.split('.').slice(0, 2).join('.');
