#!/usr/bin/env node
/** The standalone gateway's entry point (gateway-cli.ts says what it takes). */
import { runGatewayCli } from './gateway-cli.js';

runGatewayCli(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err: Error) => {
    process.stderr.write(`hloserve-gateway: ${err.message}\n`);
    process.exit(1);
  },
);
