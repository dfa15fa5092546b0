#!/usr/bin/env node
// Generates proto/generated/ from the .proto sources with protoc + ts-proto.
//
//   node proto/scripts/generate.mjs           regenerate proto/generated/ in place
//   node proto/scripts/generate.mjs --check   regenerate into a temp dir, exit 1 if proto/generated differs
//
// protoc comes from $PROTOC or PATH (Debian: apt-get install -y protobuf-compiler). Exit code 3
// means protoc (or the ts-proto plugin) is missing, so callers can tell "cannot check" from "differs".
// Options are explained in docs/proto.md; changing them changes the engine-facing types.
import { spawnSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const protoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const generatedDir = join(protoRoot, 'generated');

/** Proto sources, relative to protoRoot (also the import root). */
export const PROTO_FILES = [
  'inference/model_config.proto',
  'inference/grpc_service.proto',
  'grpc/health/v1/health.proto',
  'hloserve/control.proto',
];

/** ts-proto options (see docs/proto.md for the reasons). */
export const TS_PROTO_OPTIONS = [
  'outputServices=grpc-js', // grpc-js service definitions + generic client constructors
  'esModuleInterop=true',
  'importSuffix=.js', // ESM + NodeNext: relative imports need the .js suffix
  'forceLong=number', // int64/uint64 -> number (throws on decode beyond 2^53)...
  'useJsTypeOverride=true', // ...except fields marked [jstype = JS_STRING]: decimal strings, lossless
  'oneof=unions-value', // { $case: 'boolParam', value: true }
  'useMapType=true', // map<K,V> -> Map<K,V> (no prototype keys such as "__proto__")
  'useExactTypes=false', // fromPartial(DeepPartial<T>) without the Exact<> gymnastics
  'exportCommonSymbols=false', // no duplicate DeepPartial/protobufPackage exports across files
  // TS keys camelCase; toJSON/fromJSON use the proto field names with defaults printed (max_batch_size: 0),
  // the JSON form of Triton's HTTP /config and /stats and of tritonclient's load_model(config=...)
  'snakeToCamel=keys',
  'protoJsonFormat=false',
  'emitDefaultValues=json-methods',
  'annotateFilesWithVersion=false', // output independent of the protoc version => stable --check
  // env stays "both": bytes are Uint8Array and decode returns views (env=node would Buffer.from-copy).
];

function findPlugin() {
  for (let dir = protoRoot; ; dir = dirname(dir)) {
    const p = join(dir, 'node_modules', '.bin', 'protoc-gen-ts_proto');
    if (existsSync(p)) return p;
    if (dirname(dir) === dir) return undefined;
  }
}

export function findProtoc() {
  const candidate = process.env.PROTOC || 'protoc';
  const r = spawnSync(candidate, ['--version'], { encoding: 'utf8' });
  if (r.error || r.status !== 0) return undefined;
  return { path: candidate, version: r.stdout.trim() };
}

function generate(outDir) {
  const protoc = findProtoc();
  if (!protoc) {
    console.error(
      'generate: protoc not found (set $PROTOC or install it: apt-get update && apt-get install -y protobuf-compiler)',
    );
    process.exit(3);
  }
  const plugin = findPlugin();
  if (!plugin) {
    console.error('generate: node_modules/.bin/protoc-gen-ts_proto not found; run npm install');
    process.exit(3);
  }
  mkdirSync(outDir, { recursive: true });
  const args = [
    `-I${protoRoot}`,
    `--plugin=protoc-gen-ts_proto=${plugin}`,
    `--ts_proto_out=${outDir}`,
    `--ts_proto_opt=${TS_PROTO_OPTIONS.join(',')}`,
    ...PROTO_FILES.map((f) => join(protoRoot, f)),
  ];
  const r = spawnSync(protoc.path, args, { encoding: 'utf8', cwd: protoRoot });
  if (r.status !== 0) {
    console.error(`generate: ${protoc.path} failed (${protoc.version}):\n${r.stderr || r.error}`);
    process.exit(1);
  }
  return protoc;
}

function listFiles(dir, base = dir, out = []) {
  if (!existsSync(dir)) return out;
  for (const name of readdirSync(dir).sort()) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) listFiles(p, base, out);
    else out.push(relative(base, p));
  }
  return out;
}

function firstDifferentLine(a, b) {
  const la = a.split('\n');
  const lb = b.split('\n');
  for (let i = 0; i < Math.max(la.length, lb.length); i++) {
    if (la[i] !== lb[i]) return `line ${i + 1}:\n  committed: ${la[i] ?? '<eof>'}\n  generated: ${lb[i] ?? '<eof>'}`;
  }
  return '';
}

function check() {
  const tmp = mkdtempSync(join(tmpdir(), 'hloserve-proto-'));
  try {
    const protoc = generate(tmp);
    const want = listFiles(tmp);
    const have = listFiles(generatedDir);
    const problems = [];
    for (const f of want) {
      if (!have.includes(f)) problems.push(`missing: generated/${f}`);
      else {
        const a = readFileSync(join(generatedDir, f), 'utf8');
        const b = readFileSync(join(tmp, f), 'utf8');
        if (a !== b) problems.push(`differs: generated/${f} ${firstDifferentLine(a, b)}`);
      }
    }
    for (const f of have) if (!want.includes(f)) problems.push(`stale: generated/${f}`);
    if (problems.length) {
      console.error(`proto/generated is out of date (${protoc.version}):\n${problems.join('\n')}`);
      console.error('run: npm run generate -w @hloserve/proto');
      process.exit(1);
    }
    console.log(`proto/generated is up to date (${want.length} files, ${protoc.version})`);
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  if (process.argv.includes('--check')) check();
  else {
    const tmp = mkdtempSync(join(tmpdir(), 'hloserve-proto-'));
    try {
      const protoc = generate(tmp);
      rmSync(generatedDir, { recursive: true, force: true });
      mkdirSync(generatedDir, { recursive: true });
      for (const f of listFiles(tmp)) {
        mkdirSync(dirname(join(generatedDir, f)), { recursive: true });
        writeFileSync(join(generatedDir, f), readFileSync(join(tmp, f)));
      }
      console.log(`generated ${listFiles(generatedDir).length} files into proto/generated (${protoc.version})`);
    } finally {
      rmSync(tmp, { recursive: true, force: true });
    }
  }
}
