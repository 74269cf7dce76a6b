#!/usr/bin/env node
// fedleaf-admin — the operator's CLI for a fedleaf task repository (src/node/admin_cli.js holds
// its table of commands and flags, from which --help is made).
//
//   fedleaf-admin create --server https://fl.example.org --admin-token-file ~/.fedleaf-admin \
//        --plan plan.json --spec spec.json --token-out spam.client-token
//   fedleaf-admin ls
//   fedleaf-admin status spam --watch
//   fedleaf-admin model spam --out spam.safetensors --tfjs spam-tfjs/
//
// Exit status: 0 done; 1 the server refused (its message names the rule) or was not reached; 2
// bad flags, files or configuration (nothing sent).
import { runAdmin } from '../src/node/admin_cli.js';

process.exitCode = await runAdmin(process.argv.slice(2));
